/**
 * Large catalogues, served in-process (test/inprocess/served.ts, the same `startServing` as
 * `mcp-warden --config FILE`, with real upstream processes): a catalogue of about 300 tools served as a search
 * tool and a call tool (or whole), to a 2025-11-25 host, a 2026-07-28 host and the HTTP
 * listener; calls through the call tool judged by the pipeline under the real tool's name;
 * found tools listed on a lasting connection; profiles by client name and by path; Claude
 * Code's marks and name budget; and a lazy server searched without being started.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { envelope, MODERN, type ModernHost } from '../fixtures/modernHost.js';
import {
  FAST_GATEWAY,
  fixture,
  tempDir,
  textOf,
  waitForExit,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { connectHttpHost, postRpc, type HttpHost } from '../integration/httpHarness.js';
import type { ServedHttp } from './served.js';
import { servedPerTest } from './perTest.js';

type Json = Record<string, unknown>;

interface FoundTool {
  name: string;
  server: string;
  description?: string;
  inputSchema: Json;
}

let host: HostSession | undefined;
let modern: ModernHost | undefined;
let http: ServedHttp | undefined;
let httpHost: HttpHost | undefined;
const each = servedPerTest();

/**
 * About 300 tools: 290 synthetic ones on `big`, the fixture's basic set on `ops`. The policy
 * denies `ops`'s crash (so it is hidden) and asks before `ops`'s add.
 */
function catalogue(extra: Json = {}, servers: Json = {}): string {
  const dir = tempDir();
  writeFileSync(
    path.join(dir, 'policy.yaml'),
    [
      'default: allow',
      'rules:',
      '  - id: no-crash',
      '    match: { server: ops, tool: crash }',
      '    action: deny',
      '    reason: Crashing is not allowed here.',
      '  - id: ask-add',
      '    match: { server: ops, tool: add }',
      '    action: confirm',
      '    reason: Sums need a human.',
      '',
    ].join('\n'),
  );
  return writeConfig(
    {
      gateway: FAST_GATEWAY,
      policies: ['./policy.yaml'],
      servers: { big: fixture(['--tools', 'many:290']), ops: fixture(['--tools', 'basic']), ...servers },
      ...extra,
    },
    dir,
  );
}

const names = (tools: readonly { name: string }[]) => tools.map((t) => t.name);
const found = (result: object): FoundTool[] => (JSON.parse(textOf(result)) as { tools: FoundTool[] }).tools;

/** A 2025-11-25 host that accepts every confirmation, noting what it was asked. */
async function confirmingHost(config: string, asked: string[], name?: string): Promise<HostSession> {
  return each.connect(config, {
    capabilities: { elicitation: {} },
    ...(name !== undefined && { name }),
    beforeConnect: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push((request.params as { message: string }).message);
        return { action: 'accept', content: {} } as never;
      }),
  });
}

