import { DEFAULT_POLL_MS, MAX_POLL_MS, MIN_POLL_MS } from '../../core/pipeline/drive.js';
import type { MessageKind } from '../../core/pipeline/types.js';
import type { Params } from '../../core/protocol/jsonRpc.js';
import { TERMINAL_STATUSES, taskOf } from '../../core/protocol/taskMessages.js';
import { Cancellation } from '../../core/rpc/cancellation.js';
import type { Outcome } from '../../core/rpc/outcome.js';

/**
 * The gateway's own `tasks/get` never reached the server: its audit record could not be written
 * first (`audit.onFailure: block`). Nothing is known of the task then, so it keeps the turn and
 * is asked again at the next interval, as when its server is too busy to answer in time.
 */
export class PollNotSentError extends Error {
  override readonly name = 'PollNotSentError';
}

/** The requests about a task once it exists: they never take a turn (see `TaskTurn`). */
export const TASK_KINDS: ReadonlySet<MessageKind> = new Set([
  'tasks/get',
  'tasks/result',
  'tasks/cancel',
  'tasks/list',
  'tasks/update',
]);

export interface TaskTurnOptions {
  /** The server's id of the task. */
  readonly taskId: string;
  /** The task as the call that created it answered (its poll interval and time to live). */
  readonly created: Params;
  /** Asks the server where the task stands (`tasks/get`), ended early by `signal`. */
  readonly ask: (signal: Cancellation) => Promise<Outcome>;
  /** The longest one `ask` may take before it is given up and asked again later. */
  readonly askMs: number;
  /** Told once, when the task no longer holds the turn, with why. */
  readonly onEnd: (why: string, gaveUp: boolean) => void;
}

/**
 * The turn a task holds after the call that created it has been answered. The server runs the
 * task in the background, and it writes as any call does, so the turn is the task's until it
 * changes no more: a terminal status seen in a request about it (the host's `tasks/get`,
 * `tasks/cancel`, or the answer to its `tasks/result`), or in the gateway's own `tasks/get`, which
 * asks at the task's poll interval whether the host asks or not. The turn is also given up when
 * the server cannot say (an error answer: the task is unknown, or its process is gone) and when
 * the task's time to live runs out, after which the server may forget it.
 *
 * The host's requests about the task never wait for the turn: they are about the work that holds
 * it, and waiting would be waiting for themselves.
 */
export class TaskTurn {
  #ended = false;
  #poll: NodeJS.Timeout | undefined;
  #asking: Cancellation | undefined;
  readonly #lifetime: NodeJS.Timeout | undefined;
  #pollMs: number;

  constructor(private readonly options: TaskTurnOptions) {
    const task = taskOf({ task: options.created });
    this.#pollMs = pollMsOf(task?.pollInterval);
    const ttl = options.created.ttl ?? options.created.ttlMs;
    // A lifetime of null is unlimited: the task holds the turn while its server says it works.
    if (typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0) {
      this.#lifetime = setTimeout(() => this.#end('its time to live ran out', true), ttl);
      this.#lifetime.unref();
    }
    this.#schedule();
  }

  /** A request about the task was answered: the turn ends when that shows the task has. */
  saw(kind: MessageKind, outcome: Outcome): void {
    if (this.#ended) return;
    if (kind === 'tasks/result') return this.#end('its result was fetched', false);
    if (kind !== 'tasks/get' && kind !== 'tasks/cancel') return;
    const task = taskOf(outcome.result);
    if (task === undefined) return;
    if (TERMINAL_STATUSES.has(task.status)) return this.#end(`it was ${task.status}`, false);
    // The host is polling: the gateway's own question can wait for the next interval.
    this.#suggested(task.pollInterval);
    this.#schedule();
  }

  #schedule(): void {
    clearTimeout(this.#poll);
    if (this.#asking !== undefined) return;
    this.#poll = setTimeout(() => void this.#askNow(), this.#pollMs);
    this.#poll.unref();
  }

  async #askNow(): Promise<void> {
    const asking = (this.#asking = new Cancellation());
    const late = setTimeout(
      () => asking.cancel(new Error(`tasks/get took longer than ${this.options.askMs} ms`)),
      this.options.askMs,
    );
    let ended: { why: string; gaveUp: boolean } | undefined;
    try {
      const task = taskOf((await this.options.ask(asking)).result);
      if (task === undefined) ended = { why: 'its server answered tasks/get without a task', gaveUp: true };
      else if (TERMINAL_STATUSES.has(task.status)) ended = { why: `it was ${task.status}`, gaveUp: false };
      else this.#suggested(task.pollInterval);
    } catch (error) {
      // A server too busy to answer in time still runs the task; one that answers with an
      // error does not know it any more (or is gone), so nothing of it runs.
      if (!asking.cancelled && !(error instanceof PollNotSentError))
        ended = { why: `its server could not say how it stands: ${(error as Error).message}`, gaveUp: true };
    } finally {
      clearTimeout(late);
      this.#asking = undefined;
    }
    if (ended !== undefined) this.#end(ended.why, ended.gaveUp);
    else if (!this.#ended) this.#schedule();
  }

  /** The server suggests how often to ask (an answer that does not say keeps the last suggestion). */
  #suggested(pollInterval: number | undefined): void {
    if (pollInterval !== undefined) this.#pollMs = pollMsOf(pollInterval);
  }

  #end(why: string, gaveUp: boolean): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#poll);
    clearTimeout(this.#lifetime);
    this.#asking?.cancel(new Error('the task no longer holds the turn'));
    this.options.onEnd(why, gaveUp);
  }
}

/** The server's suggested interval, within the bounds the gateway polls any task at. */
function pollMsOf(suggested: number | undefined): number {
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, suggested ?? DEFAULT_POLL_MS));
}
