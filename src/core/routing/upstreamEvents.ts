import { isUiUri, exposedUiUri } from '../catalog/appUi.js';
import { MethodNotFoundError } from '../errors.js';
import type { HostDialect } from '../host/hostDialect.js';
import {
  CAPABILITY_FOR,
  TASK_FOLLOW_UPS,
  TASKS_LIST,
  type InitializedHostSession,
} from '../host/hostSession.js';
import type { Logger } from '../logger.js';
import type { JsonRpcNotification, Params } from '../protocol/jsonRpc.js';
import type { IncomingRequest, RpcPeer } from '../rpc/peer.js';
import type { TaskRouting } from '../tasks/taskRouting.js';
import type { Upstream } from '../upstreams/upstream.js';
import type { PoolView } from '../upstreams/upstreamPool.js';
import type { RouteBoundary } from './boundary.js';
import { followsHostRoots } from './clientRequests.js';
import type { HostRequests } from './hostRequests.js';
import type { TaskStatusFeed } from './taskStatusFeed.js';

/** Upstream notifications the host may hear outside a call (see HostDialect.forward). */
const FORWARDED_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/resources/updated',
  // A URL-mode elicitation finished out of band: the host may close what it opened for it.
  'notifications/elicitation/complete',
]);

/** Notifications the gateway keeps from the host on purpose, with the reason it logs. */
const NOT_FORWARDED: ReadonlyMap<string, string> = new Map([
  ['notifications/initialized', 'it concerns the connection between the gateway and that server'],
]);

/**
 * Forwarded notifications that a 2026-07-28 host learns of another way, with how: the log says
 * so rather than that something was lost.
 */
const MODERN_INSTEAD: ReadonlyMap<string, string> = new Map([
  [
    'notifications/elicitation/complete',
    'the host speaks 2026-07-28, which has no completion notification: it learns that a URL-mode ' +
      'elicitation is over from the answer to its retry of the request that asked it',
  ],
]);

export interface UpstreamEventsOptions {
  readonly peer: RpcPeer;
  /** The host's dialect, as the edge classified it. */
  readonly dialect: () => HostDialect;
  /** The legacy session, whose log level a (re)connected upstream is given. */
  readonly session: InitializedHostSession;
  readonly pool: PoolView;
  readonly tasks: TaskRouting;
  readonly feed: TaskStatusFeed;
  readonly boundary: RouteBoundary;
  readonly hostRequests: HostRequests;
  readonly logger: Logger;
}

/**
 * What upstreams tell and ask the host, and the host's notifications for upstreams: each upstream
 * notification is forwarded, translated or kept back (saying why); each request an upstream makes
 * of the client is routed through the pipeline to the host.
 */
export class UpstreamEvents {
  constructor(private readonly options: UpstreamEventsOptions) {}

  /** An upstream (re)connected: give it the host's log level. */
  upstreamReady(upstream: Upstream): void {
    const level = this.options.session.logLevel;
    if (level !== undefined && upstream.capabilities.logging !== undefined)
      void upstream.request('logging/setLevel', { level }).catch(() => {});
  }

  /** A notification from an upstream that the host should see. */
  upstreamNotification(upstream: Upstream, notification: JsonRpcNotification): void {
    const { method, params } = notification;
    const dialect = this.options.dialect();
    if (method === 'notifications/message') {
      if (!dialect.wantsLog(params?.level)) return;
      // The host sees which server is talking: its name, then the server's own logger.
      const logger = typeof params?.logger === 'string' ? `${upstream.name}/${params.logger}` : upstream.name;
      this.options.peer.notify(method, { ...params, logger });
      return;
    }
    if (method === 'notifications/tasks/status') {
      this.options.feed.for(dialect).fromLegacyServer(upstream.name, params);
      return;
    }
    // A modern server's task status, on the stream the gateway opened for a task of the host's
    // (its dialect lets it through only on a connection that has such streams).
    if (method === 'notifications/tasks') {
      this.options.feed.for(dialect).fromModernServer(upstream, params);
      return;
    }
    if (FORWARDED_NOTIFICATIONS.has(method) && dialect.forward(method, withExposedUri(upstream.name, params)))
      return;
    // Said at info, not debug: a notification the host never gets is a behaviour users ask about.
    const why =
      NOT_FORWARDED.get(method) ??
      MODERN_INSTEAD.get(method) ??
      (FORWARDED_NOTIFICATIONS.has(method)
        ? 'the host speaks 2026-07-28, which has no such notification outside a subscription'
        : 'mcp-warden does not know this notification');
    this.options.logger.info(`did not forward ${truncated(method)} from ${upstream.name}: ${why}`);
  }

  /** A request an upstream made of the client: routed through the pipeline to the host. */
  upstreamRequest(upstream: Upstream, request: IncomingRequest): void {
    const { tasks, boundary } = this.options;
    if (TASK_FOLLOW_UPS.has(request.method)) {
      try {
        tasks.fromUpstream(upstream.name, request);
      } catch (error) {
        boundary.answerError(request, error);
      }
      return;
    }
    if (request.method === TASKS_LIST) {
      tasks
        .listForUpstream(upstream.name, request)
        .catch((error: unknown) => boundary.answerError(request, error));
      return;
    }
    if (!CAPABILITY_FOR.has(request.method)) {
      boundary.answerError(request, new MethodNotFoundError(`Method not found: ${request.method}`));
      return;
    }
    const message = this.options.hostRequests.message(
      upstream.name,
      request.method,
      withoutMeta(request.params),
      tasks.metaForHost(upstream.name, request.meta),
      request,
      request.id,
    );
    boundary.route(request, message, (outcome) => tasks.answerForUpstream(upstream.name, outcome));
  }

  /** A notification from the host, for the upstreams it concerns. */
  hostNotification(notification: JsonRpcNotification): void {
    const { pool } = this.options;
    if (notification.method === 'notifications/tasks/status') {
      // Only the server that had the host create the task hears of it, under its own handle.
      const routed = this.options.tasks.hostStatus(notification.params);
      if (routed !== undefined) pool.byName.get(routed.server)?.notify(notification.method, routed.params);
      return;
    }
    if (notification.method === 'notifications/roots/list_changed') {
      // A server whose roots the config fixes (or refuses) is never told about the host's.
      for (const upstream of pool.upstreams)
        if (followsHostRoots(upstream.config)) upstream.notify(notification.method);
    }
  }
}

/** A request's params without `_meta` (the message carries the sender's meta on its own). */
function withoutMeta(params: Params | undefined): Params | undefined {
  if (params === undefined || !Object.hasOwn(params, '_meta')) return params;
  const { _meta: _ignored, ...rest } = params;
  return rest;
}

/** A notification about an App's `ui://` resource, naming it as the host knows it. */
function withExposedUri(server: string, params: Params | undefined): Params | undefined {
  const uri = params?.uri;
  return typeof uri === 'string' && isUiUri(uri) ? { ...params, uri: exposedUiUri(server, uri) } : params;
}

/** A name from a peer, cut for a log line (a method name can be megabytes long). */
function truncated(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 200)}… (${text.length} characters)`;
}