describe('catalog.mode for a 2025-11-25 host', () => {
  it('auto above the bounds: the list is the search tool, the call tool and the tools always loaded', async () => {
    host = await each.connect(catalogue({ catalog: { alwaysLoad: ['ops__echo'] } }));
    const { tools } = await host.client.listTools();
    expect(names(tools)).toEqual(['search_tools', 'call_tool', 'ops__echo']);
    const search = tools[0]!;
    expect(search.description).toContain('big, ops');
    expect(search.inputSchema.required).toEqual(['query']);
  });

  it('all: every visible tool is listed, the denied one is not', async () => {
    host = await each.connect(catalogue({ catalog: { mode: 'all' } }));
    const listed = names((await host.client.listTools()).tools);
    expect(listed).toHaveLength(290 + 13);
    expect(listed).toContain('ops__add');
    expect(listed).not.toContain('ops__crash');
    expect(listed).not.toContain('search_tools');
  });

  it('the instructions say how to reach the tools not listed, after the servers’ own', async () => {
    // The host initializes once both servers' processes run, as it would behind the binary,
    // whose own start-up the servers' overlaps.
    const pids = path.join(tempDir(), 'pids');
    const pidFile = (server: string) => path.join(pids, `${server}.pid`);
    const booted = { beforeInitialize: () => expect.poll(() => readdirSync(pids)).toHaveLength(2) };
    mkdirSync(pids);
    const ops = {
      big: fixture(['--tools', 'many:290', '--pid-file', pidFile('big')]),
      ops: fixture(['--tools', 'basic', '--pid-file', pidFile('ops')], { instructions: 'Ops says hello.' }),
    };
    host = await each.connect(catalogue({ catalog: { alwaysLoad: ['ops__echo'] } }, ops), booted);
    const instructions = host.client.getInstructions() ?? '';
    // The count is there when the servers answered within the initialize answer's short wait
    // (on a loaded machine they may not have, or only one of them); server/discover in the
    // 2026-07-28 scenarios checks it exactly.
    expect(instructions).toMatch(
      /^## ops\nOps says hello\.\n\n## mcp-warden\n(302 tools of servers big, ops|290 tools of server big|The servers' tools) are not in your tool list\. Find them with search_tools \(describe the task in plain words\) and call them with call_tool \{"name", "arguments"\}/,
    );
    if (instructions.includes('302 tools'))
      expect(instructions).toMatch(/the 1 listed tool is called directly\.$/);
    await host.close();

    for (const server of ['big', 'ops']) rmSync(pidFile(server));
    host = await each.connect(catalogue({ catalog: { mode: 'all' } }, ops), booted);
    expect(host.client.getInstructions()).toBe('## ops\nOps says hello.');
  });

  it('servers slower than the initialize answer: the host is still told how to find their tools', async () => {
    // Servers of their own names, so that no listing kept by an earlier test stands in for them.
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      catalog: { mode: 'search' },
      servers: {
        tardy: fixture(['--tools', 'many:290', '--start-delay', '3000']),
        laggard: fixture(['--tools', 'basic', '--start-delay', '3000']),
      },
    });
    host = await each.connect(config);
    expect(host.client.getInstructions()).toBe(
      "## mcp-warden\nThe servers' tools are not in your tool list. Find them with search_tools " +
        '(describe the task in plain words) and call them with call_tool {"name", "arguments"}.',
    );
  });

  it('a search or a call through the call tool while the servers still start waits for them', async () => {
    // Slower than the initialize answer's wait, well within the start-up window: the host's
    // first calls arrive before either server has listed a tool.
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, startupTimeout: '30s' },
      catalog: { mode: 'search' },
      servers: {
        sluggish: fixture(['--tools', 'many:290', '--start-delay', '1500']),
        plodding: fixture(['--tools', 'basic', '--start-delay', '1500']),
      },
    });
    host = await each.connect(config);
    const [search, call] = await Promise.all([
      host.client.callTool({ name: 'search_tools', arguments: { query: 'add two numbers' } }),
      host.client.callTool({
        name: 'call_tool',
        arguments: { name: 'plodding__env', arguments: { name: 'NO_SUCH_VARIABLE_HERE' } },
      }),
    ]);
    expect(found(search)[0]).toMatchObject({ name: 'plodding__add', server: 'plodding' });
    expect(textOf(call)).toBe('<unset>');
  });

  it('auto within the bounds lists everything', async () => {
    host = await each.connect(catalogue({ catalog: { auto: { maxTools: 1000, maxTokens: 1_000_000 } } }));
    expect((await host.client.listTools()).tools).toHaveLength(303);
  });

  it('search finds tools with their full definitions; a denied tool is neither found nor callable', async () => {
    const asked: string[] = [];
    host = await confirmingHost(catalogue({ catalog: { mode: 'search' } }), asked);
    const search = await host.client.callTool({
      name: 'search_tools',
      arguments: { query: 'add two numbers' },
    });
    const hits = found(search);
    expect(hits[0]).toMatchObject({ name: 'ops__add', server: 'ops', description: 'Adds two numbers.' });
    expect(hits[0]!.inputSchema).toMatchObject({ required: ['a', 'b'] });

    const crash = found(
      await host.client.callTool({
        name: 'search_tools',
        arguments: { query: 'kills the server mid-call crash' },
      }),
    );
    expect(names(crash)).not.toContain('ops__crash');
    const denied = await host.client.callTool({
      name: 'call_tool',
      arguments: { name: 'ops__crash', arguments: {} },
    });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('no tool named "ops__crash" is available');

    // The confirmation rule is asked under the real tool's name, then the tool runs.
    const sum = await host.client.callTool({
      name: 'call_tool',
      arguments: { name: 'ops__add', arguments: { a: 2, b: 3 } },
    });
    expect(textOf(sum)).toBe('5');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('Sums need a human.');

    // Arguments are checked against the real tool's schema.
    const bad = await host.client.callTool({
      name: 'call_tool',
      arguments: { name: 'ops__env', arguments: {} },
    });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain('name');
  });

  it('the server filter and the limit are kept', async () => {
    host = await each.connect(catalogue({ catalog: { mode: 'search' } }));
    const hits = found(
      await host.client.callTool({
        name: 'search_tools',
        arguments: { query: 'synthetic tool echoes text', servers: ['big'], limit: 4 },
      }),
    );
    expect(hits).toHaveLength(4);
    for (const hit of hits) expect(hit.server).toBe('big');
  });

  it('an unknown name in the call tool gets a clear error with suggestions', async () => {
    host = await each.connect(catalogue({ catalog: { mode: 'search' } }));
    const result = await host.client.callTool({
      name: 'call_tool',
      arguments: { name: 'ops__ech', arguments: { text: 'x' } },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/no tool named "ops__ech" is available\. Did you mean "ops__echo"/);
    expect(textOf(result)).toContain('search_tools');
  });

  it('found tools join the list (list_changed), and are then called directly', async () => {
    host = await each.connect(catalogue({ catalog: { mode: 'search' } }));
    expect(names((await host.client.listTools()).tools)).not.toContain('ops__env');
    const changed = new Promise<void>((resolve) =>
      host!.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    const hits = found(
      await host.client.callTool({
        name: 'search_tools',
        arguments: { query: 'value of an environment variable', limit: 1 },
      }),
    );
    expect(names(hits)).toEqual(['ops__env']);
    await changed;
    expect(names((await host.client.listTools()).tools)).toContain('ops__env');
    const direct = await host.client.callTool({
      name: 'ops__env',
      arguments: { name: 'NO_SUCH_VARIABLE_HERE' },
    });
    expect(textOf(direct)).toBe('<unset>');
  });
});

