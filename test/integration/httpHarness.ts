/**
 * Drives the built gateway as an HTTP listener (`--http 127.0.0.1:0`), with the SDK's
 * `StreamableHTTPClientTransport` as host: what a team's hosts do when they connect to one
 * shared gateway.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll } from 'vitest';
import { CLI, NODE, STATE_ENV, type HostCapabilities } from './harness.js';

/**
 * An OAuth issuer (oauth2-mock-server) on 127.0.0.1, started before the suite that calls this and
 * stopped after it, and bearer tokens it signs for `audience`.
 */
export function suiteIssuer(audience: string): {
  readonly url: () => string;
  /** A token for `subject`, carrying `claims` besides. */
  readonly token: (subject: string, claims?: Readonly<Record<string, unknown>>) => Promise<string>;
} {
  const server = new OAuth2Server();
  beforeAll(async () => {
    await server.issuer.keys.generate('RS256');
    await server.start(0, '127.0.0.1');
  });
  afterAll(() => server.stop());
  return {
    url: () => server.issuer.url!,
    token: (subject, claims = {}) =>
      server.issuer.buildToken({
        scopesOrTransform: (_header, payload) => {
          Object.assign(payload, claims);
          payload.sub = subject;
          payload.aud = audience;
        },
      }),
  };
}

export interface HttpGateway {
  /** The /mcp URL, with the port the gateway picked. */
  readonly url: string;
  /** The listener's origin (http://127.0.0.1:PORT), for /healthz, /readyz, metadata. */
  readonly base: string;
  readonly child: ChildProcessWithoutNullStreams;
  stderr(): string;
  waitForStderr(text: string | RegExp): Promise<void>;
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<number | null>;
}

/** Starts `mcp-warden --config file --http ADDRESS` and waits until it says where it listens. */
export async function startHttpGateway(
  configFile: string,
  options: { readonly address?: string; readonly env?: Record<string, string> } = {},
): Promise<HttpGateway> {
  const child = spawn(NODE, [CLI, '--config', configFile, '--http', options.address ?? '127.0.0.1:0'], {
    // State (listings, each principal's own folder) in a temporary folder, never the real HOME's.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...STATE_ENV, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    for (const w of [...waiters]) w();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitForStderr = (text: string | RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (typeof text === 'string' ? stderr.includes(text) : text.test(stderr)) {
          waiters.delete(check);
          resolve();
        }
      };
      waiters.add(check);
      void exited.then(() => {
        if (waiters.delete(check))
          reject(new Error(`gateway exited before saying ${String(text)}:\n${stderr}`));
      });
      check();
    });
  await waitForStderr(/listening on http:\/\/\S+\/mcp/);
  const url = /listening on (http:\/\/\S+\/mcp)/.exec(stderr)![1]!;
  return {
    url,
    base: url.replace(/\/mcp$/, ''),
    child,
    stderr: () => stderr,
    waitForStderr,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface HttpHost {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  close(): Promise<void>;
}

/** Connects the SDK Client over Streamable HTTP, with a bearer token when given. */
export async function connectHttpHost(
  url: string,
  options: {
    readonly token?: string;
    readonly name?: string;
    readonly beforeConnect?: (client: Client) => void;
    readonly capabilities?: HostCapabilities;
  } = {},
): Promise<HttpHost> {
  const client = new Client(
    { name: options.name ?? 'http-host', version: '1.0.0' },
    { capabilities: options.capabilities ?? {} },
  );
  options.beforeConnect?.(client);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: options.token === undefined ? {} : { headers: { Authorization: `Bearer ${options.token}` } },
  });
  await client.connect(transport);
  return {
    client,
    transport,
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** A JSON-RPC POST to /mcp by hand, for what the SDK client would never send. */
export async function postRpc(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
