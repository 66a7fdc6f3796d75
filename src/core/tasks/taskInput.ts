import { InvalidParamsError, MethodNotFoundError, NotServingError } from '../errors.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import { Cancellation, type CancelSignal } from '../rpc/cancellation.js';
import type { OutgoingOptions } from '../rpc/peer.js';
import { CAPABILITY_FOR, type TaskQuestions } from '../host/hostSession.js';
import { RELATED_TASK } from '../protocol/taskMessages.js';

/**
 * Questions of 2025-11-25 servers' tasks, for a 2026-07-28 host. A 2025-11-25 server asks what a
 * task needs (elicitation, sampling, roots) with requests of its own, tagged with the task in
 * related-task `_meta`, and sends them while the client holds `tasks/result` open. A 2026-07-28
 * host takes no requests: it reads a task's questions in `tasks/get` (`inputRequests`) and
 * answers them with `tasks/update` (`inputResponses`). So for each such task the gateway holds
 * `tasks/result` open upstream, keeps the server's questions here under keys it makes (unique
 * for the connection, so never reused within a task), shows them to the host, and answers each
 * waiting upstream request with the host's response.
 *
 * Bounded: at most `maxTasks` tasks with questions or a held `tasks/result` per connection, at
 * most `maxQuestions` open questions per task. Nothing waits for ever: each question is a routed
 * message under the pipeline's limits for questions to the host, and the held `tasks/result`
 * under the server's; when either ends, what waited on it is let go.
 */

export interface TaskInputOptions {
  /** Tasks held at once (a held result, or open questions); one more is refused, saying so. */
  readonly maxTasks: number;
  /** Open questions per task; one more is refused to the server that asks it. */
  readonly maxQuestions: number;
  /**
   * How long a `tasks/get` that has just opened `tasks/result` waits for the server's first
   * question (a server sends them as soon as it sees the request, so this is a bound, not a pause).
   */
  readonly firstQuestionMs: number;
}

/** The defaults a connection uses. */
export const TASK_INPUT_DEFAULTS: TaskInputOptions = {
  maxTasks: 32,
  maxQuestions: 16,
  firstQuestionMs: 1_000,
};

/**
 * Answered and withdrawn keys remembered per connection, the oldest forgotten first: a repeated
 * answer, or an answer to a question its server withdrew, is ignored, not refused, even after
 * the task has let go of everything else.
 */
const MAX_ANSWERED_KEYS = 1024;

/** What a host's `tasks/update` did: the keys it answered now, and those it answered too late. */
export interface Answered {
  readonly now: string[];
  /**
   * Keys of questions withdrawn before the answer came (their server stopped asking, or gave up
   * waiting): ignored, sent nowhere.
   */
  readonly withdrawn: string[];
}

interface Question {
  readonly method: string;
  readonly params: Params | undefined;
  resolve(outcome: Outcome): void;
  reject(error: Error): void;
}

/** One task of a 2025-11-25 server, while the gateway holds its result or its questions. */
class HeldTask {
  readonly questions = new Map<string, Question>();
  /** The held `tasks/result`, and how to let go of it; undefined when none is open. */
  result: Promise<Outcome> | undefined;
  holding: Cancellation | undefined;
  /** What the host declared on its latest request about this task. */
  capabilities: Params | undefined;
  /**
   * Questions on their way here through the pipeline (a modern server's, see taskRelay.ts), by
   * the signal they were sent under: each is told the key it is shown under once it arrives.
   */
  readonly expected = new Map<CancelSignal, (key: string) => void>();
  private readonly watchers = new Set<() => void>();

  /** A question came or went, or the held result settled. */
  changed(): void {
    for (const watch of [...this.watchers]) watch();
  }

  /** Resolves at the next change, after `ms`, or when `signal` is cancelled, whichever is first. */
  nextChange(ms: number, signal: CancelSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.watchers.delete(done);
        stop();
        resolve();
      };
      const timer = setTimeout(done, ms);
      const stop = signal.onCancel(done);
      this.watchers.add(done);
    });
  }

  get idle(): boolean {
    return this.holding === undefined && this.questions.size === 0 && this.expected.size === 0;
  }
}

export class TaskInput implements TaskQuestions {
  private readonly tasks = new Map<string, HeldTask>();
  /** Key → the handle of the task it was answered for. */
  private readonly answered = new Map<string, string>();
  /** Key → the handle of the task whose question under it was withdrawn (see `ask`). */
  private readonly withdrawn = new Map<string, string>();
  private nextKey = 1;