describe('Claude Code', () => {
  const hostServerName = 'a-name-for-mcp-warden-forty-characters-x';

  it('auto lists everything, marks the tools always loaded, and fits names to its budget', async () => {
    expect(hostServerName).toHaveLength(40);
    const config = catalogue({ catalog: { alwaysLoad: ['ops__echo*'], hostServerName } });
    host = await each.connect(config, { name: 'claude-code' });
    const { tools } = await host.client.listTools();
    expect(tools).toHaveLength(303);
    const echo = tools.find((t) => t.name === 'ops__echo')!;
    expect(echo._meta).toMatchObject({ 'anthropic/alwaysLoad': true });
    expect(tools.find((t) => t.name === 'ops__add')!._meta?.['anthropic/alwaysLoad']).toBeUndefined();
    // mcp__<name>__<tool> within 64 characters: ops__echo_structured (20) does not fit 17.
    for (const tool of tools) expect(`mcp__${hostServerName}__${tool.name}`.length).toBeLessThanOrEqual(64);
    expect(names(tools)).not.toContain('ops__echo_structured');
    const short = tools.find((t) => /^ops__ech_[0-9a-f]{8}$/.test(t.name))!;
    expect(short.name).toHaveLength(17);
    expect(short._meta).toMatchObject({ 'anthropic/alwaysLoad': true });
    const called = await host.client.callTool({
      name: short.name,
      arguments: { data: { via: 'short name' } },
    });
    expect(called.isError).toBeFalsy();
    expect(called.structuredContent).toEqual({ via: 'short name' });
  });
});

describe('a 2026-07-28 host', () => {
  it('gets search mode over stdio, and calls through the call tool', async () => {
    modern = await each.modern(catalogue({ catalog: { mode: 'search' } }));
    const list = await modern.request('tools/list', {});
    expect(names((list.result as { tools: { name: string }[] }).tools)).toEqual([
      'search_tools',
      'call_tool',
    ]);
    const search = await modern.request('tools/call', {
      name: 'search_tools',
      arguments: { query: 'environment variable' },
    });
    expect(names(found(search.result!))).toContain('ops__env');
    const call = await modern.request('tools/call', {
      name: 'call_tool',
      arguments: { name: 'ops__env', arguments: { name: 'NO_SUCH_VARIABLE_HERE' } },
    });
    expect(textOf(call.result!)).toBe('<unset>');
    const denied = await modern.request('tools/call', {
      name: 'call_tool',
      arguments: { name: 'ops__crash' },
    });
    expect(denied.result).toMatchObject({ isError: true });
  });

  it('server/discover tells it how to reach the tools', async () => {
    modern = await each.modern(catalogue({ catalog: { mode: 'search' } }));
    // A list waits for every server, so the discovery after it knows all their tools.
    await modern.request('tools/list', {});
    const discover = await modern.request('server/discover', {});
    expect(discover.result!.instructions).toBe(
      '## mcp-warden\n303 tools of servers big, ops are not in your tool list. Find them with ' +
        'search_tools (describe the task in plain words) and call them with call_tool {"name", "arguments"}.',
    );
  });
});

