import {
  HostCancelledError,
  InvalidParamsError,
  MethodNotFoundError,
  PeerRpcError,
  QuestionWithdrawnError,
  UpstreamFailedError,
} from '../errors.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import { Cancellation } from '../rpc/cancellation.js';
import { DEFAULT_POLL_MS, MAX_POLL_MS, MIN_POLL_MS, pause } from '../pipeline/drive.js';
import { legacyTask, modernTask, RELATED_TASK, TERMINAL_STATUSES } from '../protocol/taskMessages.js';
import type { Logger } from '../logger.js';
import { ListedQuestions } from './listedQuestions.js';
import type { TaskInput } from './taskInput.js';

/**
 * Tasks across the eras. The 2025-11-25 revision has tasks in the core protocol: a host asks for
 * one with `task` on its call, gets `{ task }` back, polls `tasks/get`, and fetches the outcome
 * with `tasks/result`, a request the server holds open while it asks the host questions. The
 * 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`) lets the server decide: a client
 * that declares the extension may get a flat task (`resultType: "task"`), polls `tasks/get`,
 * whose answer inlines the result, the error or the questions, and answers questions with
 * `tasks/update`. Lifetimes are `ttlMs`/`pollIntervalMs` there and `ttl`/`pollInterval` here.
 */

/**
 * Sends one task request to the upstream that holds the task (through the pipeline); `signal`,
 * when given, replaces the host request's (a request that outlives it: a held `tasks/result`).
 */
export type TaskSend = (method: string, params: Params, signal?: Cancellation) => Promise<Outcome>;
/**
 * Asks the host a question the upstream put in a task's `inputRequests`; cancelling `signal`
 * withdraws it (the host is sent `notifications/cancelled`).
 */
export type TaskAsk = (method: string, params: Params | undefined, signal: Cancellation) => Promise<Outcome>;

export interface TaskBridgeOptions {
  /** The host's request: its method is the one being bridged. */
  readonly method: string;
  /** The upstream that holds the task. */
  readonly server: string;
  readonly params: Params | undefined;
  /** The upstream's own task id, and the handle the host knows the task by. */
  readonly taskId: string;
  readonly handle: string;
  /**
   * Which way the eras differ (see TaskTranslation): a 2025-11-25 server's task for a modern
   * host (`holdResult`), or a modern server's task for a 2025-11-25 host (`pollForResult`).
   */
  readonly how: 'holdResult' | 'pollForResult';
  readonly send: TaskSend;
  readonly ask: TaskAsk;
  readonly signal: Cancellation;
  /** The questions of 2025-11-25 servers' tasks held for a modern host (this connection's). */
  readonly input: TaskInput;
  /** What the host's request declared it can be asked (a modern host declares it per request). */
  readonly capabilities: Params | undefined;
  readonly logger: Logger;
}

/** A host's task request for a task of an upstream of the other era, answered in the host's era. */
export function bridgeTaskRequest(options: TaskBridgeOptions): Promise<Outcome> {
  return TRANSLATIONS[options.how](options);
}

/**
 * A modern host, a task of a 2025-11-25 server. While the task needs input the gateway holds its
 * `tasks/result` open, which is when such a server sends its questions; they reach the host in
 * `tasks/get` and its `tasks/update` answers them (see taskInput.ts).
 */
async function forModernHost(options: TaskBridgeOptions): Promise<Outcome> {
  const { method, taskId, handle, send, input } = options;
  if (method === 'tasks/cancel') {
    await send('tasks/cancel', { taskId });
    input.release(handle, new HostCancelledError('the host cancelled the task'));
    return Outcome.of({});
  }
  if (method === 'tasks/update') {
    input.answer(handle, options.params?.inputResponses);
    return Outcome.of({});
  }
  if (method !== 'tasks/get') throw new MethodNotFoundError(`Method not found: ${method}`);
  const task = (await send('tasks/get', { taskId })).result;
  const detailed: Params = { ...modernTask(task), taskId: handle };
  const status = detailed.status;
  const terminal = typeof status === 'string' && TERMINAL_STATUSES.has(status);
  if (status === 'input_required') {
    input.hold(handle, options.capabilities, (signal) => send('tasks/result', { taskId }, signal));
    await input.settle(handle, options.signal);
  }
  if (!terminal && input.holds(handle)) {
    // A question still open is shown whatever the server's status says (it may lag behind).
    const inputRequests = input.inputRequests(handle);
    if (status === 'input_required' || Object.keys(inputRequests).length > 0) {
      detailed.status = 'input_required';
      detailed.inputRequests = inputRequests;
    }
  }
  if (status === 'input_required' && detailed.inputRequests === undefined) detailed.inputRequests = {};
  if (status === 'completed') detailed.result = withoutRelatedTask((await finalResult(options)).result);
  if (status === 'failed') {
    // The server's tasks/result answers a failed task with the error it failed with.
    try {
      await send('tasks/result', { taskId });
      detailed.error = { code: -32603, message: stringOr(task.statusMessage, 'the task failed') };
    } catch (error) {
      detailed.error =
        error instanceof PeerRpcError
          ? {
              code: error.rpcCode,
              message: error.message,
              ...(error.data !== undefined && { data: error.data }),
            }
          : { code: -32603, message: stringOr(task.statusMessage, 'the task failed') };
    }
  }
  if (terminal)
    input.release(handle, new QuestionWithdrawnError(options.server, `its task was ${String(status)}`));
  return Outcome.of(detailed);
}

