import { NotServingError, QuestionWithdrawnError, UpstreamFailedError } from '../errors.js';
import { requestErrorToWire } from '../rpc/errorsToWire.js';
import type { Logger } from '../logger.js';
import { Cancellation, type CancelSignal } from '../rpc/cancellation.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';
import { CAPABILITY_FOR } from '../host/hostSession.js';
import { RELATED_TASK, TERMINAL_STATUSES } from '../protocol/taskMessages.js';
import { MAX_INPUT_REQUESTS } from './fulfilInput.js';
import type { TaskSend } from './taskBridge.js';
import { TASK_INPUT_DEFAULTS, type TaskInput } from './taskInput.js';

/**
 * Questions of 2026-07-28 servers' tasks, for a 2026-07-28 host. Such a server lists what its
 * task needs in `tasks/get` (`inputRequests`, under keys of its own) and takes the answers with
 * `tasks/update`. Passed through, those questions would skip policy and the audit trail and would
 * not say which server asks. So the gateway asks each one itself, as it does for every other
 * pairing of eras: the question is routed through the pipeline as a request to the host, tied to
 * the task's handle, and arrives in the connection's TaskInput, which shows it under a key of the
 * gateway's (as it does a 2025-11-25 server's task questions). The host's `tasks/update` answers
 * it there; the answer, once back through the pipeline, goes on to the server's `tasks/update`
 * under the server's own key. A question the pipeline refuses (policy denies it, the host cannot
 * be asked it, its time runs out) cannot be answered: the task is cancelled upstream, and the host
 * sees it failed with that error.
 *
 * A server's listing is complete (the extension has `inputRequests` hold every request still
 * outstanding, and a task that is not `input_required` has none), so a question the server stops
 * listing is one it no longer wants: the gateway withdraws it (its way to the host is cancelled,
 * the host's next `tasks/get` no longer shows it, the audit trail records it cancelled), and a
 * host answer that comes for it later is ignored, as a server ignores answers to keys it no
 * longer asks. Two things are not withdrawals: a question answered upstream that a lagging
 * listing still shows (not asked again), and a listing older than the question: one whose
 * request left before the listing that first showed the question came back (two polls crossing),
 * or one whose `lastUpdatedAt` is earlier than that of the state that first showed it (a status
 * pushed on one stream arriving after a poll answered on another had overtaken it).
 *
 * Bounded: the questions of at most TaskInput's `maxTasks` tasks are open at once, at most
 * MAX_INPUT_REQUESTS per listing; what a task remembers is dropped when it ends, and at most
 * MAX_RELAYED_TASKS tasks are remembered (the oldest forgotten first).
 */

/**
 * Tasks remembered per task memory (a connection's, or a principal's stateless requests'):
 * their answered keys, a failure; the oldest go first.
 */
export const MAX_RELAYED_TASKS = 1024;
/** Server keys remembered as answered per task, so a lagging listing does not ask twice. */
const MAX_ANSWERED_PER_TASK = 256;

/** One question on its way to the host, or answered there and on its way back. */
interface Relayed {
  readonly signal: Cancellation;
  readonly outcome: Promise<Outcome>;
  /** The number of the listing that first showed it (see TaskRelay's `listings`). */
  readonly since: number;
  /** The `lastUpdatedAt` (ms since the epoch) of the state that first showed it; NaN if none. */
  readonly updated: number;
  /** Set when its server stopped listing it: its end is not a refusal, its answer goes nowhere. */
  withdrawn: boolean;
}

class RelayTask {
  /** Open questions by the server's key. */
  readonly open = new Map<string, Relayed>();
  /** The gateway's key → the server's. */
  readonly serverKey = new Map<string, string>();
  /** Server keys answered (or being answered) upstream. */
  readonly answered = new Set<string>();
  /** The error the task failed with at the gateway (a question was refused), as the host sees it. */
  failure: Params | undefined;
  /** Settles once the server was told to cancel the task, after a failure. */
  cancelled: Promise<unknown> | undefined;
  /** Let go of (the task ended, or was cancelled): late refusals change nothing. */
  ended = false;
}

/** What the relay needs to know of one host request about a task. */
export interface RelayContext {
  /** The handle the host knows the task by; the server's own id and name. */
  readonly handle: string;
  readonly server: string;
  readonly taskId: string;
  /** Sends a request about the task upstream, through the pipeline. */
  readonly send: TaskSend;
  /** Routes a question to the host through the pipeline, `meta` tying it to the task. */
  readonly ask: (
    method: string,
    params: Params | undefined,
    meta: Params,
    signal: Cancellation,
  ) => Promise<Outcome>;
  /** What the host's request declared it can be asked (undefined for a pushed status). */
  readonly capabilities: Params | undefined;
  /**
   * For a state the gateway asked for (`tasks/get`): `TaskRelay.listed()` just before it was
   * sent, so a listing older than a question does not withdraw it. Undefined for a pushed state,
   * which is the newest the gateway has.
   */
  readonly sentAfter?: number;
  /** The host request being served; its end stops the wait for questions to arrive. */
  readonly signal: CancelSignal;
}

