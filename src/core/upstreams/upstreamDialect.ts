import type { ServerConfig } from '../../config/types.js';
import { describeError } from '../../lib/describeError.js';
import { UpstreamRpcError } from '../errors.js';
import type { Logger } from '../logger.js';
import { META, withEnvelope, withoutEnvelope } from '../protocol/envelope.js';
import { RpcErrorCode, type JsonRpcNotification, type Params } from '../protocol/jsonRpc.js';
import { paramHeadersOf } from '../protocol/paramHeaders.js';
import { declaresTasks, TASKS_EXTENSION } from '../protocol/taskMessages.js';
import type { CancelSignal } from '../rpc/cancellation.js';
import { Outcome } from '../rpc/outcome.js';
import type { OutgoingOptions, RpcPeer } from '../rpc/peer.js';
import { ResourceStreams } from './resourceStreams.js';
import type { UpstreamEra } from './upstreamEra.js';

/**
 * How one connection to an upstream speaks its protocol era, returned by the handshake. It
 * answers every question that differs between the eras, so the code around it never asks which
 * era it is: how a request is enveloped, which listed tools can be kept, how list changes and
 * resource updates arrive, how a task's status is watched. A server's questions to the client
 * arrive the same way in both eras on this side (requests on the connection; a modern server's
 * input requests ride in its answers and are the router's to handle).
 */
export interface UpstreamDialect {
  /** For code outside the upstream that still tells the eras apart by name. */
  readonly era: UpstreamEra;
  /** Whether the next connection probes with `server/discover` before `initialize`. */
  readonly probesFirst: boolean;
  /** A request of the gateway's own, shaped for this era. */
  request(
    method: string,
    params: Params | undefined,
    options?: OutgoingOptions,
  ): Promise<Record<string, unknown>>;
  /** A routed request, answered as an outcome that still holds the upstream's bytes. */
  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome>;
  /** A notification from the server as the rest of the gateway should see it; undefined: ours alone. */
  received(notification: JsonRpcNotification): JsonRpcNotification | undefined;
  /** Whether a listed tool can be offered (over the modern HTTP binding, its headers must be valid). */
  keepsTool(tool: Record<string, unknown>): boolean;
  /** Starts hearing of list changes, once the lists are fetched; `current` tells whether it still matters. */
  listenForChanges(capabilities: Params, current: () => boolean): void;
  /** Subscribes to a resource's updates on a fresh connection (restoring the host's subscriptions). */
  subscribe(uri: string, signal: CancelSignal): Promise<unknown>;
  /** Has the server push the status of its task; resolves whether it will be heard. */
  watchTask(taskId: string, capabilities: Params): Promise<boolean>;
  unwatchTask(taskId: string): void;
}

const SUBSCRIBE = 'resources/subscribe';
const UNSUBSCRIBE = 'resources/unsubscribe';
const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
const TASK_STREAM_STATUS = 'notifications/tasks';

/**
 * A notification as a legacy connection (or one whose era is not known yet) passes it on: the
 * acknowledgment of a subscriptions/listen stream concerns no one else, and a task status of the
 * tasks extension has no stream here to come on (a task's status is `notifications/tasks/status`).
 */
export function receivedPlainly(notification: JsonRpcNotification): JsonRpcNotification | undefined {
  return notification.method === ACKNOWLEDGED || notification.method === TASK_STREAM_STATUS
    ? undefined
    : notification;
}

/** A server speaking 2025-11-25 or earlier, set up by `initialize`. */
export class LegacyDialect implements UpstreamDialect {
  readonly era = 'legacy';
  readonly probesFirst = false;

  constructor(private readonly session: RpcPeer) {}

  request(
    method: string,
    params: Params | undefined,
    options?: OutgoingOptions,
  ): Promise<Record<string, unknown>> {
    return this.session.request(method, withoutModernEnvelope(method, params), options);
  }

  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> {
    return this.session.requestOutcome(method, withoutModernEnvelope(method, params), options);
  }

  received(notification: JsonRpcNotification): JsonRpcNotification | undefined {
    return receivedPlainly(notification);
  }

  keepsTool(): boolean {
    return true;
  }

  /** A legacy server sends list_changed on the connection unasked. */
  listenForChanges(): void {}

  subscribe(uri: string, signal: CancelSignal): Promise<unknown> {
    return this.session.request(SUBSCRIBE, { uri }, { signal });
  }

