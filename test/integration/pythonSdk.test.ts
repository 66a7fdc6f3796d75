/**
 * Interop with the official MCP Python SDK 2.x, whose Client speaks 2026-07-28 by default (it
 * probes with `server/discover`) and whose MCPServer serves both eras: its Client as the host
 * and its MCPServer as an upstream, over stdio and Streamable HTTP, through the built gateway.
 * The SDK is installed into a virtual environment by scripts/python-sdk.sh (pinned version, from
 * the index pip is configured with); where that is impossible these tests are skipped and say so.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { CLI, FAST_GATEWAY, fixture, readAudit, ROOT, tempDir, writeConfig } from './harness.js';
import { startHttpGateway, type HttpGateway } from './httpHarness.js';

const run = promisify(execFile);
const PYTHON_DIR = path.join(ROOT, 'test/fixtures/python');
const SERVER = path.join(PYTHON_DIR, 'server.py');
const HOST = path.join(PYTHON_DIR, 'host.py');

let python: string | undefined;
let unavailable = '';

beforeAll(async () => {
  try {
    const { stdout } = await run('bash', [path.join(ROOT, 'scripts/python-sdk.sh')], { timeout: 280_000 });
    python = stdout.trim().split('\n').at(-1);
  } catch (error) {
    unavailable = `the MCP Python SDK could not be installed: ${String((error as { stderr?: string }).stderr ?? error).slice(-400)}`;
  }
}, 300_000);

function needPython(context: TestContext): string {
  if (python === undefined) context.skip(unavailable);
  return python!;
}

type Event = {
  version?: string;
  tools?: string[];
  asked?: string;
  message?: string;
  call?: string;
  text?: string;
  isError?: boolean;
  error?: string;
};

/** Runs the Python host against a gateway (a config on stdio, or a URL) and reads its events. */
async function pythonHost(
  py: string,
  target: { config: string } | { url: string },
  mode: 'auto' | 'legacy',
  calls: Record<string, object>,
): Promise<Event[]> {
  const where = 'config' in target ? ['--config', target.config, '--cli', CLI] : ['--url', target.url];
  const args = [
    HOST,
    ...where,
    '--mode',
    mode,
    ...Object.entries(calls).map(([n, a]) => `${n}=${JSON.stringify(a)}`),
  ];
  const { stdout } = await run(py, args, { timeout: 90_000 });
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Event);
}

const callOf = (events: Event[], name: string) => events.find((e) => e.call === name);
const asked = (events: Event[]) => events.filter((e) => e.asked !== undefined).map((e) => e.asked);