/** A completed task's result: the one the held `tasks/result` brings, or a fresh `tasks/result`. */
async function finalResult(options: TaskBridgeOptions): Promise<Outcome> {
  const held = options.input.heldResult(options.handle);
  if (held !== undefined) {
    const outcome = await held.catch(() => undefined);
    if (outcome !== undefined) return outcome;
  }
  return options.send('tasks/result', { taskId: options.taskId });
}

/** A 2025-11-25 host, a task of a modern server. */
async function forLegacyHost(options: TaskBridgeOptions): Promise<Outcome> {
  const { method, taskId, handle, send } = options;
  if (method === 'tasks/get')
    return Outcome.of({ ...legacyTask((await send('tasks/get', { taskId })).result), taskId: handle });
  if (method === 'tasks/cancel') {
    // The extension acknowledges a cancel with an empty result; a 2025-11-25 host wants the task.
    await send('tasks/cancel', { taskId });
    return Outcome.of({ ...legacyTask((await send('tasks/get', { taskId })).result), taskId: handle });
  }
  if (method === 'tasks/result') return resultByPolling(options);
  throw new MethodNotFoundError(`Method not found: ${method}`);
}

const TRANSLATIONS = { holdResult: forModernHost, pollForResult: forLegacyHost } as const;

/**
 * `tasks/result` for a server that has none: polls `tasks/get` until the task ends, asking the
 * host what the task needs on the way (and giving the answers with `tasks/update`), then answers
 * as `tasks/result` would: the result, tied to the task, or the error the task failed with.
 * Polling goes on while the host is asked, so a question the server stops listing is withdrawn
 * from the host (see ListedQuestions). A 2025-11-25 host is asked one question at a time, in the
 * order the server lists them, and the answers go upstream together once every question listed
 * has one; the host's refusal of a question is the answer to `tasks/result`.
 */
async function resultByPolling(options: TaskBridgeOptions): Promise<Outcome> {
  const { server, taskId, handle, send, signal } = options;
  const questions = new ListedQuestions({ server, taskId, logger: options.logger });
  const ask = (method: string, params: Params, asked: Cancellation) => options.ask(method, params, asked);
  try {
    for (let listing = 1; ; listing++) {
      const task = (await send('tasks/get', { taskId })).result;
      const status = task.status;
      if (typeof status === 'string' && TERMINAL_STATUSES.has(status))
        questions.withdrawAll(`the task was ${status}`);
      if (status === 'completed') {
        const result = task.result;
        if (typeof result !== 'object' || result === null)
          throw new UpstreamFailedError(options.server, 'reported a completed task without its result');
        const own = (result as Params)._meta as Params | undefined;
        return Outcome.of({
          ...(result as Params),
          _meta: { ...own, [RELATED_TASK]: { taskId: handle } },
        });
      }
      if (status === 'failed') {
        const error = (task.error ?? {}) as Params;
        throw new PeerRpcError(
          typeof error.code === 'number' ? error.code : -32603,
          stringOr(error.message, stringOr(task.statusMessage, 'the task failed')),
          error.data,
        );
      }
      if (status === 'cancelled' || (typeof status === 'string' && TERMINAL_STATUSES.has(status)))
        throw new InvalidParamsError(`tasks/result: the task was ${String(status)}; it has no result`);
      // Only an input_required task has questions: one that is working has none outstanding.
      const entries = ListedQuestions.entries(server, status === 'input_required' ? task.inputRequests : {});
      const asOf = { listing, updated: Number.NaN };
      questions.withdrawUnlisted(new Set(entries.map(([key]) => key)), asOf);
      const open = [...questions.questions()];
      let asking = open.find((question) => !question.settled);
      if (asking === undefined) {
        // The host refused the last question asked: that refusal is the answer.
        for (const question of open) await question.outcome;
        const [next] = questions.fresh(entries);
        if (next !== undefined) asking = questions.ask(next[0], next[1], asOf, ask, signal);
        else if (open.length > 0) {
          await send('tasks/update', { taskId, inputResponses: await questions.take() });
          continue;
        }
      }
      const suggested = typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : DEFAULT_POLL_MS;
      // An answer from the host ends the wait: the next poll shows what to ask next.
      await pauseUnless(
        asking?.outcome.then(
          () => {},
          () => {},
        ),
        Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, suggested)),
        signal,
      );
    }
  } finally {
    questions.withdrawAll('tasks/result ended');
  }
}

/** `pause`, ended early (without an error) when `early` settles. */
async function pauseUnless(
  early: Promise<void> | undefined,
  ms: number,
  signal: Cancellation,
): Promise<void> {
  if (early === undefined) return pause(ms, signal);
  const { cancellation, dispose } = Cancellation.linkedTo(signal);
  const ended = new Error('answered');
  void early.then(() => cancellation.cancel(ended));
  try {
    await pause(ms, cancellation);
  } catch (error) {
    if (error !== ended) throw error;
  } finally {
    dispose();
  }
}

function withoutRelatedTask(result: Params): Params {
  const meta = result._meta as Params | undefined;
  if (meta === undefined || !Object.hasOwn(meta, RELATED_TASK)) return result;
  const { [RELATED_TASK]: _related, ...rest } = meta;
  const { _meta: _old, ...fields } = result;
  return Object.keys(rest).length === 0 ? fields : { ...fields, _meta: rest };
}

function stringOr(value: unknown, otherwise: string): string {
  return typeof value === 'string' ? value : otherwise;
}