  constructor(private readonly options: TaskInputOptions = TASK_INPUT_DEFAULTS) {}

  /**
   * Holds `tasks/result` open for the task `handle` (once; `open` sends it under the given
   * signal), and remembers what the host declared. Throws when `maxTasks` are held already.
   */
  hold(
    handle: string,
    capabilities: Params | undefined,
    open: (signal: Cancellation) => Promise<Outcome>,
  ): void {
    const task = this.entry(handle);
    if (capabilities !== undefined) task.capabilities = capabilities;
    if (task.holding !== undefined) return;
    const holding = new Cancellation();
    task.holding = holding;
    const result = open(holding);
    task.result = result;
    const settled = (): void => {
      if (task.holding !== holding) return;
      task.holding = undefined;
      if (task.idle && this.tasks.get(handle) === task) this.tasks.delete(handle);
      task.changed();
    };
    result.then(settled, settled);
  }

  /**
   * Keeps the questions of the task `handle` of a 2026-07-28 server (which lists them itself, so
   * no `tasks/result` is held), and remembers what the host declared. Throws when `maxTasks` are
   * held already.
   */
  track(handle: string, capabilities: Params | undefined): void {
    const task = this.entry(handle);
    if (capabilities !== undefined) task.capabilities = capabilities;
  }

  /**
   * A question of the task `handle` is being routed to the host under `signal`: `onKey` is told
   * the key it is shown under when it arrives. Undone by `unexpect` if it never does.
   */
  expect(handle: string, signal: CancelSignal, onKey: (key: string) => void): void {
    this.tasks.get(handle)?.expected.set(signal, onKey);
  }

  /** The question sent under `signal` will not arrive (refused on its way, or withdrawn). */
  unexpect(handle: string, signal: CancelSignal): void {
    const task = this.tasks.get(handle);
    if (task === undefined || !task.expected.delete(signal)) return;
    task.changed();
    this.forgetIfIdle(handle, task);
  }

  /**
   * Waits (at most `firstQuestionMs`) until the held task `handle` has a question or its result,
   * when it has neither yet.
   */
  async settle(handle: string, signal: CancelSignal): Promise<void> {
    const task = this.tasks.get(handle);
    if (task === undefined || task.questions.size > 0 || task.holding === undefined) return;
    await task.nextChange(this.options.firstQuestionMs, signal);
  }

  /** Whether the gateway holds anything of `handle`. */
  holds(handle: string): boolean {
    return this.tasks.has(handle);
  }

  /** The result `tasks/result` is bringing for `handle`, if it is held. */
  heldResult(handle: string): Promise<Outcome> | undefined {
    return this.tasks.get(handle)?.result;
  }

  /** The open questions of `handle`, by key, as `inputRequests`. */
  inputRequests(handle: string): Params {
    const requests: Params = {};
    for (const [key, q] of this.tasks.get(handle)?.questions ?? [])
      requests[key] = { method: q.method, params: q.params ?? {} };
    return requests;
  }

