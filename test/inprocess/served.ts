/**
 * The gateway as `mcp-warden --config FILE` runs it (the same `startServing`: config file,
 * managed settings, policies, audit trail, pins, watchers, real upstream processes), but inside
 * the test's own process, with the host's stdio as two in-memory streams. A test written against
 * `connectHost` (test/integration/harness.ts) runs here unchanged by calling `connectServed`
 * instead: the same HostSession, with the log lines the binary would write to stderr.
 *
 * What this cannot show stays with the binary's tests: the process itself (its pid, signals,
 * exit codes, what it loads, stdout kept for JSON-RPC).
 */
import { PassThrough } from 'node:stream';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { startServing, type Serving } from '../../src/commands/serve.js';
import {
  hostClient,
  logWatcher,
  NO_MANAGED,
  type ConnectOptions,
  type HostSession,
} from '../integration/harness.js';
import type { HttpGateway } from '../integration/httpHarness.js';
import { loadServingModulesFirst } from './servedWarmup.js';

// The first file of a worker that serves a config loads the gateway's modules in a hook of its
// own (see servedWarmup.ts), whether or not it asks for that itself: the workers share one
// module graph, so this module, and this hook, are evaluated once per worker.
loadServingModulesFirst();

/** A served gateway and its host: what `connectHost` gives, plus the gateway's own handle. */
export interface ServedSession extends HostSession {
  readonly serving: Serving;
}

/**
 * The environment a served gateway sees is this process's: the harness sets a test's variables
 * while its gateway runs and puts the old values back when it closes. Two gateways alive at once
 * must agree on them, else the second one's start throws (it would see the first one's).
 */
const borrowed = new Map<
  string,
  { readonly before: string | undefined; readonly value: string; users: number }
>();

function borrowEnv(env: Record<string, string>): () => void {
  for (const [key, value] of Object.entries(env)) {
    const held = borrowed.get(key);
    if (held !== undefined && held.value !== value)
      throw new Error(`served gateways alive at once disagree on ${key}: "${held.value}" and "${value}"`);
  }
  for (const [key, value] of Object.entries(env)) {
    const held = borrowed.get(key);
    if (held !== undefined) held.users++;
    else {
      borrowed.set(key, { before: process.env[key], value, users: 1 });
      process.env[key] = value;
    }
  }
  let returned = false;
  return () => {
    if (returned) return;
    returned = true;
    for (const key of Object.keys(env)) {
      const held = borrowed.get(key);
      if (held === undefined || --held.users > 0) continue;
      borrowed.delete(key);
      if (held.before === undefined) delete process.env[key];
      else process.env[key] = held.before;
    }
  };
}

/** The SDK's line framing over two streams: what StdioClientTransport does, without a process. */
class StreamClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new ReadBuffer();
  private closed = false;

  constructor(
    private readonly toGateway: PassThrough,
    private readonly fromGateway: PassThrough,
  ) {}

  async start(): Promise<void> {
    this.fromGateway.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    this.fromGateway.on('end', () => void this.close());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the served gateway is closed');
    this.toGateway.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The gateway reads the end of its stdin as the host going away, and stops.
    this.toGateway.end();
    this.onclose?.();
  }
}

/** A gateway served in this process, before any host connects. */
export interface Started {
  readonly serving: Serving;
  readonly log: ReturnType<typeof logWatcher>;
  readonly toGateway: PassThrough;
  readonly fromGateway: PassThrough;
}

/** `startServing` on `configFile` with `env` borrowed, its stdio two in-memory streams. */
export async function start(
  configFile: string,
  options: { readonly env?: Record<string, string> | undefined; readonly http?: string },
): Promise<Started> {
  const giveBack = borrowEnv({ ...NO_MANAGED, ...options.env });
  const toGateway = new PassThrough();
  const fromGateway = new PassThrough();
  const log = logWatcher();
  let serving: Serving;
  try {
    serving = await startServing({
      config: configFile,
      stdio: { input: toGateway, output: fromGateway },
      log: log.append,
      ...(options.http !== undefined && { http: options.http }),
    });
  } catch (error) {
    giveBack();
    throw error;
  }
  void serving.stopped.then(() => {
    fromGateway.end();
    giveBack();
  });
  return { serving, log, toGateway, fromGateway };
}

/**
 * Serves `configFile` in this process and connects the SDK Client to it as a host over stdio
 * would: the in-process twin of `connectHost`. `options.env` is set in `process.env` while the
 * gateway runs (with the harness's own: no managed settings, a private state folder).
 */
export async function connectServed(
  configFile: string,
  options: ConnectOptions & {
    /**
     * Awaited after the gateway has started and before the host initializes: the binary's own
     * start-up gives its upstream processes that head start, which serving in-process does not.
     */
    readonly beforeInitialize?: () => Promise<void>;
  } = {},
): Promise<ServedSession> {
  const { serving, log, toGateway, fromGateway } = await start(configFile, { env: options.env });
  const client = hostClient(options);
  try {
    await options.beforeInitialize?.();
    await client.connect(new StreamClientTransport(toGateway, fromGateway));
  } catch (error) {
    await serving.stop('the host could not connect');
    throw error;
  }
  return {
    client,
    serving,
    get pid(): number {
      throw new Error('a served gateway runs in the test process: it has no pid of its own');
    },
    stderr: log.text,
    waitForStderr: log.waitFor,
    close: async () => {
      await client.close();
      await serving.stopped;
    },
  };
}

/** The listener served in this process: `startHttpGateway`'s twin, without a child process. */
export interface ServedHttp extends Omit<HttpGateway, 'child' | 'exited'> {
  readonly serving: Serving;
  /** Resolves with the exit code the binary would have ended with. */
  readonly exited: Promise<number>;
}

/** Serves `configFile` with `--http ADDRESS` in this process and resolves once it listens. */
export async function serveHttpInProcess(
  configFile: string,
  options: { readonly address?: string; readonly env?: Record<string, string> } = {},
): Promise<ServedHttp> {
  const { serving, log } = await start(configFile, {
    env: options.env,
    http: options.address ?? '127.0.0.1:0',
  });
  const said = /listening on (http:\/\/\S+\/mcp)/.exec(log.text());
  if (said === null) {
    await serving.stop('it never listened');
    throw new Error(`the served gateway never said where it listens:\n${log.text()}`);
  }
  const url = said[1]!;
  return {
    serving,
    url,
    base: url.replace(/\/mcp$/, ''),
    stderr: log.text,
    waitForStderr: log.waitFor,
    exited: serving.stopped,
    stop: () => serving.stop('SIGTERM'),
  };
}
