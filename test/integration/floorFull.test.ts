/**
 * bench/floor.mjs with FLOOR_FULL is the bench's json-floor-full: the least a gateway can do per
 * tool call to do what warden-full does with one, against which the bench weighs warden-full's
 * per-call cost. If it skipped a job (judging by policy, validating arguments, repairing
 * results, enforcing the deadline), its figures would flatter every comparison made with it:
 * these tests hold it to each job, through the SDK Client as host and an upstream that notes
 * every tool call and cancellation it receives.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { NODE, ROOT, runCli, tempDir } from './harness.js';

const FLOOR = path.join(ROOT, 'bench/floor.mjs');

/**
 * Tools: `echo` {text} answers its text; `structured` {mode} answers structured content valid
 * for its outputSchema with a text block (`valid`), without one (`no-text`), or failing the
 * schema (`invalid`); `hang` never answers. Every tool call and `notifications/cancelled` it
 * receives is appended to UPSTREAM_LOG before anything is answered.
 */
const UPSTREAM = `
const { appendFileSync } = require('node:fs');
const tools = [
  { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  {
    name: 'structured',
    inputSchema: { type: 'object', properties: { mode: { type: 'string' } } },
    outputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
  },
  { name: 'hang', inputSchema: { type: 'object' } },
];
const answers = {
  valid: { content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } },
  'no-text': { content: [], structuredContent: { n: 2 } },
  invalid: { content: [{ type: 'text', text: 'three' }], structuredContent: { n: 'three' } },
};
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === 'tools/call' || message.method === 'notifications/cancelled')
    appendFileSync(process.env.UPSTREAM_LOG, line + '\\n');
  if (message.id === undefined) return;
  let result;
  if (message.method === 'initialize')
    result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'up', version: '1' } };
  else if (message.method === 'tools/list') result = { tools };
  else if (message.method === 'tools/call') {
    const { name, arguments: args } = message.params;
    if (name === 'hang') return;
    result = name === 'echo' ? { content: [{ type: 'text', text: args.text }] } : answers[args.mode];
  } else result = {};
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }) + '\\n');
});
`;

const POLICY = {
  default: 'allow',
  rules: [
    {
      id: 'not-that',
      match: {
        tool: 'echo',
        arguments: { properties: { text: { const: 'forbidden' } }, required: ['text'] },
      },
      action: 'deny',
      reason: 'That text is not allowed.',
    },
    { id: 'no-deletes', match: { tool: 'delete_*' }, action: 'deny' },
    { id: 'bench', match: { server: 'bench', tool: '*' }, action: 'allow' },
  ],
};

interface Floor {
  readonly client: Client;
  readonly dir: string;
  /** The tool calls and cancellations the upstream received, parsed. */
  readonly upstreamSaw: () => Record<string, unknown>[];
  /** The audit records of `call` type. */
  readonly callRecords: () => Record<string, unknown>[];
}

async function floorFull(extraEnv: Record<string, string> = {}): Promise<Floor> {
  const dir = tempDir('warden-floor-full-');
  const policy = path.join(dir, 'policy.json');
  writeFileSync(policy, JSON.stringify(POLICY));
  const log = path.join(dir, 'upstream.jsonl');
  writeFileSync(log, '');
  const audit = path.join(dir, 'audit.jsonl');
  const client = new Client({ name: 'floor-full-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: NODE,
      args: [FLOOR, NODE, '-e', UPSTREAM],
      env: {
        PATH: process.env.PATH ?? '',
        FLOOR_AUDIT: audit,
        FLOOR_FULL: policy,
        UPSTREAM_LOG: log,
        ...extraEnv,
      },
      stderr: 'pipe',
    }),
  );
  // As a host does: the tools' output schemas are then known to the client, which checks results.
  await client.listTools();
  const lines = (file: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((text) => text !== '')
      .map((text) => JSON.parse(text) as Record<string, unknown>);
  return {
    client,
    dir,
    upstreamSaw: () => lines(log),
    callRecords: () => lines(audit).filter((record) => record['type'] === 'call'),
  };
}

async function closeFloor(floor: Floor): Promise<void> {
  await floor.client.close();
  const verify = await runCli(['audit', 'verify', path.join(floor.dir, 'audit.jsonl')]);
  rmSync(floor.dir, { recursive: true, force: true });
  expect(verify.code, verify.stdout + verify.stderr).toBe(0);
}

const textOf = (result: object): string =>
  (((result as { content?: unknown }).content as { text?: string }[] | undefined) ?? [])
    .map((block) => block.text ?? '')
    .join('\n');