  /**
   * A server's request to the host, when it belongs to a task held here (its related-task
   * handle): kept as a question for the host's next `tasks/get`. Undefined for any other request.
   */
  ask(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> | undefined {
    const related = (params?._meta as Params | undefined)?.[RELATED_TASK] as Params | undefined;
    const handle = related?.taskId;
    const task = typeof handle === 'string' ? this.tasks.get(handle) : undefined;
    if (task === undefined) return undefined;
    const capability = CAPABILITY_FOR.get(method);
    if (capability === undefined)
      return Promise.reject(new MethodNotFoundError(`Method not found: ${method}`));
    if (task.capabilities !== undefined && task.capabilities[capability] === undefined)
      return Promise.reject(
        new MethodNotFoundError(
          `the host connected to mcp-warden did not declare the ${capability} capability`,
        ),
      );
    if (task.questions.size >= this.options.maxQuestions)
      return Promise.reject(
        new NotServingError(
          `mcp-warden keeps at most ${this.options.maxQuestions} open questions per task for the host; this ${method} is refused`,
        ),
      );
    const { signal } = options;
    if (signal?.cancelled) return Promise.reject(signal.reason!);
    const key = `t${this.nextKey++}`;
    const expected = signal === undefined ? undefined : task.expected.get(signal);
    if (expected !== undefined) {
      task.expected.delete(signal!);
      expected(key);
    }
    return new Promise<Outcome>((resolve, reject) => {
      const settle = (): boolean => {
        if (!task.questions.delete(key)) return false;
        stop();
        task.changed();
        this.forgetIfIdle(handle as string, task);
        return true;
      };
      const question: Question = {
        method,
        params,
        resolve: (outcome) => settle() && resolve(outcome),
        reject: (error) => settle() && reject(error),
      };
      // The question ended on the asking side (its server withdrew or cancelled it, its time ran
      // out): remembered, so a host that answers it anyway is ignored, as the tasks extension
      // has a server ignore answers to questions it no longer asks.
      const stop =
        signal?.onCancel((reason) => {
          remember(this.withdrawn, key, handle as string);
          question.reject(reason);
        }) ?? (() => {});
      task.questions.set(key, question);
      task.changed();
    });
  }

  /**
   * The host's `tasks/update` for `handle`: each response answers the open question under its
   * key. A key answered before is ignored (a repeated update), as is one whose question its
   * server withdrew; a key this task never showed is refused with -32602 before anything is
   * answered, as is a response that is not an object.
   */
  answer(handle: string, inputResponses: unknown): Answered {
    if (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses))
      throw new InvalidParamsError(
        'tasks/update needs params.inputResponses (an object of responses by key)',
      );
    const task = this.tasks.get(handle);
    const entries = Object.entries(inputResponses as Params);
    const unknown = entries
      .map(([key]) => key)
      .filter(
        (key) =>
          task?.questions.has(key) !== true &&
          this.answered.get(key) !== handle &&
          this.withdrawn.get(key) !== handle,
      );
    if (unknown.length > 0) {
      const named = unknown.slice(0, 5).map((k) => JSON.stringify(k.slice(0, 40)));
      const open = [...(task?.questions.keys() ?? [])];
      const openText =
        open.length === 0 ? 'it has no open question' : `its open questions are ${open.join(', ')}`;
      throw new InvalidParamsError(
        `tasks/update: no question of this task was asked under ${named.join(', ')}; ${openText}`,
      );
    }
    for (const [key, response] of entries)
      if (
        task?.questions.has(key) === true &&
        (typeof response !== 'object' || response === null || Array.isArray(response))
      )
        throw new InvalidParamsError(`tasks/update: the response under ${key} must be an object`);
    const now: string[] = [];
    const withdrawn: string[] = [];
    for (const [key, response] of entries) {
      const question = task?.questions.get(key);
      if (task === undefined || question === undefined) {
        if (this.withdrawn.get(key) === handle) withdrawn.push(key);
        continue;
      }
      remember(this.answered, key, handle);
      now.push(key);
      question.resolve(Outcome.of(response as Params));
    }
    return { now, withdrawn };
  }

  /**
   * Lets go of `handle`: its held result is cancelled and its open questions fail with `reason`
   * (their keys remembered as withdrawn, so a late answer is ignored).
   */
  release(handle: string, reason: Error): void {
    const task = this.tasks.get(handle);
    if (task === undefined) return;
    this.tasks.delete(handle);
    task.holding?.cancel(reason);
    task.holding = undefined;
    for (const [key, question] of [...task.questions]) {
      remember(this.withdrawn, key, handle);
      question.reject(reason);
    }
  }

  /** Lets go of everything (the connection ends). */
  close(reason: Error): void {
    for (const handle of [...this.tasks.keys()]) this.release(handle, reason);
  }

  private entry(handle: string): HeldTask {
    let task = this.tasks.get(handle);
    if (task !== undefined) return task;
    if (this.tasks.size >= this.options.maxTasks)
      throw new NotServingError(
        `mcp-warden holds the questions of at most ${this.options.maxTasks} tasks at once; answer or cancel one first`,
      );
    task = new HeldTask();
    this.tasks.set(handle, task);
    return task;
  }

  private forgetIfIdle(handle: string, task: HeldTask): void {
    if (task.idle && this.tasks.get(handle) === task) this.tasks.delete(handle);
  }
}

/** Sets `key` in a map of at most MAX_ANSWERED_KEYS entries, forgetting the oldest first. */
function remember(map: Map<string, string>, key: string, handle: string): void {
  if (map.size >= MAX_ANSWERED_KEYS) map.delete(map.keys().next().value!);
  map.set(key, handle);
}
