import type { GatewayConfig, HttpServerConfig, ServerConfig } from '../../config/types.js';
import { UpstreamFailedError, UpstreamRpcError } from '../errors.js';
import { describeError } from '../../lib/describeError.js';
import type { Logger } from '../logger.js';
import type { Principal } from '../principal.js';
import { RpcErrorCode, type JsonRpcNotification } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import { RpcPeer, type IncomingRequest } from '../rpc/peer.js';
import type { MessageTransport } from '../rpc/transport.js';
import type { HttpAuthorization } from '../transports/httpTransport.js';
import type { ConnectionFactory, UpstreamConnection } from './connection.js';
import { startupDeadline, type Handshake, type Handshaken } from './handshake.js';
import { LIST_KINDS, type ListKind, type ListSync } from './listSync.js';
import { needsSignIn } from './signIn.js';
import { receivedPlainly, type ModernMemory, type UpstreamDialect } from './upstreamDialect.js';

/** What an upstream is made of besides its options (see createUpstream.ts). */
export interface UpstreamParts {
  /** Opens each connection, by the server entry's transport. */
  readonly connections: ConnectionFactory;
  /** Learns each connection's era and what the server offers. */
  readonly handshake: Handshake;
  /** Fetches and keeps the server's lists. */
  readonly lists: ListSync;
}

/** One connection and the peer speaking over it. */
export interface Live {
  readonly session: RpcPeer;
  readonly connection: UpstreamConnection;
  /** Known once the handshake is done. */
  dialect?: UpstreamDialect;
}

export interface ConnectorOptions {
  readonly config: ServerConfig;
  readonly gateway: GatewayConfig;
  readonly log: Logger;
  readonly principal?: Principal;
  readonly authorizationFor?: (
    server: HttpServerConfig,
    principal: Principal | undefined,
  ) => HttpAuthorization | undefined;
  /** Aborted when the upstream stops for good: an attempt under way then gives up. */
  readonly stopSignal: AbortSignal;
  /** A notification the server sent, in the gateway's terms, other than a list change. */
  readonly onNotification: (notification: JsonRpcNotification) => void;
  /** The server said its lists changed, and these were fetched again. */
  readonly onRefreshed: (kinds: readonly ListKind[]) => void;
  /** Requests the server makes of the client, but ping; without it, they get "method not found". */
  readonly onRequest?: (request: IncomingRequest) => void;
  /** Whether `live` is still the connection the upstream serves with (changes are listened to until not). */
  readonly isCurrent: (live: Live) => boolean;
}

/**
 * Makes an upstream's connections, one attempt at a time: opens the connection, runs the
 * handshake and fetches the lists. It remembers what the server said in its last handshake, and
 * its dialect, for the process's life, so a restart skips the probe (and re-probes when the
 * assumption fails).
 */
export class Connector {
  /** What the server said in its last handshake; undefined before one. */
  spoken: Handshaken | undefined;
  private readonly memory: ModernMemory = { logLevel: undefined };
  /** The connection being set up, so a stop during a slow start can still end it. */
  private connecting: Live | undefined;

  constructor(
    private readonly options: ConnectorOptions,
    private readonly parts: UpstreamParts,
  ) {}

  /** One connection attempt. Rejects with a message that names the server and what went wrong. */
  async open(): Promise<Live> {
    const { config, gateway, log, principal, stopSignal } = this.options;
    const lists = this.parts.lists;
    const authorization =
      config.transport === 'http' ? this.options.authorizationFor?.(config, principal) : undefined;
    const connection = await this.parts.connections.connect({
      config,
      gateway,
      ...(principal && { principal }),
      log,
      paramHeaders: (name) => lists.paramHeaders(name),
      ...(authorization && { authorization }),
    });
    const { transport, what } = connection;
    transport.onerror = (error) => log.debug(`transport error: ${error.message}`);
    const live: Live = { session: this.peer(transport, () => live), connection };
    connection.attach(live.session);
    this.connecting = live;
    try {
      if (stopSignal.aborted) throw new UpstreamFailedError(config.name, 'the gateway is shutting down');
      await transport.start();
      lists.forgetHints();
      const spoken = await this.parts.handshake.run({
        session: live.session,
        transport,
        what,
        known: this.spoken?.dialect,
        memory: this.memory,
      });
      this.spoken = spoken;
      live.dialect = spoken.dialect;
      await lists.fetch(spoken, LIST_KINDS, (method) => startupDeadline(this.options, method, what));
      spoken.dialect.listenForChanges(spoken.capabilities, () => this.options.isCurrent(live));
      connection.running();
      this.connecting = undefined;
      return live;
    } catch (error) {
      throw await this.failed(error, live);
    }
  }

