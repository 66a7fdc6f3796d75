/**
 * Drives the built gateway binary the way a desktop host does: as a stdio child, with the
 * official SDK `Client` speaking to it. Tests assert on what a host (and its user) would see:
 * tool lists, call results, error codes, and the gateway's stderr.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CLI = path.join(ROOT, 'dist/cli.js');
export const FIXTURE = path.join(ROOT, 'test/fixtures/fixture-server.mjs');
export const NODE = process.execPath;

export function serverBin(
  pkg: 'everything' | 'memory' | 'filesystem' | 'basic-vanillajs' | 'basic-react',
): string {
  return path.join(ROOT, `node_modules/@modelcontextprotocol/server-${pkg}/dist/index.js`);
}

/**
 * Our own modules a built gateway loaded, named as tsc emits them (`dist/gateway/gateway.js`), from the
 * file URLs a process resolved (one a line, as `test/fixtures/recordImports.mjs` records them).
 * The binary is a bundle (scripts/bundle.mjs): each file it loads names the modules it holds in
 * its `// dist/...` comments, so these are the modules whose code was loaded.
 */
export function ownModulesLoaded(resolved: string): string[] {
  const dist = `${pathToFileURL(path.join(ROOT, 'dist')).href}/`;
  const files = new Set(resolved.split('\n').filter((url) => url.startsWith(dist)));
  const modules = new Set<string>();
  for (const url of files)
    for (const line of readFileSync(fileURLToPath(url), 'utf8').split('\n'))
      if (/^\/\/ dist\/\S+\.js$/.test(line)) modules.add(line.slice(3));
  return [...modules].sort();
}

export function tempDir(prefix = 'warden-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/**
 * Every gateway a test starts looks for managed settings in an empty folder, and keeps its
 * state (the servers' last listings) in a temporary one. The gateway
 * honours that only while the machine has no managed file of its own (/etc/mcp-warden): a
 * variable must not switch real managed settings off, so the tests expect a machine without
 * them. A test of managed settings passes its own MCP_WARDEN_MANAGED_DIR in `env`, which wins.
 */
/** Where the gateways keep the servers' listings (one file per config without `pins:`), not in HOME. */
export const STATE_ENV = { XDG_STATE_HOME: tempDir('warden-state-') };
export const NO_MANAGED = { MCP_WARDEN_MANAGED_DIR: tempDir('warden-no-managed-'), ...STATE_ENV };

/** Writes a config file (YAML text or an object, written as JSON) into a fresh temp dir. */
export function writeConfig(config: string | object, dir = tempDir()): string {
  const file = path.join(dir, typeof config === 'string' ? 'proxy.config.yaml' : 'proxy.config.json');
  writeFileSync(file, typeof config === 'string' ? config : JSON.stringify(config, null, 2));
  return file;
}

/** A fixture upstream entry for a config object. */
export function fixture(args: string[] = [], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: NODE, args: [FIXTURE, ...args], ...extra };
}

/** Fast restarts and startup so tests do not wait on production defaults. */
export const FAST_GATEWAY = {
  startupTimeout: '5s',
  connectTimeout: '5s',
  restart: { initialDelay: '50ms', maxDelay: '200ms', maxRestarts: 3, window: '10s' },
};

export interface HostSession {
  readonly client: Client;
  /** Everything the gateway wrote to stderr so far. */
  stderr(): string;
  /** Resolves when stderr contains `text` (or matches), failing after `timeoutMs`. */
  waitForStderr(text: string | RegExp, timeoutMs?: number): Promise<void>;
  readonly pid: number;
  close(): Promise<void>;
}

export interface ConnectOptions {
  readonly env?: Record<string, string>;
  /** Runs before the handshake: set request handlers (sampling, elicitation, roots) here. */
  readonly beforeConnect?: (client: Client) => void;
  readonly capabilities?: HostCapabilities;
  /** Lets the host run requests the gateway sends it as tasks (the SDK's task store). */
  readonly taskStore?: TaskStore;
  /** The host's `clientInfo.name`; default `warden-test-host`. */
  readonly name?: string;
  /** The gateway's entry file; default this checkout's build (`dist/cli.js`). */
  readonly cli?: string;
}

/** The client capabilities a test host declares. */
export type HostCapabilities = ConstructorParameters<typeof Client>[1] extends infer O
  ? O extends { capabilities?: infer C }
    ? C
    : never
  : never;

/** Launches `mcp-warden --config file` with the SDK Client as host and completes the handshake. */
export async function connectHost(configFile: string, options: ConnectOptions = {}): Promise<HostSession> {
  const transport = new StdioClientTransport({
    command: NODE,
    args: [options.cli ?? CLI, '--config', configFile],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...NO_MANAGED, ...options.env },
    stderr: 'pipe',
  });
  const log = logWatcher();
  transport.stderr?.on('data', (chunk: Buffer) => log.append(chunk.toString('utf8')));
  const client = hostClient(options);
  await client.connect(transport);
  return {
    client,
    pid: transport.pid!,
    stderr: log.text,
    waitForStderr: log.waitFor,
    close: () => client.close(),
  };
}

/** The SDK Client a test host is, before it connects (its handlers set by `beforeConnect`). */
export function hostClient(options: ConnectOptions): Client {
  const client = new Client(
    { name: options.name ?? 'warden-test-host', version: '1.0.0' },
    { capabilities: options.capabilities ?? {}, ...(options.taskStore && { taskStore: options.taskStore }) },
  );
  options.beforeConnect?.(client);
  return client;
}

