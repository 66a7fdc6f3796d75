import type { GatewayConfig, ServerConfig } from '../../config/types.js';
import { UpstreamFailedError, UpstreamRpcError } from '../errors.js';
import type { Logger } from '../logger.js';
import { envelopeMeta } from '../protocol/envelope.js';
import type { Params } from '../protocol/jsonRpc.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/versions.js';
import type { OutgoingOptions, RpcPeer } from '../rpc/peer.js';
import type { MessageTransport } from '../rpc/transport.js';
import { LegacyDialect, ModernDialect, type ModernMemory, type UpstreamDialect } from './upstreamDialect.js';
import { PROBE_MS, probeModern, serverInfoOf } from './upstreamEra.js';

/** What a server said of itself in the handshake, and the dialect to speak to it in. */
export interface Handshaken {
  readonly dialect: UpstreamDialect;
  readonly protocolVersion: string;
  readonly capabilities: Params;
  readonly instructions: string | undefined;
  readonly serverInfo: { readonly name: string; readonly version: string } | undefined;
}

export interface HandshakeOptions {
  readonly config: ServerConfig;
  readonly gateway: GatewayConfig;
  readonly log: Logger;
  readonly clientInfo: { readonly name: string; readonly version: string };
  /**
   * The client capabilities to declare to this upstream: the host's sampling, elicitation and
   * roots, so servers that offer tools only to capable clients do so. Read at connect.
   */
  readonly clientCapabilities?: (config: ServerConfig) => Params;
  /**
   * Whether to probe a server of unknown era with `server/discover` before `initialize` (true
   * while the host itself speaks the stateless revision). Otherwise `initialize` goes first, as
   * it always has, and a server that refuses it is probed then.
   */
  readonly prefersModern?: () => boolean;
}

/** One connection's peer and transport, the handshake's subject. */
export interface HandshakeSubject {
  readonly session: RpcPeer;
  readonly transport: MessageTransport;
  /** What was started or reached, for messages. */
  readonly what: string;
  /** The dialect of the server's last connection: a restart skips the probe it made needless. */
  readonly known: UpstreamDialect | undefined;
  /** What a modern dialect keeps across connections. */
  readonly memory: ModernMemory;
}

/** The transport's switch between the bindings of the two eras (only HTTP has one). */
interface Binding {
  setModern?(modern: boolean): void;
  setProtocolVersion?(version: string): void;
}

/**
 * Learns a server's era and what it offers: `server/discover` first (modern), `initialize` on a
 * legacy answer or silence. A server known legacy from its last connection is initialized at
 * once, and probed only if that fails.
 */
export class Handshake {
  constructor(private readonly options: HandshakeOptions) {}

  async run(subject: HandshakeSubject): Promise<Handshaken> {
    const { config, prefersModern, log } = this.options;
    const capabilities = this.options.clientCapabilities?.(config) ?? {};
    // Over Streamable HTTP a server of unknown era is asked the modern way first, as that
    // binding's compatibility rules suggest (a refusal there is an HTTP 400 whose body tells a
    // modern server from a legacy one). Over stdio the probe goes first while the host is modern.
    const probeFirst =
      subject.known?.probesFirst ?? (config.transport === 'http' || prefersModern?.() === true);
    if (probeFirst) {
      const discovered = await this.discover(subject, capabilities);
      if (discovered !== undefined) return discovered;
      if (subject.known?.probesFirst === true)
        log.warn('no longer answers server/discover as a modern server; initializing it');
      try {
        return await this.initialize(subject, capabilities);
      } catch (error) {
        // A server slow to start (an interpreter, a package being fetched) can answer the probe
        // after its bound: a dual-era one has then chosen the modern era and refuses initialize.
        // Asked again it answers at once, being up by now.
        if (!(error instanceof UpstreamRpcError)) throw error;
        log.info(`refused initialize after the probe (${error.message}); probing it again`);
        const late = await this.discover(subject, capabilities);
        if (late === undefined) throw error;
        return late;
      }
    }
    try {
      return await this.initialize(subject, capabilities);
    } catch (error) {
      // A server that refuses initialize may be modern-only (or have become so): probe it.
      if (!(error instanceof UpstreamRpcError)) throw error;
      log.info(`refused initialize (${error.message}); probing it with server/discover`);
      const modern = await this.discover(subject, capabilities);
      if (modern === undefined) throw error;
      return modern;
    }
  }

  /** The probe: what a modern server said, or undefined when it is not one. */
  private async discover(subject: HandshakeSubject, capabilities: Params): Promise<Handshaken | undefined> {
    const { config, gateway, clientInfo, log } = this.options;
    const meta = envelopeMeta({ clientInfo, capabilities });
    // An HTTP connection speaks the modern binding for the probe, and after it if it answers.
    const binding = subject.transport as Binding;
    binding.setModern?.(true);
    const discovered = await probeModern({
      session: subject.session,
      server: config.name,
      meta,
      timeoutMs: Math.min(PROBE_MS, gateway.connectTimeoutMs),
    });
    if (discovered === undefined) {
      binding.setModern?.(false);
      return undefined;
    }
    const dialect = new ModernDialect({
      session: subject.session,
      meta,
      config,
      memory: subject.memory,
      log,
      timeoutMs: gateway.connectTimeoutMs,
    });
    return { dialect, ...discovered };
  }

  private async initialize(subject: HandshakeSubject, capabilities: Params): Promise<Handshaken> {
    const { config, clientInfo } = this.options;
    const { session, what } = subject;
    const init = await session.request(
      'initialize',
      { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities, clientInfo },
      startupDeadline(this.options, 'initialize', what),
    );
    const version = init.protocolVersion;
    if (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      throw new UpstreamFailedError(
        config.name,
        `answered initialize with unsupported protocol version ${JSON.stringify(version)} (${what})`,
      );
    }
    (subject.transport as Binding).setProtocolVersion?.(version);
    const declared = init.capabilities;
    session.notify('notifications/initialized');
    return {
      dialect: new LegacyDialect(session),
      protocolVersion: version,
      capabilities: typeof declared === 'object' && declared !== null ? (declared as Params) : {},
      instructions: typeof init.instructions === 'string' ? init.instructions : undefined,
      serverInfo: serverInfoOf(init.serverInfo as Params | undefined),
    };
  }
}

/**
 * While connecting, each request gets `connectTimeout` to be answered; a server given a longer
 * start-up than the gateway's window (a launcher, by default, or its own `startupTimeout`) gets
 * at least that: a launcher installing packages answers nothing until it is done, and giving up
 * on it then would stop it mid-install.
 */
export function startupDeadline(
  options: { readonly config: ServerConfig; readonly gateway: GatewayConfig },
  method: string,
  what: string,
): OutgoingOptions {
  const { gateway, config } = options;
  const ms =
    config.startupTimeoutMs > gateway.startupTimeoutMs
      ? Math.max(gateway.connectTimeoutMs, config.startupTimeoutMs)
      : gateway.connectTimeoutMs;
  return {
    deadlineMs: ms,
    deadlineError: () =>
      new UpstreamFailedError(options.config.name, `did not answer ${method} within ${ms} ms (${what})`),
  };
}