describe('bench/floor.mjs with FLOOR_FULL (json-floor-full)', () => {
  it('refuses and records a call its policy denies, which never reaches the server', async () => {
    const floor = await floorFull();
    try {
      const denied = await floor.client.callTool({ name: 'bench__echo', arguments: { text: 'forbidden' } });
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).toContain('That text is not allowed.');
      const allowed = await floor.client.callTool({ name: 'bench__echo', arguments: { text: 'fine' } });
      expect(allowed.content).toEqual([{ type: 'text', text: 'fine' }]);

      expect(floor.upstreamSaw().map((m) => (m['params'] as { arguments: unknown }).arguments)).toEqual([
        { text: 'fine' },
      ]);
      expect(floor.callRecords()).toMatchObject([
        {
          tool: 'bench__echo',
          upstreamTool: 'echo',
          outcome: 'denied',
          decision: { effect: 'deny', rule: 'not-that' },
        },
        { outcome: 'ok', decision: { effect: 'allow', rule: 'bench' } },
      ]);
    } finally {
      await closeFloor(floor);
    }
  });

  it('refuses arguments that do not match the tool inputSchema', async () => {
    const floor = await floorFull();
    try {
      const invalid = await floor.client.callTool({ name: 'bench__echo', arguments: { text: 5 } });
      expect(invalid.isError).toBe(true);
      expect(textOf(invalid)).toMatch(/Invalid arguments for tool "echo".*\/text must be string/);
      expect(floor.upstreamSaw()).toEqual([]);
      expect(floor.callRecords()).toMatchObject([
        { outcome: 'invalid_arguments', decision: { effect: 'deny', rule: null } },
      ]);
    } finally {
      await closeFloor(floor);
    }
  });

  it('repairs results as warden does, and forwards a valid one unchanged', async () => {
    const floor = await floorFull();
    try {
      const call = (mode: string) =>
        floor.client.callTool({ name: 'bench__structured', arguments: { mode } });
      // The SDK client checks structured content against the listed outputSchema: an invalid
      // one forwarded as it came would make this call throw.
      const invalid = await call('invalid');
      expect(invalid.isError).toBe(true);
      expect(invalid.structuredContent).toBeUndefined();
      expect(textOf(invalid)).toContain('did not match the tool');
      const noText = await call('no-text');
      expect(noText).toMatchObject({
        structuredContent: { n: 2 },
        content: [{ type: 'text', text: '{"n":2}' }],
      });
      const valid = await call('valid');
      expect(valid).toEqual({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } });
      expect(floor.callRecords().map((record) => [record['outcome'], record['repairs']])).toEqual([
        ['tool_error', ['structured-invalid']],
        ['ok', ['text-added']],
        ['ok', []],
      ]);
    } finally {
      await closeFloor(floor);
    }
  });

  it('holds a 17th call until one of the 16 in flight ends (a host cancel frees its slot)', async () => {
    const floor = await floorFull();
    try {
      const first = new AbortController();
      const hanging = Array.from({ length: 16 }, (_, i) =>
        floor.client
          .callTool(
            { name: 'bench__hang', arguments: {} },
            undefined,
            i === 0 ? { signal: first.signal } : {},
          )
          .catch(() => 'ended'),
      );
      const echo = floor.client.callTool({ name: 'bench__echo', arguments: { text: 'queued' } });
      // Sent after the echo: without a limit the echo would reach the server before this.
      first.abort();
      expect(await hanging[0]).toBe('ended');
      expect((await echo).content).toEqual([{ type: 'text', text: 'queued' }]);
      const methods = floor.upstreamSaw().map((m) => (m['params'] as { name?: string }).name ?? m['method']);
      expect(methods).toEqual([...Array<string>(16).fill('hang'), 'notifications/cancelled', 'echo']);
      expect(floor.callRecords()).toMatchObject([
        { tool: 'bench__hang', outcome: 'cancelled' },
        { outcome: 'ok' },
      ]);
    } finally {
      await closeFloor(floor);
    }
  });

  it('answers a call past its deadline and cancels it upstream', async () => {
    const floor = await floorFull({ FLOOR_TIMEOUT_MS: '200' });
    try {
      const late = await floor.client.callTool({ name: 'bench__hang', arguments: {} });
      expect(late.isError).toBe(true);
      expect(textOf(late)).toMatch(/timed out: no answer or progress for 200 ms/);
      // The cancellation goes before this call, and the upstream notes it before answering this.
      await floor.client.callTool({ name: 'bench__echo', arguments: { text: 'after' } });
      const [sent, cancelled] = floor.upstreamSaw();
      expect(cancelled).toMatchObject({
        method: 'notifications/cancelled',
        params: { requestId: sent?.['id'] },
      });
      expect(floor.callRecords()[0]).toMatchObject({ tool: 'bench__hang', outcome: 'timeout' });
    } finally {
      await closeFloor(floor);
    }
  });
});
