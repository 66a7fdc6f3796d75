/**
 * The gateway built in-process: the host and the upstreams connected through memory instead of
 * pipes, so a test can drive the whole router and pipeline with the SDK's own Client and
 * McpServer, with fake timers or fakes where it needs them, and no process to spawn.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { parseConfigText } from '../../src/config/load.js';
import type { ServerConfig } from '../../src/config/types.js';
import type { Logger } from '../../src/core/logger.js';
import { EncodedResult } from '../../src/core/rpc/encoded.js';
import {
  parseMessage,
  rawResultHead,
  serializeMessage,
  type JsonRpcMessage,
} from '../../src/core/protocol/jsonRpc.js';
import type { MessageExtra, MessageTransport, OutgoingMessage } from '../../src/core/rpc/transport.js';
import { openAuditLog, type AuditLog } from '../../src/features/audit/auditWriter.js';
import { createRedactor } from '../../src/features/audit/redact.js';
import { loadPolicies } from '../../src/features/policy/loadPolicies.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway/gateway.js';

/**
 * One end of an in-memory connection. Messages cross as text, as they would over a pipe, so the
 * receiving side sees the line it parsed (the byte-forwarding path runs as it does on stdio).
 * Delivery waits a microtask, so neither side is re-entered from inside its own send.
 */
export class MemoryTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  other!: MemoryTransport;
  private closed = false;
  /** Every line this end sent, for tests that look at the wire. */
  readonly sent: string[] = [];
  /**
   * What this end says beside a message it delivers, besides the line (as the HTTP session
   * transport says that a request runs again a call taken over from a replica that died).
   */
  besides: ((message: JsonRpcMessage) => Omit<MessageExtra, 'line'> | undefined) | undefined;

  static pair(): [MemoryTransport, MemoryTransport] {
    const a = new MemoryTransport();
    const b = new MemoryTransport();
    a.other = b;
    b.other = a;
    return [a, b];
  }

  async start(): Promise<void> {}

  send(message: OutgoingMessage): Promise<void> {
    this.sendLine(
      message instanceof EncodedResult
        ? `${rawResultHead(message.id)}${message.text}}`
        : serializeMessage(message as JsonRpcMessage),
    );
    return Promise.resolve();
  }

  /** Sends one line exactly as given, as a peer writing its own JSON would. */
  sendLine(line: string): void {
    if (this.closed) return;
    this.sent.push(line);
    queueMicrotask(() => this.other.receive(line));
  }

  private receive(line: string): void {
    if (this.closed) return;
    const parsed = parseMessage(line);
    if (parsed.ok) {
      const besides = this.besides?.(parsed.message);
      this.onmessage?.(parsed.message, besides === undefined ? { line } : { ...besides, line });
    } else this.onerror?.(new Error(`not a message: ${parsed.reason}`));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
    void this.other.close();
  }
}

/** The SDK's Transport over one memory end, for the SDK Client and McpServer. */
export function sdkTransport(end: MemoryTransport): Transport {
  const transport: Transport = {
    start: () => end.start(),
    send: (message) => end.send(message as unknown as JsonRpcMessage),
    close: () => end.close(),
  };
  end.onmessage = (message) => transport.onmessage?.(message as never);
  end.onclose = () => transport.onclose?.();
  end.onerror = (error) => transport.onerror?.(error);
  return transport;
}

/** A logger that keeps what it was told, so a test can read the gateway's log. */
export function memoryLogger(lines: string[] = []): Logger & { lines: string[] } {
  const logger = {
    lines,
    error: (m: string) => void lines.push(`error: ${m}`),
    warn: (m: string) => void lines.push(`warn: ${m}`),
    info: (m: string) => void lines.push(`info: ${m}`),
    debug: () => {},
    child: () => logger,
  };
  return logger as unknown as Logger & { lines: string[] };
}

export interface InProcessGateway {
  /** The temp dir the config and `files` are in. */
  readonly dir: string;
  readonly gateway: Gateway;
  readonly client: Client;
  /** Every line the gateway wrote to the host. */
  hostLines(): readonly string[];
  readonly log: string[];
  /** The audit file, when the config has `audit:`. */
  readonly auditFile: string | undefined;
  /** The audit records written so far. */
  auditRecords(): Record<string, unknown>[];
  close(): Promise<void>;
}

/** How a test builds the gateway: its config, its upstreams and its files. */
export interface InProcessOptions {
  readonly config: string;
  /** Per server: an McpServer to connect, or the gateway's end of a connection the test drives. */
  readonly upstreams: Readonly<Record<string, () => McpServer | MemoryTransport>>;
  /** Files to write in the temp dir before the config is read, by path relative to it. */
  readonly files?: Readonly<Record<string, string>>;
  /** Connects the servers `upstreams` does not name, for the principal each connection serves. */
  readonly connectUpstream?: GatewayOptions['connectUpstream'];
  /** How users sign in to the servers that ask for it (see GatewayOptions.signInFor). */
  readonly signInFor?: GatewayOptions['signInFor'];
  /** What the gateway's host transport says beside a host's message (see MemoryTransport.besides). */
  readonly hostBesides?: MemoryTransport['besides'];
}

/** A started gateway, the host's end of its connection still free for a client of any era. */
interface Built {
  readonly dir: string;
  readonly gateway: Gateway;
  readonly hostEnd: MemoryTransport;
  readonly clientEnd: MemoryTransport;
  readonly log: string[];
  readonly auditFile: string | undefined;
  auditRecords(): Record<string, unknown>[];
  closeServers(): Promise<void>;
}

