import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { HostCancelledError, InvalidParamsError, PeerRpcError, QuestionWithdrawnError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { MessageKind, Next, RoutedMessage, TaskAugmentation } from '../pipeline/types.js';
import { derive, routedMessage } from '../pipeline/routedMessage.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import { TaskHandles, type TaskRef } from './handles.js';
import {
  declaresTasks,
  RELATED_TASK,
  retagRelatedTask,
  TERMINAL_STATUSES,
} from '../protocol/taskMessages.js';
import { Cancellation } from '../rpc/cancellation.js';
import { bridgeTaskRequest, createdTask, legacyTask, modernTask } from './taskBridge.js';
import { envelopeOf } from '../host/answerShape.js';
import { TaskInput } from './taskInput.js';
import { TaskRelay, type RelayContext } from './taskRelay.js';
import { HostRunTasks } from './hostRunTasks.js';
import { fetchedPage, pageOfTasks, type FetchedPage, type ListPosition } from './taskListPaging.js';

/** What task routing needs to know of one upstream. */
export interface TaskUpstream {
  readonly name: string;
  readonly state: string;
  readonly capabilities: Params;
  readonly tools: readonly Tool[];
  /** The protocol era it speaks; undefined before it connected. */
  readonly era: 'legacy' | 'modern' | undefined;
  /**
   * Has a modern server push the status of its task (see Upstream.watchTask); resolves whether
   * the server agreed.
   */
  watchTask?(taskId: string): Promise<boolean>;
  unwatchTask?(taskId: string): void;
}

export interface TaskRoutingOptions {
  /** Seals handles and list cursors; a fresh random key per process when absent. */
  readonly handles?: TaskHandles;
  /**
   * Who the host is: every handle is sealed to it and refused to anyone else. Today the host
   * session (one per gateway process); a gateway serving several principals gives each its own.
   */
  readonly owner: () => string;
  readonly upstreams: () => readonly TaskUpstream[];
  /** Sends a message through the pipeline and answers `request` with `after(outcome)`. */
  readonly route: (
    request: IncomingRequest,
    message: RoutedMessage,
    after: (outcome: Outcome) => Outcome,
  ) => void;
  /** The pipeline itself, for `tasks/list`, which asks several upstreams for one answer. */
  readonly pipeline: Next;
  /** Answers `request` with what `answer` settles with (errors through the router's boundary). */
  readonly respond: (request: IncomingRequest, answer: Promise<Outcome>, message: RoutedMessage) => void;
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
  /** How the requests of this connection are stamped (eras, host, principal) for their records. */
  readonly stamp?: (server: string) => Partial<RoutedMessage>;
  readonly logger: Logger;
  /**
   * Whether other principals' connections share `server`'s tasks (one process serving everyone
   * behind the HTTP listener): its task list and status notifications then carry only the tasks
   * this connection created, so no principal learns of, or gets a handle to, another's task.
   */
  readonly sharedServer?: (server: string) => boolean;
  /**
   * The task questions held for the host (see TaskMemory), which whoever made them lets go of;
   * one of its own when absent (tests).
   */
  readonly memory?: TaskMemory;
}

export { MAX_LIST_FETCHES, MAX_TASKS_PAGE } from './taskListPaging.js';
/** Tools of tasks remembered (for repairing their results); the oldest are forgotten first. */
export const MAX_REMEMBERED_TASKS = 10_000;

const TASK_METHODS = ['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/update'] as const;

/**
 * What the gateway holds of one host's tasks: the questions of 2025-11-25 servers' tasks held
 * for a modern host (taskInput.ts), and those of modern servers' tasks, which the gateway
 * asks and relays (taskRelay.ts). A connection that lasts has its own; the stateless
 * requests of one principal, each a connection of its own, share one, so that the questions one
 * request's `tasks/get` showed are answered by a later request's `tasks/update`.
 */
export class TaskMemory {
  readonly input = new TaskInput();
  readonly relay: TaskRelay;

  constructor(logger: Logger) {
    this.relay = new TaskRelay(this.input, logger);
  }

  /** Lets go of every question held (whoever waits on one gets `reason`). */
  close(reason: Error): void {
    this.relay.close(reason);
    this.input.close(reason);
  }
}

/**
 * Tasks across the gateway. The host sees each upstream task under a handle (handles.ts) that
 * says which server holds it; everything that names a task on its way to the host (a created
 * task, `tasks/get`, `tasks/list`, status notifications, related-task `_meta`) is re-tagged to
 * the handle, and everything that names a handle on its way upstream back to the upstream's id.
 * Every request passes the one pipeline as its own kind of message.
 */
export class TaskRouting {
  private readonly handles: TaskHandles;
  private readonly input: TaskInput;
  /** Questions of modern servers' tasks, asked of a modern host by the gateway (taskRelay.ts). */
  private readonly relay: TaskRelay;
  private hostTasks = false;
  /** `server\0taskId` → the upstream's tool name, so `tasks/result` can be repaired against it. */
  private readonly tools = new Map<string, string>();
  /** The last tool list without `execution`, and the list it was made from. */
  private stripped: { from: string; to: string } | undefined;
  /** Servers whose status notifications a host without tasks was not sent (logged once each). */
  private readonly notTold = new Set<string>();
  /** Tasks the host runs for servers (hostRunTasks.ts). */
  private readonly hostRun: HostRunTasks;

  constructor(private readonly options: TaskRoutingOptions) {
    this.handles = options.handles ?? new TaskHandles();
    const memory = options.memory ?? new TaskMemory(options.logger);
    this.input = memory.input;
    this.relay = memory.relay;
    this.hostRun = new HostRunTasks({
      handles: this.handles,
      route: options.route,
      pipeline: options.pipeline,
      message: (request, kind, server, params) => this.taskMessage(request, kind, 'host', server, params),
      metaForUpstream: (server, meta) => this.metaForUpstream(server, meta),
      remember,
    });
  }

  /** The methods this serves to the host, with their handlers. */
  methods(): [string, (request: IncomingRequest) => Promise<void> | void][] {
    const byHandle = TASK_METHODS.map((method): [string, (request: IncomingRequest) => void] => [
      method,
      (r) => this.byHandle(r, method),
    ]);
    return [...byHandle, ['tasks/list', (r) => this.list(r)]];
  }

  /**
   * The host initialized. A host that declares the `tasks` capability is taken to run tasks
   * itself; any other is served as a host without tasks (see `augmentation`, `toolsList`).
   */
  hostInitialized(capabilities: Params | undefined): void {
    this.hostTasks = capabilities?.tasks !== undefined && capabilities.tasks !== null;
  }

  /**
   * How a tools/call runs as a task: as the host asked (its `task` params), or driven by the
   * gateway for a host without tasks calling a tool that requires one; undefined otherwise.
   */
  augmentation(
    params: Params | undefined,
    definition: Tool,
    origin?: IncomingRequest,
  ): TaskAugmentation | undefined {
    const task = params?.task;
    // A 2026-07-28 host that declares the tasks extension may be answered with a task: a tool
    // its server runs as one is run so, and the host polls it.
    const support = definition.execution?.taskSupport;
    if (
      (support === 'required' || support === 'optional') &&
      origin?.shape !== undefined &&
      declaresTasks(envelopeOf(origin)?.capabilities)
    )
      return { params: {}, drivenBy: 'host' };
    if (task !== undefined) {
      if (typeof task !== 'object' || task === null || Array.isArray(task))
        throw new InvalidParamsError(`tools/call ${String(params?.name)}: params.task must be an object`);
      return { params: task as Params, drivenBy: 'host' };
    }
    if (!this.hostTasks && definition.execution?.taskSupport === 'required')
      return { params: {}, drivenBy: 'gateway' };
    return undefined;
  }

  /** The answer to a call the host runs as a task: the task, under its handle. */
  created(message: RoutedMessage, outcome: Outcome): Outcome {
    const result = outcome.result;
    const task = createdTask(result);
    // A server may answer at once, without a task: that result goes as it is.
    if (task === undefined) return outcome;
    const taskId = task.taskId as string;
    this.remember(message.server, taskId, message.target);
    const handle = this.handle(message.server, taskId);
    // A flat task (the tasks extension's shape) keeps only its `_meta` besides the task.
    const flat = task === result;
    const rest = this.resultForHost(
      message.server,
      flat ? (result._meta === undefined ? {} : { _meta: result._meta }) : result,
    );
    // A 2025-11-25 host that runs tasks is told their statuses; a modern server says them only
    // on a stream that names the task.
    if (message.hostEra !== 'modern' && this.hostTasks)
      this.modernServer(message.server)
        ?.watchTask?.(taskId)
        .catch(() => false);
    if (message.hostEra === 'modern') {
      const { task: _task, ...fields } = rest;
      return outcome.changed({ ...fields, resultType: 'task', ...modernTask(task), taskId: handle });
    }
    return outcome.changed({ ...rest, task: { ...(flat ? legacyTask(task) : task), taskId: handle } });
  }

  /**
   * The tool list as this host should see it: a host without tasks never sees `execution`
   * (the gateway runs required tasks for it, so to that host every tool is an ordinary one).
   */
  toolsList(json: string): string {
    if (this.hostTasks || !json.includes('"execution"')) return json;
    if (this.stripped?.from === json) return this.stripped.to;
    const list = JSON.parse(json) as { tools: Params[] };
    const to = JSON.stringify({
      ...list,
      tools: list.tools.map(({ execution: _execution, ...tool }) => tool),
    });
    this.stripped = { from: json, to };
    return to;
  }

  /** A `notifications/tasks/status` for the host, or undefined (with the reason logged) when it has none. */
  status(server: string, params: Params | undefined): Params | undefined {
    if (!this.hostTasks) {
      // Once per server: a task says its status many times, and the reason is always the same.
      if (!this.notTold.has(server)) {
        this.notTold.add(server);
        this.options.logger.info(
          `did not forward notifications/tasks/status from ${server}: the host did not declare tasks, so mcp-warden runs its tasks (said once per server)`,
        );
      }
      return undefined;
    }
    if (typeof params?.taskId !== 'string' || !this.mayKnow(server, params.taskId)) return undefined;
    return { ...this.resultForHost(server, params), taskId: this.handle(server, params.taskId) };
  }

  /**
   * A modern server's `notifications/tasks` for a 2025-11-25 host: its `notifications/tasks/status`
   * (the task in that revision's shape, under its handle), or undefined when the host has none.
   * A task that ended is watched no more.
   */
  modernStatus(upstream: TaskUpstream, params: Params | undefined): Params | undefined {
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') return undefined;
    if (typeof params?.status === 'string' && TERMINAL_STATUSES.has(params.status))
      upstream.unwatchTask?.(taskId);
    return this.status(upstream.name, {
      ...legacyTask(params!),
      ...(params!._meta !== undefined && { _meta: params!._meta }),
    });
  }

  /** An upstream's `_meta` on its way to the host: its related-task id becomes the handle. */
  metaForHost(server: string, meta: Params | undefined): Params | undefined {
    return retagRelatedTask(meta, (id) => this.handle(server, id));
  }

  /**
   * The host's `_meta` on its way to `server`: a related-task handle becomes that server's own id.
   * A handle of another server, or none of ours, is left out: no server learns of another's tasks.
   */
  metaForUpstream(server: string, meta: Params | undefined): Params | undefined {
    return retagRelatedTask(meta, (handle) => {
      const ref = this.handles.openHandle(handle, this.options.owner());
      return ref?.server === server ? ref.taskId : undefined;
    });
  }

  /** The host's answer to `server`'s request, its task (if it ran one) under a handle for that server. */
  answerForUpstream(server: string, outcome: Outcome): Outcome {
    return this.hostRun.answerForUpstream(server, outcome);
  }

  /** A server follows up a task it had the host create (see HostRunTasks). */
  fromUpstream(server: string, request: IncomingRequest): void {
    this.hostRun.fromUpstream(server, request);
  }

  /** A server lists the tasks it had the host create (see HostRunTasks). */
  listForUpstream(server: string, request: IncomingRequest): Promise<void> {
    return this.hostRun.listForUpstream(server, request);
  }

  /** The host's status notification for one of its tasks, for the server that had it run it. */
  hostStatus(params: Params | undefined): { server: string; params: Params } | undefined {
    return this.hostRun.hostStatus(params);
  }

  // -------------------------------------------------------------------------------------------

  private byHandle(request: IncomingRequest, kind: (typeof TASK_METHODS)[number]): void {
    const handle = request.params?.taskId;
    const ref = this.open(handle, kind);
    const upstream = this.options.upstreams().find((u) => u.name === ref.server);
    const tool = this.tools.get(key(ref.server, ref.taskId));
    // Whatever else the request says (a tasks/update's answers) goes on with the upstream's id.
    const { _meta: _meta, ...own } = request.params ?? {};
    const params = { ...own, taskId: ref.taskId };
    const message = derive(this.taskMessage(request, kind, 'upstream', ref.server, params), {
      target: tool ?? '',
      exposedName: handle as string,
      definition: tool === undefined ? undefined : upstream?.tools.find((t) => t.name === tool),
    });
    const hostModern = request.shape !== undefined;
    if (upstream !== undefined && hostModern !== (upstream.era === 'modern')) {
      // The task's server speaks the other era: its task requests are translated both ways.
      const bridged = () => this.bridge(ref, handle as string, kind, message, hostModern, request);
      // The host's answers are taken here, not sent on: recorded as the pipeline would have.
      const answer = kind === 'tasks/update' ? this.recorded(message, bridged) : bridged();
      return this.options.respond(request, answer, message);
    }
    if (hostModern && upstream?.era === 'modern' && kind !== 'tasks/result') {
      const answer = this.relayed(ref, handle as string, kind, message, request);
      return this.options.respond(request, answer, message);
    }
    this.options.route(request, message, (outcome) => this.taskResultForHost(ref, outcome));
  }

  /**
   * A modern host's request about a modern server's task: `tasks/get` shows the server's
   * questions as the gateway's own, `tasks/update` answers them and relays the answers under the
   * server's keys, `tasks/cancel` lets go of them (see taskRelay.ts).
   */
  private async relayed(
    ref: TaskRef,
    handle: string,
    kind: string,
    message: RoutedMessage,
    request: IncomingRequest,
  ): Promise<Outcome> {
    const context = this.relayContext(ref, handle, message, envelopeOf(request)?.capabilities, kind);
    if (kind === 'tasks/update') {
      let responses: Params | undefined;
      try {
        responses = await this.relay.update(handle, message.params?.inputResponses);
      } catch (error) {
        return this.recorded(message, () => Promise.reject(error));
      }
      if (responses === undefined) return this.recorded(message, () => Promise.resolve(Outcome.of({})));
      const params = { taskId: ref.taskId, inputResponses: responses };
      return this.options.pipeline(derive(message, { params, arguments: params }));
    }
    const outcome = this.taskResultForHost(ref, await this.polled(handle, message));
    if (kind === 'tasks/cancel') {
      this.relay.release(handle, new HostCancelledError('the host cancelled the task'));
      return outcome;
    }
    return outcome.changed(await this.relay.view(context, outcome.result));
  }

  /** `polled`: the kind of request about to fetch the state the context is for, if any. */
  private relayContext(
    ref: Pick<TaskRef, 'server' | 'taskId'>,
    handle: string,
    message: RoutedMessage,
    capabilities: Params | undefined,
    polled: string | undefined,
  ): RelayContext {
    return {
      ...(polled === 'tasks/get' && { sentAfter: this.relay.listed() }),
      handle,
      server: ref.server,
      taskId: ref.taskId,
      send: (method, sent, signal) => this.resend(message, method, sent, signal),
      ask: (method, params, meta, signal) => this.options.ask(ref.server, method, params, signal, meta),
      capabilities,
      signal: message.signal,
    };
  }

  /** The modern server that holds the task `handle` of this host; undefined for any other. */
  modernServerOf(handle: string): TaskUpstream | undefined {
    const ref = this.handles.openHandle(handle, this.options.owner());
    return ref === undefined ? undefined : this.modernServer(ref.server);
  }

  /**
   * The upstream named `server` when it speaks the stateless revision: only such a server's
   * tasks are pushed on a stream the gateway opens per task, and have their questions relayed.
   */
  private modernServer(server: string): TaskUpstream | undefined {
    return this.options.upstreams().find((u) => u.name === server && u.era === 'modern');
  }

  /**
   * A modern server's task `handle` as a modern host's stream gets it (`notifications/tasks`,
   * without `resultType`): the state the server pushed, or, when `pushed` is undefined, the
   * state `tasks/get` finds now (so a stream that has just opened learns where the task stands).
   * Its questions are the gateway's, as in `tasks/get`. A task that ended is watched no more.
   * Undefined when the handle is no modern server's task of this host.
   */
  async modernServerState(handle: string, pushed?: Params): Promise<Params | undefined> {
    const ref = this.handles.openHandle(handle, this.options.owner());
    const upstream = this.modernServerOf(handle);
    if (ref === undefined || upstream === undefined) return undefined;
    const { taskId } = ref;
    const message = derive(this.taskMessage(undefined, 'tasks/get', 'upstream', ref.server, { taskId }), {
      target: this.tools.get(key(ref.server, taskId)) ?? '',
    });
    const context = this.relayContext(
      ref,
      handle,
      message,
      undefined,
      pushed === undefined ? 'tasks/get' : undefined,
    );
    const state = pushed ?? (await this.polled(handle, message)).result;
    const { _meta: _meta, resultType: _resultType, ...task } = state;
    const shown = await this.relay.view(context, task);
    if (typeof shown.status === 'string' && TERMINAL_STATUSES.has(shown.status))
      upstream.unwatchTask?.(taskId);
    return shown;
  }

  /**
   * A modern server's answer to `message`, a request about its task `handle`. A server that says
   * it does not know the task (-32602: it restarted and lost it, or let it expire) will never
   * take answers to its questions, so they are withdrawn from the host.
   */
  private async polled(handle: string, message: RoutedMessage): Promise<Outcome> {
    try {
      return await this.options.pipeline(message);
    } catch (error) {
      if (error instanceof PeerRpcError && error.rpcCode === -32602)
        this.relay.release(
          handle,
          new QuestionWithdrawnError(message.server, `it answered ${message.kind} with: ${error.message}`),
        );
      throw error;
    }
  }

  /** Runs `answer` for `message` as a request the pipeline's recording stage sees. */
  private recorded(message: RoutedMessage, answer: () => Promise<Outcome>): Promise<Outcome> {
    return this.options.record === undefined ? answer() : this.options.record(message, answer);
  }

  /**
   * A task request for a task of a server of the other era than the host's, translated (see
   * taskBridge.ts). `message` is the request as routed; `request`, the host's, when there is one.
   */
  private bridge(
    ref: TaskRef,
    handle: string,
    kind: string,
    message: RoutedMessage,
    hostModern: boolean,
    request: IncomingRequest | undefined,
  ): Promise<Outcome> {
    return bridgeTaskRequest({
      method: kind,
      server: ref.server,
      params: message.params,
      taskId: ref.taskId,
      handle,
      hostModern,
      send: (method, sent, signal) => this.resend(message, method, sent, signal),
      ask: (method, asked, signal) => this.options.ask(ref.server, method, asked, signal),
      signal: message.signal,
      input: this.input,
      capabilities: request === undefined ? undefined : envelopeOf(request)?.capabilities,
    });
  }

  /**
   * Of `handles` a modern host wants status notifications for, those the gateway can give: its
   * own tasks on 2025-11-25 servers, which push `notifications/tasks/status`, and on modern
   * servers that agree to push theirs on a stream the gateway opens per task (see `unwatch`).
   */
  async watch(handles: readonly string[]): Promise<string[]> {
    const told = await Promise.all(
      handles.map(async (handle) => {
        const ref = this.handles.openHandle(handle, this.options.owner());
        const upstream =
          ref === undefined ? undefined : this.options.upstreams().find((u) => u.name === ref.server);
        if (upstream?.era === 'legacy') return true;
        return upstream?.watchTask === undefined ? false : upstream.watchTask(ref!.taskId);
      }),
    );
    return handles.filter((_, i) => told[i]);
  }

  /** No stream of the host listens for `handle` any more: its server's stream for it is closed. */
  unwatch(handle: string): void {
    const ref = this.handles.openHandle(handle, this.options.owner());
    if (ref === undefined) return;
    this.modernServer(ref.server)?.unwatchTask?.(ref.taskId);
  }

  /** The handle of `server`'s task `taskId`, as this host knows it. */
  handleOf(server: string, taskId: string): string {
    return this.handle(server, taskId);
  }

  /**
   * The task `handle` of a 2025-11-25 server as a modern host's `tasks/get` shows it (without
   * `resultType`), for a status notification; undefined when it is no task of this host.
   */
  async modernState(handle: string, signal: Cancellation): Promise<Params | undefined> {
    const ref = this.handles.openHandle(handle, this.options.owner());
    if (ref === undefined) return undefined;
    const tool = this.tools.get(key(ref.server, ref.taskId));
    const upstream = this.options.upstreams().find((u) => u.name === ref.server);
    const params = { taskId: ref.taskId };
    const message = routedMessage({
      kind: 'tasks/get',
      direction: 'upstream',
      server: ref.server,
      target: tool ?? '',
      exposedName: handle,
      definition: tool === undefined ? undefined : upstream?.tools.find((t) => t.name === tool),
      arguments: params,
      params,
      signal,
      ...this.options.stamp?.(ref.server),
    });
    const { resultType: _resultType, ...task } = (
      await this.bridge(ref, handle, 'tasks/get', message, true, undefined)
    ).result;
    return task;
  }

  private async list(request: IncomingRequest): Promise<void> {
    const owner = this.options.owner();
    const serving = this.options
      .upstreams()
      .filter((u) => u.state === 'ready' && (u.capabilities.tasks as Params | undefined)?.list !== undefined);
    const given = request.params?.cursor;
    let from: ListPosition = { index: 0, cursor: undefined, skip: 0 };
    if (given !== undefined) {
      const position = this.handles.openCursor(given, owner);
      if (position === undefined)
        throw new InvalidParamsError(
          'tasks/list: params.cursor is not a cursor this mcp-warden session gave (altered, or from before a restart)',
        );
      const index = serving.findIndex((u) => u.name === position.server);
      if (index < 0)
        throw new InvalidParamsError(
          `tasks/list: server "${position.server}" of this cursor no longer serves tasks; list again from the start`,
        );
      from = { index, cursor: position.cursor, skip: position.skip };
    }
    const page = await pageOfTasks({
      lists: serving.length,
      from,
      fetch: (index, cursor) => this.page(request, serving[index]!.name, cursor),
      keep: (index, task) =>
        typeof task.taskId === 'string' && this.mayKnow(serving[index]!.name, task.taskId),
    });
    const { after } = page;
    const next =
      after === undefined
        ? undefined
        : this.handles.cursor({
            server: serving[after.index]!.name,
            cursor: after.cursor,
            skip: after.skip,
            owner,
          });
    // Only empty pages so far: the tasks' server does not matter then.
    return this.answerList(request, page.tasks.length > 0 ? serving[page.index]!.name : '', page.tasks, next);
  }

  private answerList(
    request: IncomingRequest,
    server: string,
    tasks: readonly Params[],
    next: string | undefined,
  ) {
    const mapped = tasks.flatMap((task) =>
      typeof task.taskId === 'string' ? [{ ...task, taskId: this.handle(server, task.taskId) }] : [],
    );
    request.respond(Outcome.of({ tasks: mapped, ...(next !== undefined && { nextCursor: next }) }));
  }

  /** One upstream's page of tasks; a server that fails is logged and passed over. */
  private async page(
    request: IncomingRequest,
    server: string,
    cursor: string | undefined,
  ): Promise<FetchedPage> {
    const params = cursor === undefined ? {} : { cursor };
    try {
      const outcome = await this.options.pipeline(
        this.taskMessage(request, 'tasks/list', 'upstream', server, params),
      );
      return fetchedPage(outcome.result);
    } catch (error) {
      this.options.logger.warn(
        `tasks/list: left out the tasks of ${server}: ${error instanceof Error ? error.message : String(error)}`,
      );
      return { tasks: [], next: undefined };
    }
  }

  /**
   * A task request as a routed message. Towards an upstream it carries the host's meta (its
   * related-task handle translated) and progress; towards the host, neither of the server's.
   */
  private taskMessage(
    request: IncomingRequest | undefined,
    kind: MessageKind,
    direction: 'upstream' | 'host',
    server: string,
    params: Params,
  ): RoutedMessage {
    const toUpstream = direction === 'upstream';
    return routedMessage({
      kind,
      direction,
      server,
      target: '',
      exposedName: '',
      arguments: params,
      params,
      meta: toUpstream && request !== undefined ? this.metaForUpstream(server, request.meta) : undefined,
      signal: request ?? new Cancellation(),
      onProgress: toUpstream ? request?.onProgress : undefined,
      ...this.options.stamp?.(server),
    });
  }

  /**
   * A request a bridge or relay makes about the task `message` is about: through the pipeline as
   * a message of its own, with its own signal when it has one.
   */
  private resend(message: RoutedMessage, method: string, sent: Params, signal: Cancellation | undefined) {
    return this.options.pipeline(
      derive(message, {
        kind: method as MessageKind,
        params: sent,
        arguments: sent,
        ...(signal !== undefined && { signal, onProgress: undefined }),
      }),
    );
  }

  /** The handle a host must present, opened; a -32602 naming the method otherwise. */
  private open(handle: unknown, method: string): TaskRef {
    if (typeof handle !== 'string')
      throw new InvalidParamsError(`${method} needs params.taskId (a task handle from mcp-warden)`);
    const ref = this.handles.openHandle(handle, this.options.owner());
    if (ref === undefined)
      throw new InvalidParamsError(
        `${method}: unknown task ${JSON.stringify(handle.length > 80 ? `${handle.slice(0, 80)}…` : handle)}; ` +
          'it is not a task handle this mcp-warden session gave (altered, or from before a restart)',
      );
    return ref;
  }

  private handle(server: string, taskId: string): string {
    return this.handles.handle({ server, taskId, owner: this.options.owner() });
  }

  /** A task result (`tasks/get`, `tasks/cancel`, `tasks/result`) with its ids turned into the handle. */
  private taskResultForHost(ref: TaskRef, outcome: Outcome): Outcome {
    const result = outcome.result;
    const hasId = typeof result.taskId === 'string';
    const meta = result._meta as Params | undefined;
    if (!hasId && (meta === undefined || !Object.hasOwn(meta, RELATED_TASK))) return outcome;
    const retagged = this.resultForHost(ref.server, result);
    return outcome.changed(
      hasId ? { ...retagged, taskId: this.handle(ref.server, result.taskId as string) } : retagged,
    );
  }

  /** `result` with its related-task `_meta` re-tagged for the host. */
  private resultForHost(server: string, result: Params): Params {
    const meta = result._meta as Params | undefined;
    if (meta === undefined) return result;
    const retagged = this.metaForHost(server, meta);
    const { _meta: _old, ...rest } = result;
    return retagged === undefined ? rest : { ...rest, _meta: retagged };
  }

  /** Whether this host started `server`'s task `taskId` (it knows which tool runs it). */
  ownsTask(server: string, taskId: string): boolean {
    return this.tools.has(key(server, taskId));
  }

  /** Whether this host may see `server`'s task `taskId`: any, unless others share the server. */
  private mayKnow(server: string, taskId: string): boolean {
    return this.options.sharedServer?.(server) !== true || this.ownsTask(server, taskId);
  }

  private remember(server: string, taskId: string, tool: string): void {
    remember(this.tools, key(server, taskId), tool);
  }
}

/** Sets `key` in a map of at most MAX_REMEMBERED_TASKS entries, forgetting the oldest first. */
function remember(map: Map<string, string>, key: string, value: string): void {
  if (!map.has(key) && map.size >= MAX_REMEMBERED_TASKS) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
  map.set(key, value);
}

function key(server: string, taskId: string): string {
  return `${server}\u0000${taskId}`;
}