export class TaskRelay {
  private readonly tasks = new Map<string, RelayTask>();
  /** Listings seen so far (each `view`), numbering them in the order they came back. */
  private listings = 0;

  constructor(
    private readonly input: TaskInput,
    private readonly logger: Logger,
    private readonly arrivalMs: number = TASK_INPUT_DEFAULTS.firstQuestionMs,
  ) {}

  /**
   * The server's task state `task` (a `tasks/get` answer, or a pushed status) as the host sees
   * it: under the handle, its questions asked by the gateway and shown under the gateway's keys.
   */
  async view(context: RelayContext, task: Params): Promise<Params> {
    const { handle } = context;
    const { inputRequests, ...fields } = task;
    const shown: Params = { ...fields, taskId: handle };
    const status = task.status;
    const listing = ++this.listings;
    const updated = typeof task.lastUpdatedAt === 'string' ? Date.parse(task.lastUpdatedAt) : Number.NaN;
    // A task that is not input_required has no outstanding question; a terminal one is let go
    // of below, its questions with it.
    const listed = status === 'input_required' ? keysOf(inputRequests) : [];
    if (typeof status !== 'string' || !TERMINAL_STATUSES.has(status))
      this.withdrawUnlisted(context, new Set(listed), { listing: context.sentAfter ?? listing, updated });
    if (status === 'input_required') await this.askNew(context, inputRequests, { listing, updated });
    const relay = this.tasks.get(handle);
    if (relay?.failure !== undefined) {
      // The server hears of it before the host does.
      await relay.cancelled;
      const { result: _result, error: _error, ...rest } = shown;
      return { ...rest, status: 'failed', error: relay.failure };
    }
    if (typeof status === 'string' && TERMINAL_STATUSES.has(status)) {
      this.release(handle, new QuestionWithdrawnError(context.server, `its task was ${status}`));
      return shown;
    }
    if (status === 'input_required') shown.inputRequests = this.input.inputRequests(handle);
    return shown;
  }

  /**
   * The host's `tasks/update`: its answers, checked by TaskInput (a key the gateway never showed
   * is a -32602, and nothing is answered), as the server's `inputResponses` under its own keys;
   * undefined when nothing is to be sent on (a repeated answer, a question refused on its way).
   */
  async update(handle: string, inputResponses: unknown): Promise<Params | undefined> {
    const { now, withdrawn } = this.input.answer(handle, inputResponses);
    if (withdrawn.length > 0)
      this.logger.info(
        `ignored the host's answers under ${withdrawn.join(', ')}: those questions were withdrawn`,
      );
    const relay = this.tasks.get(handle);
    if (relay === undefined) return undefined;
    const responses: Params = {};
    for (const key of now) {
      const serverKey = relay.serverKey.get(key);
      const question = serverKey === undefined ? undefined : relay.open.get(serverKey);
      if (serverKey === undefined || question === undefined) continue;
      relay.serverKey.delete(key);
      // The answer comes back through the pipeline (audit records it there).
      const outcome = await question.outcome.catch(() => undefined);
      // Withdrawn on the way back: the server no longer wants it.
      if (question.withdrawn) {
        this.logger.info(
          `dropped the host's answer under ${key}: its server withdrew that question meanwhile`,
        );
        continue;
      }
      relay.open.delete(serverKey);
      if (outcome === undefined) continue;
      if (relay.answered.size >= MAX_ANSWERED_PER_TASK)
        relay.answered.delete(relay.answered.values().next().value!);
      relay.answered.add(serverKey);
      responses[serverKey] = outcome.result;
    }
    if (relay.failure !== undefined || Object.keys(responses).length === 0) return undefined;
    return responses;
  }

  /** Lets go of the task `handle`: its questions are withdrawn and what it held is forgotten. */
  release(handle: string, reason: Error): void {
    const relay = this.tasks.get(handle);
    if (relay !== undefined) {
      relay.ended = true;
      this.tasks.delete(handle);
      for (const question of relay.open.values()) question.signal.cancel(reason);
    }
    this.input.release(handle, reason);
  }

  /** The number of the newest listing seen: a `tasks/get` notes it before it is sent. */
  listed(): number {
    return this.listings;
  }

  /** Lets go of every task (the connection ends). */
  close(reason: Error): void {
    for (const handle of [...this.tasks.keys()]) this.release(handle, reason);
  }

  /**
   * Withdraws the open questions of the task that `listed` (the server's complete listing) leaves
   * out, except those newer than the listing: shown first by a listing numbered above
   * `asOf.listing`, or by a state the server updated after this one (`asOf.updated`; a state
   * without the time is judged by its number alone).
   */
  private withdrawUnlisted(context: RelayContext, listed: ReadonlySet<string>, asOf: Listing): void {
    const relay = this.tasks.get(context.handle);
    if (relay === undefined || relay.failure !== undefined) return;
    for (const [serverKey, question] of relay.open) {
      if (listed.has(serverKey) || question.since > asOf.listing || asOf.updated < question.updated) continue;
      question.withdrawn = true;
      relay.open.delete(serverKey);
      for (const [key, to] of relay.serverKey) if (to === serverKey) relay.serverKey.delete(key);
      this.logger.info(
        `withdrew question ${serverKey} of task ${context.taskId} of ${context.server} from the host: the server no longer lists it`,
      );
      question.signal.cancel(new QuestionWithdrawnError(context.server, 'its task no longer lists it'));
    }
  }

