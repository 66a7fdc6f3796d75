import type { Catalogs } from '../core/catalog/catalogs.js';
import type { HostSession } from '../core/host/hostSession.js';
import type { Principal } from '../core/principal.js';
import { CallsInFlight } from '../core/routing/questionRouting.js';
import type { Router } from '../core/routing/router.js';
import type { MessageTransport } from '../core/rpc/transport.js';
import type { TaskMemory } from '../core/tasks/taskRouting.js';
import type { PrincipalView } from '../core/upstreams/principalPools.js';
import type { PoolView } from '../core/upstreams/upstreamPool.js';

/** One host connection the gateway serves (see `Gateway.connect`). */
export interface Connection {
  readonly router: Router;
  readonly transport: MessageTransport;
  readonly principal: Principal;
  /** Flushes what must be written before an answer leaves (the audit records of this turn). */
  readonly beforeWrite: () => void;
  /** Whether `requestState` continues one of this connection's calls waiting for a host's retry. */
  continuesCall(requestState: unknown): boolean;
  /** Notes that the retry continuing `requestState` reached replica `replica` first, which sent it on. */
  noteContinuedVia(requestState: unknown, replica: string): void;
  /** How long this connection still waits for a host's retry, or undefined if it does not. */
  retryWindowMs(): number | undefined;
  /** The `inputSchema` of a tool this connection lists under `name` (its mirrored arguments). */
  toolInputSchema(name: string): unknown;
  /** Stops taking requests, waits for those in flight, closes the transport. */
  close(): Promise<void>;
}

export interface ConnectOptions {
  /**
   * Whose tasks the connection's are: a handle is opened only by connections of the same owner.
   * By default the connection's own (a new id), which suits a connection that lasts; stateless
   * requests, each a connection of its own, name their principal instead, so a task one request
   * created can be polled by the next.
   */
  readonly taskOwner?: string;
  /**
   * The questions of the connection's tasks the gateway holds, when they must outlive it (the
   * stateless requests of one principal share them); the connection's own otherwise.
   */
  readonly taskMemory?: TaskMemory;
  /** The profile the host asked for by its listener path (`/mcp/<profile>`). */
  readonly profile?: string;
  /** The connection serves one request (the stateless HTTP revision): nothing is kept for later ones. */
  readonly stateless?: boolean;
}

/**
 * The host connections being served: stdio's one, and one per HTTP session. Config, policies,
 * audit, features, upstreams and catalogs are shared by all of them; each has its own peer, host
 * session (capabilities, log level, lists seen) and router.
 */
export interface HostConnections {
  readonly all: Set<Connection>;
  /**
   * Which connection last sent each upstream a request: where that upstream's own requests go.
   * Keyed by `userKey`.
   */
  readonly lastUser: Map<string, Connection>;
  /** Each connection's requests in flight on each upstream (keyed as `lastUser`). */
  readonly callsInFlight: CallsInFlight<Connection>;
  /** The hosts connected through the HTTP listener; the rest came over stdio. */
  readonly overHttp: WeakSet<HostSession>;
}

/**
 * The key of `HostConnections.lastUser`: the server name, and the principal too for a
 * principal's own processes (which are replaced when they idle out, so the key must outlive them).
 */
export function userKey(server: string, view: PrincipalView | undefined): string {
  return view !== undefined && view.ownsServer(server) ? `${view.key}\u0000${server}` : server;
}

/** No connection yet. */
export function hostConnectionSet(): HostConnections {
  return { all: new Set(), lastUser: new Map(), callsInFlight: new CallsInFlight(), overHttp: new WeakSet() };
}

/** The first of a set of connections that has initialized, else the first. */
export function firstOf(connections: ReadonlySet<Connection>): Connection | undefined {
  for (const c of connections) if (c.router.host.protocolVersion !== undefined) return c;
  return connections.values().next().value;
}

/**
 * What the connections of one principal share: their view of the upstreams (with their own
 * processes when hosts connect over HTTP) and the lists made from it.
 */
export interface Scope {
  readonly view: PoolView;
  readonly catalogs: Catalogs;
  readonly connections: Set<Connection>;
}
