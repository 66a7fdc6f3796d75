import { InvalidParamsError } from '../errors.js';
import type { MessageKind, Next, RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { RELATED_TASK, retagRelatedTask } from '../protocol/taskMessages.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import type { TaskHandles } from './handles.js';
import { fetchedPage, pageOfTasks } from './taskListPaging.js';

/**
 * The peer name sealed into handles of the host's own tasks (those a server had the host run):
 * no configured server has an empty name.
 */
export const HOST = '';

/** Handles given to a server are sealed to it: another server presenting one is refused. */
function upstreamOwner(server: string): string {
  return `server:${server}`;
}

export interface HostRunTasksOptions {
  readonly handles: TaskHandles;
  /** Sends a message through the pipeline and answers `request` with `after(outcome)`. */
  readonly route: (
    request: IncomingRequest,
    message: RoutedMessage,
    after: (outcome: Outcome) => Outcome,
  ) => void;
  readonly pipeline: Next;
  /** A task request of `server`'s on its way to the host, as a routed message. */
  readonly message: (
    request: IncomingRequest,
    kind: MessageKind,
    server: string,
    params: Params,
  ) => RoutedMessage;
  /** The host's `_meta` on its way to `server` (its related-task handle turned into the server's id). */
  readonly metaForUpstream: (server: string, meta: Params | undefined) => Params | undefined;
  /** Remembers one entry of a bounded map, forgetting the oldest first. */
  readonly remember: (map: Map<string, string>, key: string, value: string) => void;
}

/**
 * Tasks the host runs for servers (a server's request the host answered with a task): each
 * server sees such a task under a handle sealed to it, follows it up, lists it and hears its
 * status, and never learns of another server's.
 */
export class HostRunTasks {
  /**
   * The host's own task id → the server that had the host create it: what a server's
   * `tasks/list` is filtered by, and where the host's status notifications for it go.
   */
  private readonly servers = new Map<string, string>();

  constructor(private readonly options: HostRunTasksOptions) {}

  /**
   * The host's answer to `server`'s request, its related-task meta translated back. When the
   * host ran the request as a task, the server is given a handle to it, sealed to that server,
   * so no other server can follow (or cancel) the task.
   */
  answerForUpstream(server: string, outcome: Outcome): Outcome {
    const task = outcome.result.task as Params | undefined;
    if (typeof task === 'object' && task !== null && typeof task.taskId === 'string') {
      this.options.remember(this.servers, task.taskId, server);
      const handle = this.handleFor(server, task.taskId);
      return outcome.changed({ ...outcome.result, task: { ...task, taskId: handle } });
    }
    const meta = outcome.result._meta as Params | undefined;
    if (meta === undefined || !Object.hasOwn(meta, RELATED_TASK)) return outcome;
    const retagged = this.options.metaForUpstream(server, meta);
    const { _meta: _old, ...rest } = outcome.result;
    return outcome.changed(retagged === undefined ? rest : { ...rest, _meta: retagged });
  }

  /**
   * A server follows up a task it had the host create (`tasks/get`, `tasks/result`,
   * `tasks/cancel`): routed to the host with the host's own id, when the handle is one this
   * server was given; a -32602 otherwise.
   */
  fromUpstream(server: string, request: IncomingRequest): void {
    const handle = request.params?.taskId;
    const ref =
      typeof handle === 'string' ? this.options.handles.openHandle(handle, upstreamOwner(server)) : undefined;
    if (ref === undefined || ref.server !== HOST)
      throw new InvalidParamsError(
        `${request.method}: params.taskId is not a task of the host that mcp-warden gave server "${server}"`,
      );
    const message = this.options.message(request, request.method as MessageKind, server, {
      taskId: ref.taskId,
    });
    this.options.route(request, message, (outcome) => this.forUpstream(server, ref.taskId, outcome));
  }

  /**
   * A server lists the tasks it had the host create: the host's `tasks/list`, page by page,
   * keeping only that server's tasks (under the handles it was given); `nextCursor` is sealed
   * to the server (see taskListPaging.ts).
   */
  async listForUpstream(server: string, request: IncomingRequest): Promise<void> {
    const { handles } = this.options;
    const owner = upstreamOwner(server);
    let from = { index: 0, cursor: undefined as string | undefined, skip: 0 };
    const given = request.params?.cursor;
    if (given !== undefined) {
      const position = handles.openCursor(given, owner);
      if (position?.server !== HOST)
        throw new InvalidParamsError(
          `tasks/list: params.cursor is not a cursor mcp-warden gave server "${server}"`,
        );
      from = { index: 0, cursor: position.cursor, skip: position.skip };
    }
    const page = await pageOfTasks({
      lists: 1,
      from,
      fetch: async (_, cursor) =>
        fetchedPage(
          (
            await this.options.pipeline(
              this.options.message(request, 'tasks/list', server, cursor === undefined ? {} : { cursor }),
            )
          ).result,
        ),
      keep: (_, task) => typeof task.taskId === 'string' && this.servers.get(task.taskId) === server,
    });
    const tasks = page.tasks.map((task) => ({
      ...task,
      taskId: this.handleFor(server, task.taskId as string),
    }));
    const { after } = page;
    const nextCursor =
      after === undefined
        ? undefined
        : handles.cursor({ server: HOST, cursor: after.cursor, skip: after.skip, owner });
    request.respond(Outcome.of({ tasks, ...(nextCursor !== undefined && { nextCursor }) }));
  }

  /**
   * The host's `notifications/tasks/status` for one of its tasks: the server that had the host
   * create it, and the notification as that server sees it (its handle); undefined for a task no
   * server asked for.
   */
  hostStatus(params: Params | undefined): { server: string; params: Params } | undefined {
    const taskId = params?.taskId;
    const server = typeof taskId === 'string' ? this.servers.get(taskId) : undefined;
    if (server === undefined || params === undefined) return undefined;
    const meta = params._meta as Params | undefined;
    const retagged = retagRelatedTask(meta, (id) =>
      this.servers.get(id) === server ? this.handleFor(server, id) : undefined,
    );
    const { _meta: _old, ...rest } = params;
    return {
      server,
      params: {
        ...rest,
        taskId: this.handleFor(server, taskId as string),
        ...(retagged !== undefined && { _meta: retagged }),
      },
    };
  }

  /** A host's task as `server` sees it: a handle only that server can open. */
  private handleFor(server: string, taskId: string): string {
    return this.options.handles.handle({ server: HOST, taskId, owner: upstreamOwner(server) });
  }

  /** The host's answer about its task `taskId`, with that id turned into `server`'s handle. */
  private forUpstream(server: string, taskId: string, outcome: Outcome): Outcome {
    const result = outcome.result;
    const meta = result._meta as Params | undefined;
    const related = meta === undefined ? undefined : (meta[RELATED_TASK] as Params | undefined);
    if (result.taskId !== taskId && related?.taskId !== taskId) return outcome;
    const handle = this.handleFor(server, taskId);
    const changed: Params = { ...result };
    if (result.taskId === taskId) changed.taskId = handle;
    if (related?.taskId === taskId)
      changed._meta = { ...meta, [RELATED_TASK]: { ...related, taskId: handle } };
    return outcome.changed(changed);
  }
}
