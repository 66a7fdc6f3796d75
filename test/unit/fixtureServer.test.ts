// Tests for the fixture upstream server itself: the gateway's integration tests lean on its
// misbehaviour being exactly as advertised, so it gets checked on its own, over raw JSON lines.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  killAllFixtures,
  readRecord,
  spawnFixture,
  type JsonRpcMessage,
} from '../fixtures/fixtureProcess.js';

let dir: string;
const strayPids: number[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fixture-server-'));
});

afterEach(async () => {
  await killAllFixtures();
  for (const pid of strayPids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const toolNames = (response: JsonRpcMessage): string[] =>
  (response.result.tools as { name: string }[]).map((tool) => tool.name);

const textOf = (response: JsonRpcMessage): string => response.result.content[0].text;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('fixture server', () => {
  it('initializes, preserving a string id, and negotiates the protocol version', async () => {
    const fixture = spawnFixture(['--name', 'alpha']);
    const init = await fixture.request(
      'initialize',
      { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '0' } },
      'init-1',
    );
    expect(init).toEqual({
      jsonrpc: '2.0',
      id: 'init-1',
      result: {
        protocolVersion: '2025-03-26',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'alpha', version: '1.0.0' },
      },
    });

    const other = spawnFixture();
    const unknownVersion = await other.initialize('1999-01-01');
    expect(unknownVersion.result.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    expect(unknownVersion.result.serverInfo.name).toBe('fixture');
  });

  it('serves the basic tools and answers each call, preserving a number id', async () => {
    const fixture = spawnFixture([], { ...process.env, FIXTURE_PROBE: 'probe-value' });
    await fixture.initialize();

    const list = await fixture.request('tools/list');
    expect(toolNames(list)).toEqual([
      'echo',
      'add',
      'sleep',
      'hang',
      'crash',
      'env',
      'fail',
      'echo_structured',
      'say_stderr',
      'ask_client',
      'handwritten',
      'rpc_error',
      'big',
      'progress',
    ]);
    for (const tool of list.result.tools) {
      expect(tool.description).toEqual(expect.any(String));
      expect(tool.inputSchema.type).toBe('object');
    }

    const echo = await fixture.callTool('echo', { text: 'hi there' }, 12345);
    expect(echo).toEqual({
      jsonrpc: '2.0',
      id: 12345,
      result: { content: [{ type: 'text', text: 'hi there' }] },
    });
    expect(textOf(await fixture.callTool('add', { a: 2, b: 40 }))).toBe('42');
    expect(textOf(await fixture.callTool('env', { name: 'FIXTURE_PROBE' }))).toBe('probe-value');
    expect(textOf(await fixture.callTool('env', { name: 'FIXTURE_SURELY_UNSET' }))).toBe('<unset>');
    expect((await fixture.callTool('fail')).result).toEqual({
      content: [{ type: 'text', text: 'tool failed on purpose' }],
      isError: true,
    });
    expect((await fixture.callTool('rpc_error')).error).toEqual({
      code: -32000,
      message: 'upstream says no',
    });
    expect(textOf(await fixture.callTool('big', { kib: 3 }))).toHaveLength(3 * 1024);
    expect(textOf(await fixture.callTool('sleep', { ms: 1 }))).toBe('slept 1');

    expect((await fixture.callTool('nope')).error).toEqual({ code: -32602, message: 'Unknown tool: nope' });
    expect((await fixture.request('resources/list')).error?.code).toBe(-32601);
    expect(await fixture.request('ping', undefined, 'p')).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
    // Nothing unasked-for came out (notifications are never answered).
    expect(fixture.unclaimed).toEqual([]);
  });

  it('sends progress notifications for a progressToken (progress and sleep)', async () => {
    const fixture = spawnFixture();
    await fixture.initialize();
    const done = await fixture.callTool('progress', { steps: 3 }, 'prog', { progressToken: 'tok' });
    expect(textOf(done)).toBe('done');
    expect(fixture.unclaimed.map((m) => [m.method, m.params?.progressToken, m.params?.progress])).toEqual([
      ['notifications/progress', 'tok', 1],
      ['notifications/progress', 'tok', 2],
      ['notifications/progress', 'tok', 3],
    ]);
    fixture.unclaimed.length = 0;

    // sleep ticks every 100 ms; timer jitter may cost a tick, so only the shape is checked.
    const slept = await fixture.callTool('sleep', { ms: 250 }, 'nap', { progressToken: 9 });
    expect(textOf(slept)).toBe('slept 250');
    const ticks = fixture.unclaimed.map((m) => m.params);
    expect(ticks.length).toBeGreaterThanOrEqual(1);
    expect(ticks[0]).toEqual({ progressToken: 9, progress: 1, total: 2 });
    expect(ticks.every((t) => t?.total === 2 && (t.progress as number) <= 2)).toBe(true);
  });

  it('exposes the long, collide, structured and many sets, with a prefix', async () => {
    const fixture = spawnFixture(['--tools', 'long,collide,structured,many:3', '--tool-prefix', 'p_']);
    await fixture.initialize();
    const list = await fixture.request('tools/list');
    const names = toolNames(list);
    const longName = names[0] as string;
    expect(longName.slice(2)).toHaveLength(100);
    expect(longName.startsWith('p_a_very_long_tool_name_')).toBe(true);
    expect(names.slice(1)).toEqual([
      'p_weird.name:v1',
      'p_echo',
      'p_same_name',
      'p_structured_valid',
      'p_structured_no_text',
      'p_structured_no_content',
      'p_structured_invalid',
      'p_structured_missing',
      'p_structured_missing_bad_text',
      'p_structured_draft07',
      'p_structured_large',
      'p_structured_no_schema',
      'p_tool_00001',
      'p_tool_00002',
      'p_tool_00003',
    ]);

    const byName = new Map<string, { outputSchema?: Record<string, unknown> }>(
      list.result.tools.map((t: { name: string }) => [t.name, t]),
    );
    expect(byName.get('p_structured_valid')?.outputSchema).toEqual({
      type: 'object',
      properties: { value: { type: 'number' }, label: { type: 'string' } },
      required: ['value'],
    });
    expect(byName.get('p_structured_draft07')?.outputSchema?.$schema).toBe(
      'http://json-schema.org/draft-07/schema#',
    );
    expect(byName.get('p_structured_no_schema')?.outputSchema).toBeUndefined();

    expect(textOf(await fixture.callTool('p_weird.name:v1', { text: 'w' }))).toBe('w');
    expect(textOf(await fixture.callTool(longName, { text: 'l' }))).toBe('l');
    expect(textOf(await fixture.callTool('p_tool_00002', { text: 'm' }))).toBe('m');
    expect(textOf(await fixture.callTool('p_same_name'))).toBe('same_name from fixture');
    expect((await fixture.callTool('echo', { text: 'x' })).error?.message).toBe('Unknown tool: echo');

    const results = async (name: string): Promise<unknown> => (await fixture.callTool(`p_${name}`)).result;
    expect(await results('structured_valid')).toEqual({
      content: [{ type: 'text', text: '{"value":42,"label":"answer"}' }],
      structuredContent: { value: 42, label: 'answer' },
    });
    expect(await results('structured_no_text')).toEqual({ content: [], structuredContent: { value: 1 } });
    expect(await results('structured_no_content')).toEqual({ structuredContent: { value: 2 } });
    expect(await results('structured_invalid')).toMatchObject({
      structuredContent: { value: 'not a number' },
    });
    expect(await results('structured_missing')).toEqual({ content: [{ type: 'text', text: '{"value":7}' }] });
    expect(await results('structured_missing_bad_text')).toEqual({
      content: [{ type: 'text', text: 'plain words' }],
    });
    expect(await results('structured_draft07')).toMatchObject({ structuredContent: { value: 7 } });
    expect(await results('structured_no_schema')).toEqual({ content: [], structuredContent: { x: 1 } });
  });

  it('paginates tools/list with opaque cursors', async () => {
    const fixture = spawnFixture(['--tools', 'many:25', '--page-size', '10']);
    await fixture.initialize();
    const seen: string[] = [];
    const pageSizes: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await fixture.request('tools/list', cursor === undefined ? {} : { cursor });
      pageSizes.push(page.result.tools.length);
      seen.push(...toolNames(page));
      cursor = page.result.nextCursor;
    } while (cursor !== undefined);
    expect(pageSizes).toEqual([10, 10, 5]);
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => `tool_${String(i + 1).padStart(5, '0')}`));
    expect((await fixture.request('tools/list', { cursor: 'garbage' })).error?.code).toBe(-32602);
  });

  it('aborts a cancelled sleep without answering it, and records the cancellation', async () => {
    const record = join(dir, 'cancel.jsonl');
    const fixture = spawnFixture(['--record', record]);
    await fixture.initialize();
    fixture.sendRequest('tools/call', { name: 'sleep', arguments: { ms: 50 } }, 'doomed');
    fixture.sendRequest('tools/call', { name: 'hang', arguments: {} }, 7);
    fixture.notify('notifications/cancelled', { requestId: 'doomed', reason: 'test' });
    fixture.notify('notifications/cancelled', { requestId: 7 });
    // A longer sleep sent afterwards: had the cancelled one not been aborted, its answer would
    // arrive before this one. So awaiting this proves the absence without a fixed wait.
    const witness = await fixture.callTool('sleep', { ms: 100 }, 'witness');
    expect(textOf(witness)).toBe('slept 100');
    expect(fixture.unclaimed).toEqual([]);

    const methods = readRecord(record).map((m) => [m.method, m.id ?? m.params?.requestId]);
    expect(methods).toEqual([
      ['initialize', 1],
      ['notifications/initialized', undefined],
      ['tools/call', 'doomed'],
      ['tools/call', 7],
      ['notifications/cancelled', 'doomed'],
      ['notifications/cancelled', 7],
      ['tools/call', 'witness'],
    ]);
  });

  it('prints junk lines on stdout with --junk-stdout', async () => {
    const fixture = spawnFixture(['--junk-stdout']);
    expect(await fixture.stdout.next()).toBe('this is not json');
    fixture.sendRequest('ping', undefined, 1);
    expect(await fixture.stdout.next()).toBe('junk before response');
    expect(JSON.parse(await fixture.stdout.next())).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it('announces a late tool with list_changed', async () => {
    const fixture = spawnFixture(['--list-changed-after', '20']);
    await fixture.initialize();
    await fixture.waitFor((m) => m.method === 'notifications/tools/list_changed');
    expect(toolNames(await fixture.request('tools/list'))).toContain('late_tool');
  });

  it('overrides definitions from --describe-from at every tools/list, and relist announces a change', async () => {
    const file = join(dir, 'describe.json');
    const fixture = spawnFixture(['--describe-from', file]);
    await fixture.initialize();
    const echoOf = async () =>
      (
        (await fixture.request('tools/list')).result.tools as {
          name: string;
          description?: string;
          title?: string;
        }[]
      ).find((t) => t.name === 'echo');
    expect((await echoOf())?.description).toBe('Returns its text argument unchanged.');
    writeFileSync(file, JSON.stringify({ echo: { description: 'Echoes, and more.', title: 'Echo' } }));
    expect(await echoOf()).toMatchObject({ description: 'Echoes, and more.', title: 'Echo' });
    writeFileSync(file, JSON.stringify({ echo: { description: null } }));
    expect(await echoOf()).not.toHaveProperty('description');
    expect(textOf(await fixture.callTool('echo', { text: 'still echoes' }))).toBe('still echoes');
    expect(textOf(await fixture.callTool('relist', {}))).toBe('relisted');
    expect(fixture.unclaimed.some((m) => m.method === 'notifications/tools/list_changed')).toBe(true);
  });

  it('serves resources with --resources, and notifies only subscribed ones', async () => {
    const fixture = spawnFixture(['--resources', '--name', 'res']);
    const init = await fixture.initialize();
    expect(init.result.capabilities.resources).toEqual({ subscribe: true });
    const list = await fixture.request('resources/list');
    expect(list.result.resources.map((r: { uri: string }) => r.uri)).toEqual([
      'fixture://res/a',
      'fixture://res/b',
    ]);
    const read = await fixture.request('resources/read', { uri: 'fixture://res/a' });
    expect(read.result.contents[0].text).toBe('a from res');
    expect((await fixture.request('resources/subscribe', { uri: 'fixture://res/nope' })).error?.code).toBe(
      -32002,
    );

    const update = (uri: string) => fixture.callTool('update_resource', { uri });
    expect(textOf(await update('fixture://res/a'))).toBe('not subscribed');
    expect((await fixture.request('resources/subscribe', { uri: 'fixture://res/a' })).result).toEqual({});
    expect(textOf(await update('fixture://res/a'))).toBe('notified');
    expect(fixture.unclaimed).toEqual([
      { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'fixture://res/a' } },
    ]);
    await fixture.request('resources/unsubscribe', { uri: 'fixture://res/a' });
    expect(textOf(await update('fixture://res/a'))).toBe('not subscribed');
  });

  it('declares no resources.subscribe while --subscribe-off-file exists', async () => {
    const off = join(dir, 'subscribe-off');
    writeFileSync(off, '');
    const fixture = spawnFixture(['--resources', '--subscribe-off-file', off]);
    expect((await fixture.initialize()).result.capabilities.resources).toEqual({});
    rmSync(off);
    const again = spawnFixture(['--resources', '--subscribe-off-file', off]);
    expect((await again.initialize()).result.capabilities.resources).toEqual({ subscribe: true });
  });

  it('crashes at start, on initialize and mid-call with distinct exit codes', async () => {
    const atStart = spawnFixture(['--crash-at-start']);
    const onInit = spawnFixture(['--crash-on-initialize']);
    onInit.sendRequest('initialize', { protocolVersion: LATEST_PROTOCOL_VERSION });
    const midCall = spawnFixture();
    midCall.sendRequest('tools/call', { name: 'crash', arguments: {} });

    expect(await atStart.exited).toEqual({ code: 3, signal: null });
    expect(atStart.stderr).toContain('fixture: crashing at start');
    expect((await onInit.exited).code).toBe(4);
    expect(onInit.stdout.drain()).toEqual([]);
    expect((await midCall.exited).code).toBe(5);
    expect(midCall.stderr).toContain('fixture: crashing mid-call');
    expect(midCall.stdout.drain()).toEqual([]);
  });

  it('never answers initialize with --hang-on-initialize but stays responsive', async () => {
    const fixture = spawnFixture(['--hang-on-initialize']);
    fixture.sendRequest('initialize', { protocolVersion: LATEST_PROTOCOL_VERSION }, 'init');
    // Requests are handled in order, so the ping's answer coming first shows initialize is unanswered.
    fixture.sendRequest('ping', undefined, 'after');
    expect(await fixture.nextMessage()).toEqual({ jsonrpc: '2.0', id: 'after', result: {} });
  });

  it('waits out --start-delay before answering', async () => {
    const started = Date.now();
    const fixture = spawnFixture(['--start-delay', '150', '--stderr-chatter']);
    await fixture.initialize();
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(fixture.stderr).toContain('fixture stderr line');
  });

  it('exits 0 when stdin closes, leaving its grandchild behind', async () => {
    const pidFile = join(dir, 'pid');
    const grandchildFile = join(dir, 'grandchild');
    const fixture = spawnFixture(['--pid-file', pidFile, '--spawn-grandchild', grandchildFile]);
    await fixture.initialize();
    const grandchild = Number(readFileSync(grandchildFile, 'utf8'));
    strayPids.push(grandchild);
    expect(Number(readFileSync(pidFile, 'utf8'))).toBe(fixture.child.pid);

    fixture.closeStdin();
    expect(await fixture.exited).toEqual({ code: 0, signal: null });
    expect(isAlive(grandchild)).toBe(true);
  });

  it('outlives SIGTERM and closed stdin with --ignore-sigterm', async () => {
    const fixture = spawnFixture(['--ignore-sigterm']);
    await fixture.initialize();
    fixture.closeStdin();
    await fixture.waitForStderr('staying alive');
    fixture.child.kill('SIGTERM');
    await fixture.waitForStderr('ignoring SIGTERM');
    expect(fixture.child.exitCode).toBeNull();
    expect(await fixture.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
  });
});