/** Text a gateway logs as it comes, and a wait for a line in it. */
export function logWatcher(): {
  append(text: string): void;
  text(): string;
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
} {
  let log = '';
  const waiters = new Set<() => void>();
  return {
    append: (text) => {
      log += text;
      for (const wake of waiters) wake();
    },
    text: () => log,
    waitFor: (text, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        const matches = () => (typeof text === 'string' ? log.includes(text) : text.test(log));
        if (matches()) return resolve();
        const check = () => {
          if (!matches()) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`stderr never showed ${String(text)}; it was:\n${log}`));
        }, timeoutMs);
        waiters.add(check);
      }),
  };
}

/**
 * Runs a gateway on `configFile` once, until every server has connected and been listed, so that
 * the next one keeps their listings: its initialize answer then carries a server's capabilities
 * and instructions even when that server is slower to start than the answer waits for.
 */
export async function keepListings(configFile: string, options: ConnectOptions = {}): Promise<void> {
  const once = await connectHost(configFile, options);
  await once.client.listTools();
  await once.close();
}

/** The gateway as a raw child: for byte-level checks on its stdout. */
export function spawnGateway(
  configFile: string,
  env: Record<string, string> = {},
): ChildProcessWithoutNullStreams {
  return spawn(NODE, [CLI, '--config', configFile], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...NO_MANAGED, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Runs the CLI to completion (for subcommands). */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runProcess(NODE, [CLI, ...args], { env });
}

/** Runs a program to completion with PATH and HOME (unless `env` says otherwise) and `env`. */
export function runProcess(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...NO_MANAGED, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.cwd !== undefined && { cwd: options.cwd }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * True while a process with this pid is running. A zombie (exited, not yet reaped, which is
 * common for orphans in containers whose PID 1 does not reap) counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/PID/stat: "pid (comm) STATE ..."; comm may contain spaces, so split after the ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/** Polls (events are not available for foreign processes) until `pid` is gone. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !isAlive(pid);
}

const rawSessions: ChildProcessWithoutNullStreams[] = [];

/** For afterEach: no raw gateway outlives its test. */
export function killRawSessions(): void {
  for (const c of rawSessions.splice(0)) c.kill('SIGKILL');
}

/** Speaks raw JSON lines to a spawned gateway and collects every stdout line. */
export function rawSession(configFile: string, env: Record<string, string> = {}) {
  const child = spawnGateway(configFile, env);
  rawSessions.push(child);
  const lines: string[] = [];
  type Waiter = {
    pred: (m: Record<string, unknown>, line: string) => boolean;
    resolve: (m: Record<string, unknown>) => void;
  };
  const waiting: Waiter[] = [];
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    for (const w of [...waiting]) {
      if (w.pred(m, line)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(m);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    stderr: () => stderr,
    send: (text: string) => child.stdin.write(text + '\n'),
    next: (pred: Waiter['pred']) =>
      new Promise<Record<string, unknown>>((resolve) => waiting.push({ pred, resolve })),
  };
}

/** The handshake as a host declaring `capabilities` makes it. */
export async function initialize(
  s: Pick<ReturnType<typeof rawSession>, 'next' | 'send'>,
  capabilities: Record<string, unknown> = {},
  protocolVersion = '2025-06-18',
): Promise<void> {
  const answered = s.next((m) => m.id === 0);
  s.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion, capabilities, clientInfo: { name: 'raw', version: '1' } },
    }),
  );
  await answered;
  s.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
}

/** The text blocks of a tool result, joined: what a model reading the result sees. */
export function textOf(result: object): string {
  const content = (result as { content?: { text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}

/**
 * A config with a pins file and an audit log (both still absent) in front of the fixture
 * server `fx`, in a fresh temp dir: what the pins commands are tried on.
 */
export function pinsAndAuditConfig(): { config: string; pinsFile: string; auditFile: string } {
  const dir = tempDir();
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      pins: { file: './tool-pins.json' },
      audit: { file: './audit.jsonl' },
      servers: { fx: fixture() },
    },
    dir,
  );
  return { config, pinsFile: path.join(dir, 'tool-pins.json'), auditFile: path.join(dir, 'audit.jsonl') };
}

/** One record of an audit file, as the tests read it. */
export type AuditRecord = Record<string, unknown> & { type: string; seq: number };

/** The records of an audit file, in order. */
export function readAudit(file: string): AuditRecord[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditRecord);
}

/** A TCP port free on 127.0.0.1 right now, for a server a test starts. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * The `result` member of the answer to `request` (its `id` a number) as written by a gateway
 * on `configFile`, and as written by a fixture server started with `fixtureArgs` itself, each
 * exactly as the bytes on the wire: for tests that a result passes untouched. `directParams`:
 * the params the fixture is sent, when they differ (a tool's own name, not the exposed one).
 */
export async function resultBothWays(
  configFile: string,
  fixtureArgs: readonly string[],
  request: { readonly id: number; readonly method: string; readonly params: object },
  directParams: object = request.params,
): Promise<{ via: string; direct: string }> {
  const { FixtureProcess } = await import('../fixtures/fixtureProcess.js');
  const prefix = `{"jsonrpc":"2.0","id":${request.id},`;
  const resultOf = (line: string) => line.slice(line.indexOf(',"result":') + ',"result":'.length, -1);
  const gateway = rawSession(configFile);
  await initialize(gateway);
  const answered = gateway.next((m) => m.id === request.id);
  gateway.send(JSON.stringify({ jsonrpc: '2.0', ...request }));
  await answered;
  const via = gateway.lines.find((l) => l.startsWith(prefix))!;
  const upstream = new FixtureProcess(fixtureArgs);
  await upstream.initialize();
  upstream.send({ jsonrpc: '2.0', ...request, params: directParams });
  let direct = '';
  while (!direct.startsWith(prefix)) direct = await upstream.stdout.next();
  upstream.child.kill();
  return { via: resultOf(via), direct: resultOf(direct) };
}