  /** Routes each question the server lists and the gateway has not asked yet to the host. */
  private async askNew(context: RelayContext, requests: unknown, listing: Listing): Promise<void> {
    const { handle, server } = context;
    const entries = entriesOf(requests);
    if (entries.length > MAX_INPUT_REQUESTS)
      throw new UpstreamFailedError(server, `asked for ${entries.length} inputs at once for one task`);
    const known = this.tasks.get(handle);
    if (known?.failure !== undefined) return;
    const fresh = entries.filter(
      ([key]) => known?.open.has(key) !== true && known?.answered.has(key) !== true,
    );
    if (fresh.length === 0) return;
    for (const [, request] of fresh) {
      const method = (request as Params | null)?.method;
      if (typeof method !== 'string' || !CAPABILITY_FOR.has(method))
        throw new UpstreamFailedError(
          server,
          `asked for task input of an unknown kind (${String(method).slice(0, 100)})`,
        );
    }
    // Throws when the questions of too many tasks are open already; nothing is asked then.
    this.input.track(handle, context.capabilities);
    const relay = known ?? this.remember(handle);
    const arrivals: Promise<void>[] = [];
    for (const [serverKey, request] of fresh) {
      const { method, params } = request as Params;
      const { _meta: own, ...rest } = (params ?? {}) as Params;
      const signal = new Cancellation();
      let arrived!: () => void;
      arrivals.push(new Promise<void>((resolve) => (arrived = resolve)));
      // Expected before it is sent: with no stage that waits, it arrives before `ask` returns.
      this.input.expect(handle, signal, (key) => {
        relay.serverKey.set(key, serverKey);
        arrived();
      });
      const outcome = context.ask(
        method as string,
        rest,
        { ...(own as Params | undefined), [RELATED_TASK]: { taskId: handle } },
        signal,
      );
      const question: Relayed = {
        signal,
        outcome,
        since: listing.listing,
        updated: listing.updated,
        withdrawn: false,
      };
      relay.open.set(serverKey, question);
      outcome.catch((error: unknown) => {
        this.input.unexpect(handle, signal);
        arrived();
        if (!question.withdrawn) this.refused(context, relay, error);
      });
    }
    // The questions pass the pipeline before they arrive; the host is answered once they have
    // (or were refused on the way), or after a bound, when the next poll shows them.
    await within(Promise.all(arrivals), this.arrivalMs, context.signal);
  }

  /**
   * A question of the task was refused on its way to the host or back: the server cannot be
   * answered, so its task is cancelled, and the host sees it failed with the refusal.
   */
  private refused(context: RelayContext, relay: RelayTask, error: unknown): void {
    if (relay.ended || relay.failure !== undefined) return;
    relay.failure = { ...requestErrorToWire(error, this.logger) };
    this.logger.info(
      `cancelled task ${context.taskId} of ${context.server}: a question it asked was refused (${String(relay.failure.message)})`,
    );
    const reason = new QuestionWithdrawnError(
      context.server,
      'its task was cancelled: another of its questions was refused',
    );
    for (const question of relay.open.values()) question.signal.cancel(reason);
    this.input.release(context.handle, reason);
    relay.cancelled = context
      .send('tasks/cancel', { taskId: context.taskId }, new Cancellation())
      .catch((cause: unknown) =>
        this.logger.warn(
          `could not cancel task ${context.taskId} of ${context.server}: ${cause instanceof Error ? cause.message : String(cause)}`,
        ),
      );
  }

  private remember(handle: string): RelayTask {
    if (this.tasks.size >= MAX_RELAYED_TASKS) {
      const oldest = this.tasks.keys().next().value!;
      this.release(oldest, new NotServingError('mcp-warden follows too many tasks; the oldest was let go'));
    }
    const relay = new RelayTask();
    this.tasks.set(handle, relay);
    return relay;
  }
}

/** Which state of a task a listing was: its number in arrival order, and the server's time of it. */
interface Listing {
  readonly listing: number;
  /** Its `lastUpdatedAt` in ms since the epoch; NaN when it had none (NaN compares false). */
  readonly updated: number;
}

/** The entries of an `inputRequests` object; none for anything else. */
function entriesOf(requests: unknown): [string, unknown][] {
  return typeof requests === 'object' && requests !== null && !Array.isArray(requests)
    ? Object.entries(requests as Params)
    : [];
}

function keysOf(requests: unknown): string[] {
  return entriesOf(requests).map(([key]) => key);
}

/** Resolves when `promise` settles, after `ms`, or when `signal` is cancelled, whichever is first. */
function within(promise: Promise<unknown>, ms: number, signal: CancelSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      stop();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = signal.onCancel(done);
    promise.then(done, done);
  });
}