/** Starts the Python server on Streamable HTTP and resolves once it accepts connections. */
async function pythonHttpServer(py: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => resolve(free));
    });
  });
  const child = spawn(py, [SERVER, '--http', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      if (stderr.includes('Uvicorn running on')) resolve();
    });
    child.once('exit', () => reject(new Error(`the Python server exited:\n${stderr}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, child };
}

const ASKING = { py__ask: {}, py__sample: {}, py__roots: {} };
const ANSWERED = { py__ask: 'asked: Ada', py__sample: 'sampled: hi!', py__roots: 'roots: file:///tmp/r' };

function expectAnswered(events: Event[]): void {
  for (const [name, text] of Object.entries(ANSWERED))
    expect(callOf(events, name)).toMatchObject({ text, isError: false });
  expect(asked(events).slice(0, 3)).toEqual(['elicitation/create', 'sampling/createMessage', 'roots/list']);
  // The host sees which server asks.
  expect(events.find((e) => e.asked === 'elicitation/create')?.message).toBe('[py] What is your name?');
}

describe('the Python SDK Client as host, on stdio', () => {
  let config: string;
  let audit: string;
  beforeAll(() => {
    const dir = tempDir();
    audit = path.join(dir, 'audit.jsonl');
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      [
        'rules:',
        '  - id: confirm-echo',
        '    match: { server: up, tool: echo }',
        '    action: confirm',
        '    reason: Echo needs a human.',
        '  - id: no-query',
        '    match: { server: py, tool: query }',
        '    action: deny',
        '    reason: Queries are off today.',
      ].join('\n'),
    );
    config = writeConfig(
      {
        gateway: { ...FAST_GATEWAY, startupTimeout: '30s', connectTimeout: '30s' },
        policies: ['policy.yaml'],
        audit: { file: audit },
        servers: { up: fixture(), py: { command: python ?? 'python3', args: [SERVER] } },
      },
      dir,
    );
  });

  it('negotiates 2026-07-28 by default, and both kinds of upstream answer and ask through the gateway', async (context) => {
    const py = needPython(context);
    const events = await pythonHost(py, { config }, 'auto', {
      py__echo: { text: 'hi' },
      ...ASKING,
      up__echo: { text: 'confirmed' },
      py__query: { region: 'eu-1', sql: 's' },
    });
    expect(events[0]).toEqual({ version: '2026-07-28' });
    expect(events[1]!.tools).toEqual(expect.arrayContaining(['up__echo', 'py__echo', 'py__ask']));
    // A tool denied outright is not offered.
    expect(events[1]!.tools).not.toContain('py__query');
    expect(callOf(events, 'py__echo')).toMatchObject({ text: 'py: hi', isError: false });
    // A modern server's questions to a modern host.
    expectAnswered(events);
    // The gateway's confirmation reaches the Python host through MRTR, and the approval runs it.
    const confirmation = events.filter((e) => e.asked === 'elicitation/create').at(-1);
    expect(confirmation?.message).toContain('Echo needs a human.');
    expect(callOf(events, 'up__echo')).toMatchObject({ text: 'confirmed', isError: false });
    expect(callOf(events, 'py__query')).toMatchObject({ isError: true });
    expect(callOf(events, 'py__query')?.text).toContain('Queries are off today.');

    const calls = readAudit(audit).filter((r) => r.type === 'call');
    expect(calls.find((r) => r.server === 'py')).toMatchObject({ hostEra: 'modern', upstreamEra: 'modern' });
    expect(calls.find((r) => r.server === 'up')).toMatchObject({ hostEra: 'modern', upstreamEra: 'legacy' });
  });

  it('serves the same client in the legacy era when it asks for it', async (context) => {
    const py = needPython(context);
    const events = await pythonHost(py, { config }, 'legacy', { py__echo: { text: 'old' }, ...ASKING });
    expect(events[0]).toEqual({ version: '2025-11-25' });
    expect(callOf(events, 'py__echo')).toMatchObject({ text: 'py: old', isError: false });
    expectAnswered(events);
  });
});

describe('the Python SDK MCPServer as a Streamable HTTP upstream', () => {
  let upstream: { url: string; child: ChildProcess } | undefined;
  let config: string;
  beforeAll(async () => {
    if (python === undefined) return;
    upstream = await pythonHttpServer(python);
    config = writeConfig({
      gateway: { ...FAST_GATEWAY, startupTimeout: '30s', connectTimeout: '30s' },
      servers: { py: { url: upstream.url } },
    });
  }, 60_000);
  afterAll(() => {
    upstream?.child.kill();
  });

  // The server checks Mcp-Param-Region against the arguments, so query works only if the gateway
  // mirrors it; and it asks in the modern era, which the gateway bridges for a legacy host.
  for (const mode of ['auto', 'legacy'] as const)
    it(`answers a ${mode === 'auto' ? 'modern' : 'legacy'} host, mirrored arguments and questions included`, async (context) => {
      const py = needPython(context);
      const events = await pythonHost(py, { config }, mode, {
        py__query: { region: 'eu-1', sql: 'select 1' },
        ...ASKING,
      });
      expect(events[0]).toEqual({ version: mode === 'auto' ? '2026-07-28' : '2025-11-25' });
      expect(callOf(events, 'py__query')).toMatchObject({ text: 'query eu-1: select 1', isError: false });
      expectAnswered(events);
    });

  it('is served to the Python Client over the gateway’s own HTTP listener', async (context) => {
    const py = needPython(context);
    let gateway: HttpGateway | undefined;
    try {
      gateway = await startHttpGateway(config);
      const events = await pythonHost(py, { url: gateway.url }, 'auto', {
        py__query: { region: 'Zürich', sql: 'select 2' },
        py__ask: {},
      });
      expect(events[0]).toEqual({ version: '2026-07-28' });
      // The client mirrors region into Mcp-Param-Region (Base64, not being ASCII); the gateway
      // checks it, then mirrors it again towards the server, which checks it too.
      expect(callOf(events, 'py__query')).toMatchObject({ text: 'query Zürich: select 2', isError: false });
      expect(callOf(events, 'py__ask')).toMatchObject({ text: 'asked: Ada', isError: false });
    } finally {
      await gateway?.stop();
    }
  });
});
