import { HostCancelledError, PeerRpcError, QuestionWithdrawnError } from '../errors.js';
import type { HostTaskDialect } from '../host/hostDialect.js';
import { derive } from '../pipeline/routedMessage.js';
import type { Logger } from '../logger.js';
import type { Next, RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { TERMINAL_STATUSES } from '../protocol/taskMessages.js';
import type { Cancellation } from '../rpc/cancellation.js';
import { Outcome } from '../rpc/outcome.js';
import type { TaskRef } from './handles.js';
import { bridgeTaskRequest } from './taskBridge.js';
import type { TaskBook } from './taskBook.js';
import type { TaskInput } from './taskInput.js';
import type { RelayContext, TaskRelay } from './taskRelay.js';

export interface TaskQuestionsOptions {
  readonly book: TaskBook;
  readonly pipeline: Next;
  /**
   * Asks the host a question a task of `server` needs answered (a modern server's
   * inputRequests), through the pipeline; `meta` goes with it (the task it belongs to).
   */
  readonly ask: (
    server: string,
    method: string,
    params: Params | undefined,
    signal: Cancellation,
    meta?: Params,
  ) => Promise<Outcome>;
  /**
   * Records a host request the gateway answers itself (`answer`), as the pipeline records one it
   * routes; without it the request is answered unrecorded.
   */
  readonly record?: (message: RoutedMessage, answer: () => Promise<Outcome>) => Promise<Outcome>;
  /** The questions of 2025-11-25 servers' tasks held for a modern host (this connection's). */
  readonly input: TaskInput;
  /** The questions of modern servers' tasks the gateway asks (this connection's). */
  readonly relay: TaskRelay;
  readonly logger: Logger;
}

/** A task request the gateway answers itself rather than passing it on: how, and about what. */
export interface TaskAsked {
  readonly ref: TaskRef;
  readonly handle: string;
  readonly kind: string;
  /** The request as routed upstream. */
  readonly message: RoutedMessage;
  /** What the host's request declared it can be asked (a modern host declares it per request). */
  readonly capabilities: Params | undefined;
}

/**
 * The questions a task of a server needs answered by the host, where the two speak eras whose
 * tasks ask differently: a modern server lists them in its task (taskRelay.ts), a 2025-11-25
 * server asks them while its `tasks/result` is held open (taskInput.ts); a modern host answers
 * them with `tasks/update`, a 2025-11-25 host as requests of its own. The host's task dialect
 * says which translation a task request takes; this serves the ones that are not passed on.
 */
export class TaskQuestions {
  constructor(private readonly options: TaskQuestionsOptions) {}

  /** Answers a host's task request by the translation `how` (any but passing it on). */
  answer(how: Exclude<ReturnType<HostTaskDialect['translation']>, 'passOn'>, asked: TaskAsked) {
    if (how === 'relayQuestions') return this.relayed(asked);
    const bridged = () => this.bridged(how, asked);
    // The host's answers are taken here, not sent on: recorded as the pipeline would have.
    return asked.kind === 'tasks/update' ? this.recorded(asked.message, bridged) : bridged();
  }

  /**
   * A modern server's task `handle` as a modern host's stream gets it (`notifications/tasks`,
   * without `resultType`): the state the server pushed, or, when `pushed` is undefined, the
   * state `tasks/get` finds now (so a stream that has just opened learns where the task stands).
   * Its questions are the gateway's, as in `tasks/get`.
   */
  async relayedState(ref: TaskRef, handle: string, message: RoutedMessage, pushed?: Params): Promise<Params> {
    const context = this.relayContext(
      { ref, handle, message, capabilities: undefined, kind: '' },
      pushed === undefined ? 'tasks/get' : undefined,
    );
    const state = pushed ?? (await this.polled(handle, message)).result;
    const { _meta: _meta, resultType: _resultType, ...task } = state;
    return this.options.relay.view(context, task);
  }

  /**
   * The task `handle` of a 2025-11-25 server as a modern host's `tasks/get` shows it (without
   * `resultType`), for a status notification.
   */
  async heldState(ref: TaskRef, handle: string, message: RoutedMessage): Promise<Params> {
    const asked = { ref, handle, kind: 'tasks/get', message, capabilities: undefined };
    const { resultType: _resultType, ...task } = (await this.bridged('holdResult', asked)).result;
    return task;
  }

  /**
   * A modern host's request about a modern server's task: `tasks/get` shows the server's
   * questions as the gateway's own, `tasks/update` answers them and relays the answers under the
   * server's keys, `tasks/cancel` lets go of them (see taskRelay.ts).
   */
  private async relayed(asked: TaskAsked): Promise<Outcome> {
    const { ref, handle, kind, message } = asked;
    const { relay, book, pipeline } = this.options;
    const context = this.relayContext(asked, kind);
    if (kind === 'tasks/update') {
      let responses: Params | undefined;
      try {
        responses = await relay.update(handle, message.params?.inputResponses);
      } catch (error) {
        return this.recorded(message, () => Promise.reject(error));
      }
      if (responses === undefined) return this.recorded(message, () => Promise.resolve(Outcome.of({})));
      const params = { taskId: ref.taskId, inputResponses: responses };
      return pipeline(derive(message, { params, arguments: params }));
    }
    const outcome = book.taskResultForHost(ref, await this.polled(handle, message));
    if (kind === 'tasks/cancel') {
      relay.release(handle, new HostCancelledError('the host cancelled the task'));
      return outcome;
    }
    return outcome.changed(await relay.view(context, outcome.result));
  }

  /** `polled`: the kind of request about to fetch the state the context is for, if any. */
  private relayContext(asked: TaskAsked, polled: string | undefined): RelayContext {
    const { ref, handle, message } = asked;
    return {
      ...(polled === 'tasks/get' && { sentAfter: this.options.relay.listed() }),
      handle,
      server: ref.server,
      taskId: ref.taskId,
      send: (method, sent, signal) => this.options.book.resend(message, method, sent, signal),
      ask: (method, params, meta, signal) => this.options.ask(ref.server, method, params, signal, meta),
      capabilities: asked.capabilities,
      signal: message.signal,
    };
  }

  /**
   * A modern server's answer to `message`, a request about its task `handle`. A server that says
   * it does not know the task (-32602: it restarted and lost it, or let it expire) will never
   * take answers to its questions, so they are withdrawn from the host.
   */
  async polled(handle: string, message: RoutedMessage): Promise<Outcome> {
    try {
      return await this.options.pipeline(message);
    } catch (error) {
      if (error instanceof PeerRpcError && error.rpcCode === -32602)
        this.options.relay.release(
          handle,
          new QuestionWithdrawnError(message.server, `it answered ${message.kind} with: ${error.message}`),
        );
      throw error;
    }
  }

  /** Runs `answer` for `message` as a request the pipeline's recording stage sees. */
  private recorded(message: RoutedMessage, answer: () => Promise<Outcome>): Promise<Outcome> {
    const { record } = this.options;
    return record === undefined ? answer() : record(message, answer);
  }

  /** A task request for a task of a server of the other era than the host's (see taskBridge.ts). */
  private bridged(how: 'holdResult' | 'pollForResult', asked: TaskAsked): Promise<Outcome> {
    const { ref, handle, kind, message } = asked;
    return bridgeTaskRequest({
      method: kind,
      server: ref.server,
      params: message.params,
      taskId: ref.taskId,
      handle,
      how,
      send: (method, sent, signal) => this.options.book.resend(message, method, sent, signal),
      ask: (method, params, signal) => this.options.ask(ref.server, method, params, signal),
      signal: message.signal,
      input: this.options.input,
      capabilities: asked.capabilities,
      logger: this.options.logger,
    });
  }
}

/** Whether `state` is a task that has ended (and changes no more). */
export function ended(state: Params): boolean {
  return typeof state.status === 'string' && TERMINAL_STATUSES.has(state.status);
}