  /** A legacy server sends the status of every task on the connection unasked. */
  watchTask(): Promise<boolean> {
    return Promise.resolve(true);
  }

  unwatchTask(): void {}
}

/**
 * A legacy server never sees a modern host's envelope keys. Left out rather than deleted: an
 * object with a deleted member is slow to copy and serialise.
 */
function withoutModernEnvelope(method: string, params: Params | undefined): Params | undefined {
  const own = params?._meta as Params | undefined;
  if (own === undefined || method === 'initialize') return params;
  const rest = withoutEnvelope(own);
  if (rest === own) return params;
  if (rest === undefined) {
    // Only the envelope: a copy with `_meta` undefined, which serialising leaves out as if it
    // were absent. Cloning an object whole is far cheaper than copying it less one member.
    const sent = { ...params };
    sent._meta = undefined;
    return sent;
  }
  const { _meta: _envelope, ...sent } = params!;
  sent._meta = rest;
  return sent;
}

/** What outlives one connection to a modern server: the log level asked for. */
export interface ModernMemory {
  /** Sent with each request (a modern server has no setLevel). */
  logLevel: string | undefined;
}

export interface ModernDialectOptions {
  readonly session: RpcPeer;
  /** The envelope sent with every request (this connection's capabilities). */
  readonly meta: Params;
  readonly config: ServerConfig;
  readonly memory: ModernMemory;
  readonly log: Logger;
  /** How long a subscriptions/listen stream gets to be acknowledged. */
  readonly timeoutMs: number;
}

/** A server speaking 2026-07-28: every request carries the envelope; changes arrive on streams. */
export class ModernDialect implements UpstreamDialect {
  readonly era = 'modern';
  readonly probesFirst = true;
  /** This connection's resource update and task status streams. */
  private readonly streams: ResourceStreams;

  constructor(private readonly options: ModernDialectOptions) {
    const { session, timeoutMs, config, log } = options;
    this.streams = new ResourceStreams({
      open: (notifications, streamOptions) => {
        const params = this.params('subscriptions/listen', { notifications })!;
        // Task statuses are the tasks extension's: the stream's request must declare it.
        if (notifications.taskIds !== undefined) params._meta = withTasksExtension(params._meta as Params);
        return session.request('subscriptions/listen', params, streamOptions);
      },
      timeoutMs,
      server: config.name,
      log,
    });
  }

  request(
    method: string,
    params: Params | undefined,
    options?: OutgoingOptions,
  ): Promise<Record<string, unknown>> {
    if (method === 'logging/setLevel') {
      // The stateless revision sets the level per request: it rides on every request from now on.
      this.options.memory.logLevel = typeof params?.level === 'string' ? params.level : undefined;
      return Promise.resolve({});
    }
    return this.options.session.request(method, this.params(method, params), options);
  }

  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> {
    if (method === SUBSCRIBE || method === UNSUBSCRIBE) return this.subscribeByStream(method, params);
    return this.options.session.requestOutcome(method, this.params(method, params), options);
  }

  received(notification: JsonRpcNotification): JsonRpcNotification | undefined {
    if (notification.method === ACKNOWLEDGED) {
      this.streams.acknowledged(notification.params);
      return undefined;
    }
    // A modern server tags what it sends on a stream with the stream's id, ours and no one else's.
    return withoutSubscriptionId(notification);
  }

  /**
   * Whether a tool's `x-mcp-header` annotations follow the HTTP binding's rules. Over HTTP a
   * client must leave out a tool whose annotations do not (its calls could not be mirrored
   * faithfully), and say why; the rest of the server's tools stay.
   */
  keepsTool(tool: Record<string, unknown>): boolean {
    if (this.options.config.transport !== 'http') return true;
    const mirrored = paramHeadersOf(tool.inputSchema);
    if (!('invalid' in mirrored)) return true;
    this.options.log.warn(`left out tool ${JSON.stringify(tool.name)}: ${mirrored.invalid}`);
    return false;
  }

