import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { InvalidParamsError } from '../errors.js';
import { LEGACY_HOST_TASKS, type HostTaskDialect } from '../host/hostDialect.js';
import { derive, routedMessage } from '../pipeline/routedMessage.js';
import type { MessageKind, Next, RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { RELATED_TASK, retagRelatedTask } from '../protocol/taskMessages.js';
import { Cancellation } from '../rpc/cancellation.js';
import type { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import { TaskHandles, type TaskRef } from './handles.js';

/** What task routing needs to know of one upstream. */
export interface TaskUpstream {
  readonly name: string;
  readonly state: string;
  readonly capabilities: Params;
  readonly tools: readonly Tool[];
  /** The protocol era it speaks; undefined before it connected. */
  readonly era: 'legacy' | 'modern' | undefined;
  /**
   * Has the server push the status of its task (see Upstream.watchTask); resolves whether the
   * host will hear of it (a server that pushes every status unasked agrees at once).
   */
  watchTask?(taskId: string): Promise<boolean>;
  unwatchTask?(taskId: string): void;
}

export interface TaskBookOptions {
  /** Seals handles and list cursors; a fresh random key per process when absent. */
  readonly handles?: TaskHandles;
  /**
   * Who the host is: every handle is sealed to it and refused to anyone else. Today the host
   * session (one per gateway process); a gateway serving several principals gives each its own.
   */
  readonly owner: () => string;
  readonly upstreams: () => readonly TaskUpstream[];
  /** The pipeline, which every request about a task passes as a message of its own. */
  readonly pipeline: Next;
  /** How the requests of this connection are stamped (eras, host, principal) for their records. */
  readonly stamp?: (server: string) => Partial<RoutedMessage>;
  /**
   * Whether other principals' connections share `server`'s tasks (one process serving everyone
   * behind the HTTP listener): its task list and status notifications then carry only the tasks
   * this connection created, so no principal learns of, or gets a handle to, another's task.
   */
  readonly sharedServer?: (server: string) => boolean;
  /** How the host's tasks look (its dialect's); a 2025-11-25 host's when absent (tests). */
  readonly dialect?: () => HostTaskDialect;
}

/** Tools of tasks remembered (for repairing their results); the oldest are forgotten first. */
export const MAX_REMEMBERED_TASKS = 10_000;

/**
 * What one host connection knows of its tasks: the handle of each (handles.ts), the tool that
 * runs it, whether the host runs tasks itself, and how a task request is made a routed message.
 * Everything that names a task on its way to the host is re-tagged to its handle here, and
 * everything that names a handle on its way upstream back to the upstream's id.
 */
export class TaskBook {
  readonly handles: TaskHandles;
  /** Whether the host declared the `tasks` capability (see TaskCreation). */
  hostRunsTasks = false;
  /** `server\0taskId` → the upstream's tool name, so `tasks/result` can be repaired against it. */
  private readonly tools = new Map<string, string>();

  constructor(private readonly options: TaskBookOptions) {
    this.handles = options.handles ?? new TaskHandles();
  }

  owner(): string {
    return this.options.owner();
  }

  upstreams(): readonly TaskUpstream[] {
    return this.options.upstreams();
  }

  upstream(server: string): TaskUpstream | undefined {
    return this.options.upstreams().find((u) => u.name === server);
  }

  /** The host's task dialect, as its era is now. */
  dialect(): HostTaskDialect {
    return this.options.dialect?.() ?? LEGACY_HOST_TASKS;
  }

  /** The handle of `server`'s task `taskId`, as this host knows it. */
  handle(server: string, taskId: string): string {
    return this.handles.handle({ server, taskId, owner: this.options.owner() });
  }

  /** The task `handle` names, when it is a handle this host was given; undefined otherwise. */
  openHandle(handle: string): TaskRef | undefined {
    return this.handles.openHandle(handle, this.options.owner());
  }

  /** The handle a host must present, opened; a -32602 naming the method otherwise. */
  open(handle: unknown, method: string): TaskRef {
    if (typeof handle !== 'string')
      throw new InvalidParamsError(`${method} needs params.taskId (a task handle from mcp-warden)`);
    const ref = this.openHandle(handle);
    if (ref === undefined)
      throw new InvalidParamsError(
        `${method}: unknown task ${JSON.stringify(handle.length > 80 ? `${handle.slice(0, 80)}…` : handle)}; ` +
          'it is not a task handle this mcp-warden session gave (altered, or from before a restart)',
      );
    return ref;
  }

  /** Notes that this host started `server`'s task `taskId` with `tool`. */
  remember(server: string, taskId: string, tool: string): void {
    remember(this.tools, key(server, taskId), tool);
  }

  /** Whether this host started `server`'s task `taskId` (it knows which tool runs it). */
  ownsTask(server: string, taskId: string): boolean {
    return this.tools.has(key(server, taskId));
  }

  /** Whether this host may see `server`'s task `taskId`: any, unless others share the server. */
  mayKnow(server: string, taskId: string): boolean {
    return this.options.sharedServer?.(server) !== true || this.ownsTask(server, taskId);
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
      const ref = this.openHandle(handle);
      return ref?.server === server ? ref.taskId : undefined;
    });
  }

  /** `result` with its related-task `_meta` re-tagged for the host. */
  resultForHost(server: string, result: Params): Params {
    const meta = result._meta as Params | undefined;
    if (meta === undefined) return result;
    const retagged = this.metaForHost(server, meta);
    const { _meta: _old, ...rest } = result;
    return retagged === undefined ? rest : { ...rest, _meta: retagged };
  }

  /** A task result (`tasks/get`, `tasks/cancel`, `tasks/result`) with its ids turned into the handle. */
  taskResultForHost(ref: TaskRef, outcome: Outcome): Outcome {
    const result = outcome.result;
    const hasId = typeof result.taskId === 'string';
    const meta = result._meta as Params | undefined;
    if (!hasId && (meta === undefined || !Object.hasOwn(meta, RELATED_TASK))) return outcome;
    const retagged = this.resultForHost(ref.server, result);
    return outcome.changed(
      hasId ? { ...retagged, taskId: this.handle(ref.server, result.taskId as string) } : retagged,
    );
  }

  /**
   * A task request as a routed message. Towards an upstream it carries the host's meta (its
   * related-task handle translated) and progress; towards the host, neither of the server's.
   */
  message(
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
   * A request about the task `ref` (the host's, when there is one) on its way upstream, naming
   * the tool that runs the task, so stages judge it as they judged the call.
   */
  aboutTask(
    request: IncomingRequest | undefined,
    kind: MessageKind,
    ref: TaskRef,
    handle: string,
    params: Params,
  ): RoutedMessage {
    const tool = this.tools.get(key(ref.server, ref.taskId));
    const upstream = this.upstream(ref.server);
    return derive(this.message(request, kind, 'upstream', ref.server, params), {
      target: tool ?? '',
      exposedName: handle,
      definition: tool === undefined ? undefined : upstream?.tools.find((t) => t.name === tool),
    });
  }

  /**
   * A request a bridge or relay makes about the task `message` is about: through the pipeline as
   * a message of its own, with its own signal when it has one.
   */
  resend(message: RoutedMessage, method: string, sent: Params, signal: Cancellation | undefined) {
    return this.options.pipeline(
      derive(message, {
        kind: method as MessageKind,
        params: sent,
        arguments: sent,
        ...(signal !== undefined && { signal, onProgress: undefined }),
      }),
    );
  }
}

/** Sets `key` in a map of at most MAX_REMEMBERED_TASKS entries, forgetting the oldest first. */
export function remember(map: Map<string, string>, key: string, value: string): void {
  if (!map.has(key) && map.size >= MAX_REMEMBERED_TASKS) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
  map.set(key, value);
}

function key(server: string, taskId: string): string {
  return `${server}\u0000${taskId}`;
}
