import type { GatewayConfig, ServerConfig } from '../../config/types.js';
import { UpstreamFailedError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Principal } from '../principal.js';
import type { ParamHeader } from '../protocol/paramHeaders.js';
import type { RpcPeer } from '../rpc/peer.js';
import type { MessageTransport } from '../rpc/transport.js';
import type { ChildHandle } from '../transports/childProcess.js';
import type { HttpAuthorization } from '../transports/httpTransport.js';

/** What a connection factory needs to open one connection to the server of `config`. */
export interface ConnectOptions {
  readonly config: ServerConfig;
  readonly gateway: GatewayConfig;
  readonly log: Logger;
  /**
   * Whose credentials the connection carries, when it serves one principal only (a server they
   * each sign in to); undefined: the local user's.
   */
  readonly principal?: Principal;
  /** The mirrored arguments of the server's tool `name`, as last listed (the HTTP binding's headers). */
  readonly paramHeaders: (name: string) => readonly ParamHeader[];
  /** OAuth for an HTTP server that asks for a sign-in, with `principal`'s tokens. */
  readonly authorization?: HttpAuthorization;
}

/**
 * One connection to an upstream server, before any protocol is spoken on it: the transport, the
 * process behind it if the gateway started one, and how it ends.
 */
export interface UpstreamConnection {
  readonly transport: MessageTransport;
  readonly child: ChildHandle | undefined;
  /** What was started or reached, for messages: the command line or the URL. */
  readonly what: string;
  /** Settles when the connection ends, with what ended it. */
  readonly ended: Promise<Error>;
  /** The peer speaking over it: oversize recovery fails the one call a cut-off answer was for. */
  attach(peer: RpcPeer): void;
  /** Set up: from now on its end is described as happening while running. */
  running(): void;
  /** Closes the transport, or stops the process behind it. */
  close(): Promise<void>;
}

/**
 * Opens connections to one server. Chosen once per upstream by the server entry's transport;
 * each connection attempt (the first and every restart) asks it for a fresh connection.
 */
export interface ConnectionFactory {
  connect(options: ConnectOptions): Promise<UpstreamConnection>;
  /** Lets go of anything prepared ahead that no attempt took (a process spawned early). */
  release?(): Promise<void>;
}

/** How long a stopping child gets between SIGTERM and SIGKILL; shutdown must finish within 2 s. */
export const STOP_GRACE_MS = 800;

/**
 * The part every connection shares: its end, described by the phase it happened in, and the peer
 * that an oversize answer's call is failed on.
 */
export class ConnectionBase {
  readonly ended: Promise<Error>;
  protected peer: RpcPeer | undefined;
  protected phase = 'during startup';
  private settle!: (error: Error) => void;
  private endedWith: Error | undefined;

  constructor(readonly what: string) {
    this.ended = new Promise<Error>((resolve) => (this.settle = resolve));
  }

  attach(peer: RpcPeer): void {
    this.peer = peer;
    // Ended before anyone spoke on it (a process spawned ahead that died before the handshake):
    // the handshake fails now, with why, rather than waiting out its timeout.
    if (this.endedWith !== undefined) peer.close(this.endedWith);
  }

  running(): void {
    this.phase = 'while running';
  }

  /** Ends the connection: calls in flight on it fail with `error` at once. */
  end(error: Error): void {
    this.endedWith ??= error;
    this.peer?.close(error);
    this.settle(error);
  }
}

/** A connection made by an embedder (in-process tests): closing it is the server going away. */
class EmbeddedConnection extends ConnectionBase implements UpstreamConnection {
  readonly child = undefined;

  constructor(
    readonly transport: MessageTransport,
    server: string,
    what: string,
  ) {
    super(what);
    transport.onclose = () =>
      this.end(new UpstreamFailedError(server, `connection closed ${this.phase} (${what})`));
  }

  async close(): Promise<void> {
    await this.transport.close().catch(() => {});
  }
}

/** The command line or URL of a server entry, as messages name it. */
export function describeTarget(config: ServerConfig): string {
  return config.transport === 'stdio'
    ? `command: ${[config.command, ...config.args].join(' ')}`
    : `url: ${config.url}`;
}

/**
 * Connections through the embedder's `embed` when it gives one for this server, through
 * `otherwise` when it does not.
 */
export function embeddedOr(
  embed: (config: ServerConfig) => MessageTransport | undefined,
  otherwise: ConnectionFactory,
): ConnectionFactory {
  return {
    connect: (options) => {
      const given = embed(options.config);
      if (given === undefined) return otherwise.connect(options);
      return Promise.resolve(
        new EmbeddedConnection(given, options.config.name, describeTarget(options.config)),
      );
    },
    release: () => otherwise.release?.() ?? Promise.resolve(),
  };
}