describe('the HTTP listener', () => {
  const headers = (method: string, name?: string): Record<string, string> => ({
    'Mcp-Protocol-Version': MODERN,
    'Mcp-Method': method,
    ...(name !== undefined && { 'Mcp-Name': name }),
  });
  const resultOf = (text: string) => (JSON.parse(text) as { result: Json }).result;

  it('stateless requests: search, then the call tool, with no session kept between them', async () => {
    http = await each.http(catalogue());
    const list = await postRpc(
      http.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } },
      headers('tools/list'),
    );
    expect(names((resultOf(list.text) as { tools: { name: string }[] }).tools)).toEqual([
      'search_tools',
      'call_tool',
    ]);
    const search = await postRpc(
      http.url,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'search_tools', arguments: { query: 'environment variable' }, _meta: envelope() },
      },
      headers('tools/call', 'search_tools'),
    );
    expect(names(found(resultOf(search.text)))).toContain('ops__env');
    const call = await postRpc(
      http.url,
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: {
          name: 'call_tool',
          arguments: { name: 'ops__env', arguments: { name: 'NO_SUCH_VARIABLE_HERE' } },
          _meta: envelope(),
        },
      },
      headers('tools/call', 'call_tool'),
    );
    expect(textOf(resultOf(call.text))).toBe('<unset>');
  });

  it('a session in search mode, and a profile chosen by its path', async () => {
    http = await each.http(catalogue({ profiles: { small: { servers: ['ops'] } } }));
    httpHost = each.track(await connectHttpHost(http.url));
    expect(names((await httpHost.client.listTools()).tools)).toEqual(['search_tools', 'call_tool']);
    const sum = await httpHost.client.callTool({
      name: 'call_tool',
      arguments: { name: 'big__tool_00007', arguments: { text: 'seven' } },
    });
    expect(textOf(sum)).toBe('seven');
    await httpHost.close();

    httpHost = each.track(await connectHttpHost(`${http.url}/small`));
    const listed = names((await httpHost.client.listTools()).tools);
    expect(listed).toContain('ops__echo');
    expect(listed.some((n) => n.startsWith('big__'))).toBe(false);
    await expect(
      httpHost.client.callTool({ name: 'big__tool_00007', arguments: { text: 'x' } }),
    ).rejects.toThrow(/Unknown tool: big__tool_00007/);

    const missing = await fetch(`${http.url}/nobody`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
    expect((JSON.parse(await missing.text()) as { error: string }).error).toContain(
      'no profile named "nobody"',
    );
  });
});

describe('profiles', () => {
  it('by client name: a tool outside the profile is neither listed, found nor callable', async () => {
    const config = catalogue({
      catalog: { mode: 'search' },
      profiles: { cursor: { clients: ['cursor*'], servers: ['big'], tools: ['big__tool_0000*'] } },
    });
    host = await each.connect(config, { name: 'cursor-vscode' });
    const hits = found(
      await host.client.callTool({
        name: 'search_tools',
        arguments: { query: 'environment variable synthetic tool', limit: 50 },
      }),
    );
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((h) => /^big__tool_0000\d$/.test(h.name))).toBe(true);
    const outside = await host.client.callTool({
      name: 'call_tool',
      arguments: { name: 'ops__env', arguments: { name: 'HOME' } },
    });
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).toContain('no tool named "ops__env"');
    await expect(host.client.callTool({ name: 'ops__env', arguments: { name: 'HOME' } })).rejects.toThrow(
      /Unknown tool: ops__env/,
    );
    const inside = await host.client.callTool({
      name: 'call_tool',
      arguments: { name: 'big__tool_00003', arguments: { text: 'three' } },
    });
    expect(textOf(inside)).toBe('three');
  });

  it('a host the profiles do not select gets the whole catalogue', async () => {
    const config = catalogue({
      catalog: { mode: 'all' },
      profiles: { cursor: { clients: ['cursor*'], servers: ['ops'] } },
    });
    host = await each.connect(config);
    expect((await host.client.listTools()).tools).toHaveLength(303);
  });
});

describe('lazy servers', () => {
  it('are found from their last listing without starting; calling a found tool starts one', async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, 'lz.pid');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        catalog: { mode: 'search' },
        pins: { file: './tool-pins.json' },
        servers: {
          lz: fixture(['--pid-file', pidFile, '--tools', 'basic'], { start: 'lazy', idleTimeout: '300ms' }),
        },
      },
      dir,
    );
    // Never listed before: it runs once with the gateway, to be listed, and stops when idle.
    host = await each.connect(config);
    await host.client.listTools();
    await expect.poll(() => existsSync(pidFile), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => readFileSync(pidFile, 'utf8').length > 0, { timeout: 2000 }).toBe(true);
    expect(await waitForExit(Number(readFileSync(pidFile, 'utf8')), 10_000)).toBe(true);
    await host.close();
    rmSync(pidFile);

    host = await each.connect(config);
    const hits = found(
      await host.client.callTool({ name: 'search_tools', arguments: { query: 'environment variable' } }),
    );
    expect(hits[0]).toMatchObject({ name: 'lz__env', server: 'lz' });
    expect(existsSync(pidFile)).toBe(false);
    const call = await host.client.callTool({
      name: 'call_tool',
      arguments: { name: 'lz__env', arguments: { name: 'NO_SUCH_VARIABLE_HERE' } },
    });
    expect(textOf(call)).toBe('<unset>');
    expect(existsSync(pidFile)).toBe(true);
  }, 60_000);
});