  /** Ends the attempt under way, if any (the upstream stops for good). */
  async abandon(reason: Error): Promise<void> {
    const live = this.connecting;
    this.connecting = undefined;
    if (live !== undefined) await close(reason, live);
  }

  /** Ends a failed attempt; the error to reject with. */
  private async failed(error: unknown, live: Live): Promise<Error> {
    this.connecting = undefined;
    // Not a failure of the server: kept as it is, so supervision knows to wait for a sign-in.
    if (needsSignIn(error)) {
      await close(error, live);
      return error;
    }
    // Every startup failure names what was started, whichever layer noticed it.
    const { what } = live.connection;
    const detail = error instanceof UpstreamFailedError ? error.detail : describeError(error);
    const wrapped = detail.includes(what)
      ? (error as Error)
      : new UpstreamFailedError(this.options.config.name, `${detail} (${what})`, { cause: error });
    // The child may have died: prefer the exit message, which carries its stderr.
    const exit = await Promise.race([live.connection.ended, delayValue(50, undefined)]);
    await close(exit ?? wrapped, live);
    return exit ?? wrapped;
  }

  /** The peer for a new connection; `live` gives the connection it serves once made. */
  private peer(transport: MessageTransport, live: () => Live): RpcPeer {
    const name = this.options.config.name;
    return new RpcPeer({
      transport,
      errors: {
        remote: (e) => new UpstreamRpcError(name, e.code, e.message, e.data),
        failed: (detail, cause) => new UpstreamFailedError(name, detail, { cause }),
        cancelled: (reason) => new Error(`cancelled by the server: ${reason}`),
      },
      onNotification: (n) => this.received(n, live()),
      onRequest: (request) => this.requested(request),
    });
  }

  private received(received: JsonRpcNotification, live: Live): void {
    const notification =
      live.dialect === undefined ? receivedPlainly(received) : live.dialect.received(received);
    if (notification === undefined) return;
    const kinds = this.parts.lists.changedBy(notification.method);
    if (kinds === undefined) return this.options.onNotification(notification);
    this.parts.lists.refreshSoon(kinds, (stale) => this.refresh(stale, live));
  }

  private async refresh(kinds: readonly ListKind[], live: Live): Promise<void> {
    if (live.dialect === undefined || !this.options.isCurrent(live)) return;
    const { lists } = this.parts;
    try {
      await lists.fetch({ dialect: live.dialect, capabilities: this.spoken?.capabilities ?? {} }, kinds);
      this.options.log.info(`list changed (${lists.describe()})`);
      this.options.onRefreshed(kinds);
    } catch (error) {
      this.options.log.warn(
        `could not refresh ${kinds.join(' and ')} after list_changed: ${describeError(error)}`,
      );
    }
  }

  /** A request the upstream made of the client: ping is answered here, the rest by the router. */
  private requested(request: IncomingRequest): void {
    if (request.method === 'ping') return request.respond(Outcome.of({}));
    if (this.options.onRequest !== undefined) return this.options.onRequest(request);
    request.fail({
      code: RpcErrorCode.MethodNotFound,
      message: `mcp-warden does not forward ${request.method}`,
    });
  }
}

/** Closes a connection: its calls in flight fail with `reason`, its process (if any) stops. */
export async function close(reason: Error, live: Live): Promise<void> {
  live.session.close(reason);
  await live.connection.close();
}

function delayValue<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms).unref());
}
