/**
 * The audit trail through the built binary, for what needs the gateway's own process: nothing
 * lost however it stops (the host closing stdin at once, SIGTERM during calls), names nobody
 * serves (raw JSON-RPC on its stdin), and tamper evidence (the `audit verify` and `summary`
 * commands). What a call record says, redaction and an unwritable audit file run in-process in
 * test/inprocess/audit.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import {
  connectHost,
  fixture,
  NODE,
  serverBin,
  initialize,
  killRawSessions,
  rawSession,
  runCli,
  readAudit,
  type AuditRecord,
} from './harness.js';
import { setup } from './auditScenario.js';

afterEach(() => killRawSessions());

const call = (id: number, name: string, args: object) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

describe('nothing lost', () => {
  it('300 concurrent calls, then the host closes at once: 300 call records, and the chain verifies', async () => {
    const { file, config } = setup();
    const s = rawSession(config);
    await initialize(s);
    const lines = Array.from({ length: 300 }, (_, i) => call(i + 1, 'up__echo', { text: `call ${i + 1}` }));
    s.child.stdin.end(lines.join('\n') + '\n');
    expect(await s.exited).toBe(0);

    const records = readAudit(file);
    const calls = records.filter((r) => r.type === 'call');
    expect(calls).toHaveLength(300);
    expect(new Set(calls.map((c) => (c.args as { text: string }).text)).size).toBe(300);
    expect(records[0]!.type).toBe('gateway_start');
    expect(records.at(-1)!.type).toBe('gateway_stop');
    expect(records.some((r) => r.type === 'upstream_start' && r.server === 'up')).toBe(true);

    const verify = await runCli(['audit', 'verify', file]);
    expect(verify.code).toBe(0);
  });

  it("a call's record is in the file before its answer reaches the host", async () => {
    const { file, config } = setup();
    const s = rawSession(config);
    await initialize(s);
    const missing: number[] = [];
    const answered = Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        s.next((m) => {
          if (m.id !== i + 1) return false;
          // Read the moment the answer arrives: the gateway wrote the record before answering.
          // Only whole lines: a later batch may be half copied into the file as we read.
          const texts = readFileSync(file, 'utf8')
            .split('\n')
            .slice(0, -1)
            .map((l) => JSON.parse(l) as AuditRecord)
            .filter((r) => r.type === 'call')
            .map((r) => (r.args as { text: string }).text);
          if (!texts.includes(`call ${i + 1}`)) missing.push(i + 1);
          return true;
        }),
      ),
    );
    s.send(
      Array.from({ length: 100 }, (_, i) => call(i + 1, 'up__echo', { text: `call ${i + 1}` })).join('\n'),
    );
    await answered;
    expect(missing).toEqual([]);
  });

  it('SIGTERM during calls in flight: every call is recorded with its outcome', async () => {
    const { file, config } = setup();
    const s = rawSession(config);
    await initialize(s);
    const echoed = s.next((m) => m.id === 1000);
    // Ten, under the default maxConcurrency, so the echo is not queued behind them.
    for (let i = 1; i <= 10; i++) s.send(call(i, 'up__hang', {}));
    s.send(call(1000, 'up__echo', { text: 'last' }));
    await echoed; // the fixture answers in order: every hang has reached it
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);

    const calls = readAudit(file).filter((r) => r.type === 'call');
    expect(calls).toHaveLength(11);
    expect(calls.filter((c) => c.outcome === 'upstream_failure')).toHaveLength(10);
    expect(calls.find((c) => c.tool === 'up__echo')?.outcome).toBe('ok');
    const stop = readAudit(file).at(-1)!;
    expect(stop).toMatchObject({ type: 'gateway_stop', reason: 'SIGTERM' });
  });
});

describe('names nobody serves', () => {
  it('a call of a tool, prompt or resource no server has is recorded, redacted, and still refused', async () => {
    const { file, config } = setup(
      {},
      { servers: { up: fixture(['--resources']), other: fixture(['--resources']) } },
    );
    const s = rawSession(config);
    await initialize(s);
    const request = (id: number, method: string, params: object) =>
      JSON.stringify({ jsonrpc: '2.0', id, method, params });
    const answers = Promise.all([1, 2, 3, 4].map((id) => s.next((m) => m.id === id)));
    s.send(call(1, 'up__nope', { password: 'hunter2', text: 'x' }));
    s.send(call(2, 'admin?api_key=probe-secret-value', {}));
    s.send(request(3, 'prompts/get', { name: 'nope', arguments: { token: 'tok-secret-value' } }));
    s.send(request(4, 'resources/read', { uri: 'file:///nowhere/x' }));
    const [tool, secretName, prompt, resource] = await answers;
    expect(tool!.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool: up__nope'),
    });
    expect(secretName!.error).toMatchObject({ code: -32602 });
    expect(prompt!.error).toMatchObject({ code: -32602, message: 'Unknown prompt: nope' });
    expect(resource!.error).toMatchObject({
      code: -32002,
      message: 'Resource not found: file:///nowhere/x',
    });
    s.child.stdin.end();
    expect(await s.exited).toBe(0);

    const records = readAudit(file);
    const unserved = { server: '', outcome: 'unknown_name', decision: { effect: 'deny', rule: null } };
    const calls = records.filter((r) => r.type === 'call');
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      ...unserved,
      tool: 'up__nope',
      args: { password: '[REDACTED]', text: 'x' },
      error: expect.stringContaining('Unknown tool: up__nope'),
    });
    expect(calls[1]).toMatchObject({ ...unserved, tool: 'admin?api_key=[REDACTED]' });
    const requests = records.filter((r) => r.type === 'request');
    expect(requests).toHaveLength(2);
    expect(requests.find((r) => r.method === 'prompts/get')).toMatchObject({
      ...unserved,
      target: 'nope',
      args: { token: '[REDACTED]' },
    });
    expect(requests.find((r) => r.method === 'resources/read')).toMatchObject({
      ...unserved,
      target: 'file:///nowhere/x',
    });
    const text = readFileSync(file, 'utf8');
    for (const secret of ['hunter2', 'probe-secret-value', 'tok-secret-value'])
      expect(text).not.toContain(secret);
  });

  it('a completion for a prompt or resource template no server has is recorded, redacted, and still refused', async () => {
    // server-everything offers completions, so the method is served and only the names are
    // unknown; a second server with resources means no URI goes to a lone server by default.
    const { file, config } = setup(
      {},
      {
        servers: {
          up: { command: NODE, args: [serverBin('everything')] },
          other: fixture(['--resources']),
        },
      },
    );
    const s = rawSession(config);
    await initialize(s);
    const complete = (id: number, ref: object) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'completion/complete',
        params: { ref, argument: { name: 'password', value: 'tok-secret-value' } },
      });
    const answers = Promise.all([1, 2].map((id) => s.next((m) => m.id === id)));
    s.send(complete(1, { type: 'ref/prompt', name: 'up__nope' }));
    s.send(complete(2, { type: 'ref/resource', uri: 'nowhere://{path}' }));
    const [prompt, template] = await answers;
    expect(prompt!.error).toMatchObject({ code: -32602, message: 'Unknown prompt: up__nope' });
    expect(template!.error).toMatchObject({ message: expect.stringContaining('nowhere://{path}') });
    s.child.stdin.end();
    expect(await s.exited).toBe(0);

    const unserved = { server: '', outcome: 'unknown_name', decision: { effect: 'deny', rule: null } };
    const requests = readAudit(file).filter(
      (r) => r.type === 'request' && r.method === 'completion/complete',
    );
    expect(requests).toHaveLength(2);
    expect(requests.find((r) => r.target === 'up__nope')).toMatchObject(unserved);
    expect(requests.find((r) => r.target === 'nowhere://{path}')).toMatchObject(unserved);
    expect(readFileSync(file, 'utf8')).not.toContain('tok-secret-value');
  });
});

describe('tamper evidence', () => {
  async function makeLog() {
    const { file, config } = setup();
    const host = await connectHost(config);
    for (let i = 0; i < 5; i++)
      await host.client.callTool({ name: 'up__echo', arguments: { text: `n${i}` } });
    await host.close();
    return file;
  }

  it.each([
    ['an edited record', (lines: string[]) => lines.map((l, i) => (i === 6 ? l.replace('"n1"', '"n9"') : l))],
    ['a deleted record', (lines: string[]) => lines.filter((_, i) => i !== 6)],
    ['swapped records', (lines: string[]) => [...lines.slice(0, 6), lines[7]!, lines[6]!, ...lines.slice(8)]],
  ])('verify rejects %s, naming the first bad record', async (_what, tamper) => {
    const file = await makeLog();
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    // start, config_load, upstream_start, then per call (onFailure: block) its call_start and call
    expect(lines[6]).toMatch(/"type":"call",.*"n1"/);
    writeFileSync(file, tamper(lines).join('\n') + '\n');
    const { code, stdout } = await runCli(['audit', 'verify', file]);
    expect(code).toBe(1);
    expect(stdout).toContain(`${file}:7`);
  });

  it('verify accepts an intact log', async () => {
    const file = await makeLog();
    const { code, stdout } = await runCli(['audit', 'verify', file]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/ok|intact|verified/i);
  });

  it('rotation keeps the chain across files', async () => {
    const { file, config, dir } = setup({ maxSize: '1KiB', maxFiles: 40 });
    const host = await connectHost(config);
    for (let i = 0; i < 12; i++)
      await host.client.callTool({ name: 'up__echo', arguments: { text: `r${i}` } });
    await host.close();
    const files = readdirSync(dir).filter((f) => f.startsWith('audit.jsonl'));
    expect(files.length).toBeGreaterThan(2);
    const { code } = await runCli(['audit', 'verify', file]);
    expect(code).toBe(0);
    const summary = await runCli(['audit', 'summary', file]);
    expect(summary.code).toBe(0);
    expect(summary.stdout).toMatch(/up__echo\s+up\s+12\b/);
  });
});
