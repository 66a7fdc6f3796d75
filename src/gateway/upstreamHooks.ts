import type { HttpServerConfig, ServerConfig } from '../config/types.js';
import { InitializedHostSession, type HostSession } from '../core/host/hostSession.js';
import type { Logger } from '../core/logger.js';
import type { Principal } from '../core/principal.js';
import { RpcErrorCode, type JsonRpcNotification } from '../core/protocol/jsonRpc.js';
import { askerOf } from '../core/routing/questionRouting.js';
import type { Feature } from '../core/routing/feature.js';
import type { IncomingRequest } from '../core/rpc/peer.js';
import type { MessageTransport } from '../core/rpc/transport.js';
import type { HttpAuthorization } from '../core/transports/httpTransport.js';
import type { ListKind, Upstream, UpstreamLifecycleEvent } from '../core/upstreams/upstream.js';
import type { PrincipalView } from '../core/upstreams/principalPools.js';
import type { UpstreamSignIn } from '../core/upstreams/signIn.js';
import { firstOf, userKey, type Connection, type HostConnections } from './hosts.js';

/** What every pool's upstreams need of the gateway, whoever their events reach. */
export interface UpstreamHookDeps {
  readonly logger: Logger;
  readonly version: string;
  readonly features: readonly Feature[];
  /** Which connection last sent each upstream a request, and what each has in flight there. */
  readonly hosts: Pick<HostConnections, 'lastUser' | 'callsInFlight'>;
  /** Whether hosts connect over the HTTP listener (then there may be several). */
  readonly listening: boolean;
  /** Records an upstream's lifecycle event for `principal`; undefined when nothing records them. */
  readonly record?: (event: UpstreamLifecycleEvent, principal: Principal) => void;
  /** A connection to an upstream instead of starting it as configured (in-process embedding). */
  readonly connectUpstream?: (server: ServerConfig, principal?: Principal) => MessageTransport | undefined;
  /** How the user signs in to a server that may ask for it (OAuth); undefined for the others. */
  readonly signInFor?: (server: ServerConfig) => UpstreamSignIn | undefined;
  /** OAuth for HTTP servers that ask for a sign-in, with a principal's tokens (upstreamAuth). */
  readonly authorizationFor?: (
    server: HttpServerConfig,
    principal: Principal | undefined,
  ) => HttpAuthorization | undefined;
  /** An upstream's state or lists changed (for the live state `server list` shows). */
  readonly onUpstreamState?: () => void;
}

/** Whose events one pool's upstreams raise: every connection's, or one principal's. */
export interface HookReach {
  readonly view?: PrincipalView;
  readonly logger?: Logger;
  readonly connections: () => ReadonlySet<Connection>;
  readonly relist: (kinds: readonly ListKind[]) => void;
  readonly principal: Principal;
}

/** The connection whose host session `owner` is (see `IncomingRequest.postedFor`). */
function connectionOf(connections: ReadonlySet<Connection>, owner: object): Connection | undefined {
  for (const c of connections) if (c.router.host === owner) return c;
  return undefined;
}

/** Why a question tied to a call whose host connection has gone is put to no one. */
function ended(server: string, method: string): string {
  return `mcp-warden refuses ${method} from server "${server}": the host connection whose call it belongs to has closed, and it is put to no other`;
}

/** The host session of nobody: what upstreams are told when no host has connected yet. */
const NO_HOST: Pick<HostSession, 'capabilitiesFor'> = new InitializedHostSession(undefined as never);

/**
 * What a pool's upstreams tell the gateway, delivered to `reach.connections` only: every
 * connection for the shared pool, one principal's for that principal's own processes. The
 * upstreams are told what the first host can do (none yet when an HTTP listener starts them:
 * then only what the config fixes).
 */
export function upstreamHooks(deps: UpstreamHookDeps, reach: HookReach) {
  const first = () => firstOf(reach.connections());
  const lifecycle = deps.features.flatMap((f) => (f.onUpstreamLifecycle ? [f.onUpstreamLifecycle] : []));
  const { record } = deps;
  const { connectUpstream } = deps;
  // A principal's own connection is made with that principal's credentials.
  const own = reach.view?.principal;
  // Before the host's lists are rebuilt, so a feature (pins) sees each upstream's lists first.
  const review = (upstream: Upstream, kinds: readonly ListKind[]) => {
    for (const feature of deps.features) feature.onListsChanged?.(upstream, kinds);
  };
  return {
    ...(connectUpstream && { connect: (server: ServerConfig) => connectUpstream(server, own) }),
    ...(deps.signInFor && { signInFor: deps.signInFor }),
    ...(deps.authorizationFor && { authorizationFor: deps.authorizationFor }),
    ...(own && { principal: own }),
    logger: reach.logger ?? deps.logger,
    clientInfo: { name: 'mcp-warden', version: deps.version },
    clientCapabilities: (server: ServerConfig) =>
      (first()?.router.host ?? NO_HOST).capabilitiesFor(server.clientRequests),
    onReady: (upstream: Upstream) => {
      for (const c of reach.connections()) c.router.upstreamReady(upstream);
    },
    prefersModern: () => first()?.router.dialect.prefersModern ?? false,
    onListsChanged: (upstream: Upstream, kinds: readonly ListKind[]) => {
      review(upstream, kinds);
      reach.relist(kinds);
      deps.onUpstreamState?.();
    },
    batchLists: {
      review,
      relist: (kinds: readonly ListKind[]) => {
        reach.relist(kinds);
        deps.onUpstreamState?.();
      },
    },
    ...(deps.onUpstreamState && { onStateChange: deps.onUpstreamState }),
    onNotification: (upstream: Upstream, notification: JsonRpcNotification) => {
      for (const c of reach.connections()) c.router.upstreamNotification(upstream, notification);
    },
    // A server's question goes to the connection whose call caused it (questionRouting.ts).
    onRequest: (upstream: Upstream, request: IncomingRequest) => {
      const key = userKey(upstream.name, reach.view);
      const lastOrFirst = () => deps.hosts.lastUser.get(key) ?? first();
      const owner = request.postedFor;
      const posted = owner === undefined ? undefined : connectionOf(reach.connections(), owner);
      const to =
        owner !== undefined && posted === undefined
          ? ended(upstream.name, request.method)
          : askerOf({
              server: upstream.name,
              method: request.method,
              meta: request.meta,
              callers: deps.hosts.callsInFlight.callers(key),
              postedFor: posted,
              reachable: [...reach.connections()],
              ownsTask: (c, taskId) => c.router.ownsUpstreamTask(upstream.name, taskId),
              // Without a listener there is one host; a principal's own process serves one user.
              fallback: !deps.listening || reach.view !== undefined ? lastOrFirst : undefined,
            });
      if (typeof to !== 'string') return to.router.upstreamRequest(upstream, request);
      if (reach.connections().size === 0)
        return request.fail({ code: -32603, message: 'no host is connected to mcp-warden' });
      (reach.logger ?? deps.logger).warn(to);
      request.fail({ code: RpcErrorCode.InvalidRequest, message: to });
    },
    ...((record !== undefined || lifecycle.length > 0) && {
      onLifecycle: (event: UpstreamLifecycleEvent) => {
        record?.(event, reach.principal);
        for (const told of lifecycle) told(event);
      },
    }),
  };
}