/**
 * Builds a gateway from config text (YAML, written relative to a fresh temp dir) and connects
 * each server named in `upstreams` to the McpServer made for it. Servers in the config that
 * `upstreams` does not name are started as configured.
 */
async function build(options: InProcessOptions): Promise<Built> {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-inproc-'));
  for (const [name, text] of Object.entries(options.files ?? {})) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  const { config } = parseConfigText(options.config, { file: path.join(dir, 'proxy.config.yaml'), env: {} });
  const logger = memoryLogger();
  const redactor = createRedactor(
    config.audit
      ? { secretKeys: config.audit.redact.keys, secretPatterns: config.audit.redact.patterns }
      : {},
  );
  const policies = await loadPolicies(config.policies);
  let audit: AuditLog | undefined;
  if (config.audit !== undefined)
    audit = await openAuditLog({
      file: config.audit.file ?? path.join(dir, 'audit.jsonl'),
      onFailure: config.audit.onFailure,
      writes: 'per-tick',
      redactor,
    });
  const [hostEnd, clientEnd] = MemoryTransport.pair();
  hostEnd.besides = options.hostBesides;
  const servers: McpServer[] = [];
  const gateway = createGateway({
    config,
    logger,
    host: hostEnd,
    version: 'test',
    policies,
    redactor,
    ...(audit && { audit }),
    ...(options.signInFor && { signInFor: options.signInFor }),
    connectUpstream: (server: ServerConfig, principal) => {
      const make = options.upstreams[server.name];
      if (make === undefined) return options.connectUpstream?.(server, principal);
      const mcp = make();
      if (mcp instanceof MemoryTransport) return mcp;
      const [gatewayEnd, serverEnd] = MemoryTransport.pair();
      servers.push(mcp);
      void mcp.connect(sdkTransport(serverEnd));
      return gatewayEnd;
    },
  });
  await gateway.start();
  const auditFile = config.audit?.file;
  return {
    dir,
    gateway,
    hostEnd,
    clientEnd,
    log: logger.lines,
    auditFile,
    auditRecords: () => {
      if (auditFile === undefined) return [];
      audit?.flush();
      return readLines(auditFile);
    },
    closeServers: async () => {
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}

/** The gateway built in-process (see `build`), with the SDK Client as its host. */
export async function startInProcess(
  options: InProcessOptions & {
    readonly client?: ConstructorParameters<typeof Client>[1];
    readonly beforeConnect?: (client: Client) => void;
  },
): Promise<InProcessGateway> {
  const built = await build(options);
  const client = new Client({ name: 'in-process host', version: '1' }, options.client);
  options.beforeConnect?.(client);
  await client.connect(sdkTransport(built.clientEnd));
  return {
    dir: built.dir,
    gateway: built.gateway,
    client,
    hostLines: () => built.hostEnd.sent,
    log: built.log,
    auditFile: built.auditFile,
    auditRecords: built.auditRecords,
    close: async () => {
      await client.close();
      await built.gateway.close();
      await built.closeServers();
    },
  };
}

/** The envelope every request of a 2026-07-28 host carries in `params._meta`. */
export function modernEnvelope(capabilities: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'in-process modern host', version: '1' },
  };
}

/** A host of the stateless revision over memory: no handshake, the envelope on every request. */
export interface InProcessModernGateway extends Omit<InProcessGateway, 'client'> {
  /** Sends a request with the envelope (`capabilities` declared in it) and waits for its answer. */
  request(
    method: string,
    params?: Record<string, unknown>,
    capabilities?: Record<string, unknown>,
  ): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }>;
  /** Every message the gateway sent that was not an answer (notifications, and requests it must not send). */
  readonly unsolicited: JsonRpcMessage[];
}

/** The gateway built in-process (see `build`), spoken to as a host of 2026-07-28 would. */
export async function startInProcessModern(
  options: InProcessOptions & { readonly capabilities?: Record<string, unknown> },
): Promise<InProcessModernGateway> {
  const built = await build(options);
  const waiting = new Map<number, (message: JsonRpcMessage) => void>();
  const unsolicited: JsonRpcMessage[] = [];
  built.clientEnd.onmessage = (message) => {
    const id = 'id' in message && !('method' in message) ? message.id : undefined;
    const resolve = typeof id === 'number' ? waiting.get(id) : undefined;
    if (resolve === undefined) unsolicited.push(message);
    else {
      waiting.delete(id as number);
      resolve(message);
    }
  };
  let nextId = 1;
  return {
    dir: built.dir,
    gateway: built.gateway,
    hostLines: () => built.hostEnd.sent,
    log: built.log,
    auditFile: built.auditFile,
    auditRecords: built.auditRecords,
    unsolicited,
    request: (method, params = {}, capabilities = options.capabilities ?? {}) => {
      const id = nextId++;
      const meta = { ...(params['_meta'] as object | undefined), ...modernEnvelope(capabilities) };
      const answer = new Promise<JsonRpcMessage>((resolve) => waiting.set(id, resolve));
      built.clientEnd.sendLine(
        JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }),
      );
      return answer as Promise<{
        result?: Record<string, unknown>;
        error?: { code: number; message: string };
      }>;
    },
    close: async () => {
      await built.clientEnd.close();
      await built.gateway.close();
      await built.closeServers();
    },
  };
}

function readLines(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
