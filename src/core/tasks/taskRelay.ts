import { NotServingError, QuestionWithdrawnError } from '../errors.js';
import { requestErrorToWire } from '../rpc/errorsToWire.js';
import type { Logger } from '../logger.js';
import { Cancellation, type CancelSignal } from '../rpc/cancellation.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';
import { RELATED_TASK, TERMINAL_STATUSES } from '../protocol/taskMessages.js';
import { ListedQuestions, type ListedQuestion, type Listing } from './listedQuestions.js';
import type { TaskSend } from './taskBridge.js';
import { TASK_INPUT_DEFAULTS, type TaskInput } from './taskInput.js';

/**
 * Questions of 2026-07-28 servers' tasks, for a 2026-07-28 host. The gateway asks each question
 * the server lists itself (listedQuestions.ts): routed through the pipeline as a request to the
 * host, tied to the task's handle, it arrives in the connection's TaskInput, which shows it under
 * a key of the gateway's (as it does a 2025-11-25 server's task questions). The host's
 * `tasks/update` answers it there; the answer, once back through the pipeline, goes on to the
 * server's `tasks/update` under the server's own key. A question the pipeline refuses (policy
 * denies it, the host cannot be asked it, its time runs out) cannot be answered: the task is
 * cancelled upstream, and the host sees it failed with that error. A question withdrawn is gone
 * from the host's next `tasks/get`, and its late answer is ignored.
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
class RelayTask {
  readonly questions: ListedQuestions;
  /** The gateway's key → the server's. */
  readonly serverKey = new Map<string, string>();
  /** The error the task failed with at the gateway (a question was refused), as the host sees it. */
  failure: Params | undefined;
  /** Settles once the server was told to cancel the task, after a failure. */
  cancelled: Promise<unknown> | undefined;
  /** Let go of (the task ended, or was cancelled): late refusals change nothing. */
  ended = false;

  constructor(context: RelayContext, logger: Logger) {
    this.questions = new ListedQuestions({ server: context.server, taskId: context.taskId, logger });
  }
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
    const answered: ListedQuestion[] = [];
    for (const key of now) {
      const serverKey = relay.serverKey.get(key);
      const question = serverKey === undefined ? undefined : relay.questions.question(serverKey);
      if (question === undefined) continue;
      relay.serverKey.delete(key);
      answered.push(question);
    }
    // The answers come back through the pipeline (audit records them there).
    const responses = await relay.questions.take(answered);
    if (relay.failure !== undefined || Object.keys(responses).length === 0) return undefined;
    return responses;
  }

  /** Lets go of the task `handle`: its questions are withdrawn and what it held is forgotten. */
  release(handle: string, reason: Error): void {
    const relay = this.tasks.get(handle);
    if (relay !== undefined) {
      relay.ended = true;
      this.tasks.delete(handle);
      relay.questions.withdrawAll(reason);
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

  /** Withdraws the open questions of the task that the server's complete listing leaves out. */
  private withdrawUnlisted(context: RelayContext, listed: ReadonlySet<string>, asOf: Listing): void {
    const relay = this.tasks.get(context.handle);
    if (relay === undefined || relay.failure !== undefined) return;
    const gone = new Set(relay.questions.withdrawUnlisted(listed, asOf));
    for (const [key, to] of relay.serverKey) if (gone.has(to)) relay.serverKey.delete(key);
  }

  /** Routes each question the server lists and the gateway has not asked yet to the host. */
  private async askNew(context: RelayContext, requests: unknown, listing: Listing): Promise<void> {
    const { handle, server } = context;
    const known = this.tasks.get(handle);
    if (known?.failure !== undefined) return;
    const entries = ListedQuestions.entries(server, requests);
    const fresh = known === undefined ? entries : known.questions.fresh(entries);
    if (fresh.length === 0) return;
    // Throws when the questions of too many tasks are open already; nothing is asked then.
    this.input.track(handle, context.capabilities);
    const relay = known ?? this.remember(context);
    const arrivals: Promise<void>[] = [];
    for (const [serverKey, request] of fresh) {
      let arrived!: () => void;
      arrivals.push(new Promise<void>((resolve) => (arrived = resolve)));
      const question = relay.questions.ask(serverKey, request, listing, (method, params, signal) => {
        // Expected before it is sent: with no stage that waits, it arrives before `ask` returns.
        this.input.expect(handle, signal, (key) => {
          relay.serverKey.set(key, serverKey);
          arrived();
        });
        const { _meta: own, ...rest } = params;
        return context.ask(
          method,
          rest,
          { ...(own as Params | undefined), [RELATED_TASK]: { taskId: handle } },
          signal,
        );
      });
      question.outcome.catch((error: unknown) => {
        this.input.unexpect(handle, question.signal);
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
    relay.questions.withdrawAll(reason);
    this.input.release(context.handle, reason);
    relay.cancelled = context
      .send('tasks/cancel', { taskId: context.taskId }, new Cancellation())
      .catch((cause: unknown) =>
        this.logger.warn(
          `could not cancel task ${context.taskId} of ${context.server}: ${cause instanceof Error ? cause.message : String(cause)}`,
        ),
      );
  }

  private remember(context: RelayContext): RelayTask {
    if (this.tasks.size >= MAX_RELAYED_TASKS) {
      const oldest = this.tasks.keys().next().value!;
      this.release(oldest, new NotServingError('mcp-warden follows too many tasks; the oldest was let go'));
    }
    const relay = new RelayTask(context, this.logger);
    this.tasks.set(context.handle, relay);
    return relay;
  }
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