  /**
   * A modern server tells of list changes only on a `subscriptions/listen` stream: one is
   * opened for the lists it says change. It lives as long as the connection.
   */
  listenForChanges(capabilities: Params, current: () => boolean): void {
    const notifications: Params = {};
    for (const [capability, field] of [
      ['tools', 'toolsListChanged'],
      ['prompts', 'promptsListChanged'],
      ['resources', 'resourcesListChanged'],
    ] as const) {
      const declared = capabilities[capability] as Params | undefined;
      if (declared?.listChanged === true) notifications[field] = true;
    }
    if (Object.keys(notifications).length === 0) return;
    this.options.session
      .request('subscriptions/listen', this.params('subscriptions/listen', { notifications }))
      .catch((error: unknown) => {
        if (current())
          this.options.log.warn(`its subscriptions/listen stream ended: ${describeError(error)}`);
      });
  }

  /** A modern server has no resources/subscribe: each URI gets its subscriptions/listen stream. */
  subscribe(uri: string): Promise<unknown> {
    return this.streams.subscribe(uri);
  }

  /**
   * With the tasks extension, the server pushes the task's status (`notifications/tasks`, on a
   * stream of its own) until `unwatchTask`. A server that declines is logged, and the host polls.
   */
  watchTask(taskId: string, capabilities: Params): Promise<boolean> {
    if (!declaresTasks(capabilities)) return Promise.resolve(false);
    return this.streams.watchTask(taskId).then(
      () => true,
      (error: unknown) => {
        this.options.log.info(`no status notifications for task ${taskId}: ${describeError(error)}`);
        return false;
      },
    );
  }

  unwatchTask(taskId: string): void {
    this.streams.unwatchTask(taskId);
  }

  /** Params with the envelope, as a modern server wants every request. */
  private params(method: string, params: Params | undefined): Params | undefined {
    const { meta, memory, config } = this.options;
    const level = memory.logLevel;
    let sent = level === undefined ? meta : { ...meta, [META.logLevel]: level };
    // A modern host's own request declares what it can be asked; the server is told that
    // (less what the config refuses it), not what the connection could do.
    const declared = (params?._meta as Params | undefined)?.[META.clientCapabilities];
    if (typeof declared === 'object' && declared !== null)
      sent = { ...sent, [META.clientCapabilities]: allowedCapabilities(declared as Params, config) };
    // A 2025-11-25 host's call run as a task: this revision has no `task` param; declaring the
    // tasks extension on the call is how a client lets the server answer with a task.
    if (method === 'tools/call' && params?.task !== undefined) {
      const { task: _task, ...rest } = params;
      params = rest;
      sent = withTasksExtension(sent);
    }
    return withEnvelope(params, sent);
  }

  /**
   * A host's resources/subscribe (or unsubscribe), which a modern server does not have: answered
   * as a legacy server would, once the URI's update stream is acknowledged (or cancelled).
   */
  private async subscribeByStream(method: string, params: Params | undefined): Promise<Outcome> {
    const uri = params?.uri;
    if (typeof uri !== 'string')
      throw new UpstreamRpcError(
        this.options.config.name,
        RpcErrorCode.InvalidParams,
        `${method} needs params.uri (a string)`,
      );
    if (method === SUBSCRIBE) await this.streams.subscribe(uri);
    else this.streams.unsubscribe(uri);
    return Outcome.of({});
  }
}

/** An envelope whose client capabilities add the tasks extension. */
function withTasksExtension(meta: Params): Params {
  const capabilities = (meta[META.clientCapabilities] ?? {}) as Params;
  const extensions = (capabilities.extensions ?? {}) as Params;
  return {
    ...meta,
    [META.clientCapabilities]: { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } },
  };
}

/** A notification without the stream id a modern server tagged it with. */
function withoutSubscriptionId(notification: JsonRpcNotification): JsonRpcNotification {
  const meta = notification.params?._meta as Params | undefined;
  if (meta === undefined || !Object.hasOwn(meta, META.subscriptionId)) return notification;
  const { [META.subscriptionId]: _id, ...rest } = meta;
  const { _meta: _old, ...params } = notification.params!;
  return {
    ...notification,
    params: Object.keys(rest).length === 0 ? params : { ...params, _meta: rest },
  };
}

/** A host's declared capabilities less the requests the config refuses this server. */
function allowedCapabilities(declared: Params, config: ServerConfig): Params {
  const requests = config.clientRequests;
  const allowed: Params = { ...declared };
  for (const name of ['sampling', 'elicitation', 'roots'] as const)
    if (requests[name] === false) delete allowed[name];
  return allowed;
}
