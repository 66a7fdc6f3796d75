/**
 * Upstreams that misbehave must never take the others down, and every failure must reach the
 * user as a message that names the server and what went wrong. Served in-process
 * (`startServing` on the config file) in front of real upstream processes that crash, hang,
 * are not installed or write junk: none of it needs the gateway's own process.
 */
import { describe, expect, it } from 'vitest';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startHttpFixture } from '../fixtures/http-fixture-server.mjs';
import { FAST_GATEWAY, fixture, textOf, writeConfig, type HostSession } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

let host: HostSession | undefined;
const each = servedPerTest();

describe('a server that fails the same way on every restart', () => {
  it('is logged in full once, with the PATH it searched, then counted', async () => {
    const searched = ['/opt/warden-test/bin', '/usr/local/bin', '/usr/bin', '/bin'].join(':');
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { good: fixture(), missing: { command: 'warden-no-such-command', env: { PATH: searched } } },
    });
    host = await each.connect(config);
    await host.waitForStderr('[missing]: marked failed');
    const lines = host
      .stderr()
      .split('\n')
      .filter((line) => line.includes('[missing]'));
    const full = lines.filter((line) => line.includes(`(searched PATH: ${searched})`));
    expect(full, lines.join('\n')).toHaveLength(1);
    expect(lines.join('\n')).not.toMatch(/searched PATH[\s\S]*searched PATH/);
    // maxRestarts: 3, so four attempts: one in full, three counted.
    expect(lines.filter((line) => line.includes('failed again, the same way as logged above'))).toEqual([
      expect.stringContaining('(2 times in a row)'),
      expect.stringContaining('(3 times in a row)'),
      expect.stringContaining('(4 times in a row)'),
    ]);
  });
});

describe('upstream failures are contained', () => {
  it('a server that crashes at start, one that is not installed, and one that hangs leave the good one serving', async () => {
    const config = writeConfig({
      // Long enough for the crashing server to start and exit on a loaded machine (at 1 s it was
      // sometimes reported as not answering), short enough not to hold the test up.
      gateway: { ...FAST_GATEWAY, connectTimeout: '3s' },
      servers: {
        good: fixture(),
        crashy: fixture(['--crash-at-start']),
        missing: { command: 'warden-no-such-command' },
        hangs: fixture(['--hang-on-initialize']),
      },
    });
    host = await each.connect(config);
    const { tools } = await host.client.listTools();
    expect(tools.map((t) => t.name)).toContain('good__echo');
    expect(tools.some((t) => t.name.startsWith('crashy__') || t.name.startsWith('hangs__'))).toBe(false);

    const result = await host.client.callTool({ name: 'good__echo', arguments: { text: 'still here' } });
    expect(textOf(result)).toBe('still here');

    const stderr = host.stderr();
    expect(stderr).toMatch(
      /\[crashy\].*process exited with code 3 during startup \(command: .*--crash-at-start\); last stderr: fixture: crashing at start/,
    );
    expect(stderr).toMatch(
      /\[missing\].*failed to start \(command: warden-no-such-command\): command not found: "warden-no-such-command" \(searched PATH: [^)]+\)/,
    );
    expect(stderr).toMatch(/\[hangs\].*did not answer initialize within 3000 ms/);
  });

  it('a crash mid-call answers the call with an error at once, and the server comes back', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } });
    host = await each.connect(config);
    await host.client.listTools();

    // The hanging call is sent first, so it is in flight upstream when the crash comes.
    const [hanging, crashed] = await Promise.all([
      host.client.callTool({ name: 'up__hang', arguments: {} }),
      host.client.callTool({ name: 'up__crash', arguments: {} }),
    ]);
    // Both in-flight calls end with the crash (not with their timeout): the message says so.
    for (const r of [crashed, hanging]) {
      expect(r.isError).toBe(true);
      expect(textOf(r)).toMatch(
        /^\[mcp-warden\] Upstream server "up" failed: process exited with code 5 while running/,
      );
      expect(textOf(r)).toContain('fixture: crashing mid-call');
    }

    await host.waitForStderr(/\[up\]: connected .*[\s\S]*\[up\]: connected/);
    const again = await host.client.callTool({ name: 'up__echo', arguments: { text: 'back' } });
    expect(textOf(again)).toBe('back');
  });

  it('a call while the server restarts is refused with a message saying so', async () => {
    const config = writeConfig({
      gateway: {
        ...FAST_GATEWAY,
        restart: { initialDelay: '2s', maxDelay: '2s', maxRestarts: 3, window: '10s' },
      },
      servers: { up: fixture() },
    });
    host = await each.connect(config);
    await host.client.listTools();
    await host.client.callTool({ name: 'up__crash', arguments: {} });
    const refused = await host.client.callTool({ name: 'up__echo', arguments: { text: 'x' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(
      /Upstream server "up" is not available: it is restarting after: .*; try again shortly/,
    );
  });

  it('a crash loop marks the server failed instead of restarting it forever', async () => {
    const config = writeConfig({
      gateway: {
        ...FAST_GATEWAY,
        restart: { initialDelay: '10ms', maxDelay: '20ms', maxRestarts: 2, window: '30s' },
      },
      servers: { good: fixture(), loop: fixture(['--crash-on-initialize']) },
    });
    host = await each.connect(config);
    await host.waitForStderr('marked failed: more than 2 failures within 30000 ms');
    const { tools } = await host.client.listTools();
    expect(tools.map((t) => t.name)).toContain('good__echo');
  });

  it('non-JSON lines on an upstream stdout are logged and skipped', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { noisy: fixture(['--junk-stdout', '--stderr-chatter']) },
    });
    host = await each.connect(config);
    const result = await host.client.callTool({ name: 'noisy__echo', arguments: { text: 'clean' } });
    expect(textOf(result)).toBe('clean');
    expect(host.stderr()).toContain('[noisy]: ignored a line on stdout (not JSON): junk before response');
    expect(host.stderr()).toContain('[noisy]: stderr: fixture stderr line 1');
  });

  it('a slow server joins later and the host is told with tools/list_changed', async () => {
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, startupTimeout: '300ms' },
      servers: { fast: fixture(), slow: fixture(['--start-delay', '1500']) },
    });
    host = await each.connect(config);
    let notified!: () => void;
    const changed = new Promise<void>((resolve) => (notified = resolve));
    host.client.setNotificationHandler(ToolListChangedNotificationSchema, () => notified());

    // Only the slow one is certain to be missing: on a loaded machine even the fast one may
    // miss a 300 ms deadline, so its presence is checked after the announcement instead.
    const first = await host.client.listTools();
    expect(first.tools.some((t) => t.name.startsWith('slow__'))).toBe(false);
    expect(host.stderr()).toMatch(/startup deadline of 300 ms passed; serving without (fast, )?slow for now/);

    await changed;
    await host.waitForStderr('[slow]: connected');
    const second = await host.client.listTools();
    expect(second.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['fast__echo', 'slow__echo']));
  });

  it('a server whose tools change tells the host', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { up: fixture(['--list-changed-after', '200']) },
    });
    host = await each.connect(config);
    let notified!: () => void;
    const changed = new Promise<void>((resolve) => (notified = resolve));
    host.client.setNotificationHandler(ToolListChangedNotificationSchema, () => notified());
    await host.client.listTools();
    await changed;
    expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('up__late_tool');
  });
});

describe('odd handshakes', () => {
  it('an HTTP server that answers server/discover with an empty success is initialized and serves', async () => {
    const server = await startHttpFixture({ unknownMethods: 'empty' });
    try {
      const config = writeConfig({
        gateway: FAST_GATEWAY,
        servers: { remote: { url: `http://127.0.0.1:${server.port}/mcp` } },
      });
      host = await each.connect(config);
      const { tools } = await host.client.listTools();
      expect(tools.map((t) => t.name)).toContain('remote__echo');
      const result = await host.client.callTool({ name: 'remote__echo', arguments: { text: 'connected' } });
      expect(textOf(result)).toBe('echo: connected');
    } finally {
      await host?.close();
      await server.close();
    }
  });
});

describe('exposed names', () => {
  it('fits long and odd names into the pattern and resolves collisions deterministically', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: {
        a: fixture(['--name', 'srv-a', '--tools', 'collide,long'], { namespace: false }),
        b: fixture(['--name', 'srv-b', '--tools', 'collide'], { namespace: false }),
      },
    });
    host = await each.connect(config);
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(names).toContain('same_name');
    expect(names).toContain('weird_name_v1');
    const shortened = names.find((n) => n.startsWith('a_very_long_tool_name'));
    expect(shortened).toHaveLength(64);
    const collided = names.find((n) => n.startsWith('same_name_'));
    expect(collided).toMatch(/^same_name_[0-9a-f]{8}$/);
    expect(host.stderr()).toContain(
      `tool name collision: "same_name" from server "b" (tool "same_name") collides with server "a" (tool "same_name"); exposing it as "${collided}"`,
    );

    // Both are reachable, each on its own server.
    expect(textOf(await host.client.callTool({ name: 'same_name', arguments: {} }))).toBe(
      'same_name from srv-a',
    );
    expect(textOf(await host.client.callTool({ name: collided!, arguments: {} }))).toBe(
      'same_name from srv-b',
    );
    expect(textOf(await host.client.callTool({ name: shortened!, arguments: { text: 'long ok' } }))).toBe(
      'long ok',
    );

    // Stable across restarts: a second gateway on the same config exposes the same names.
    const second = await each.connect(config);
    expect((await second.client.listTools()).tools.map((t) => t.name)).toEqual(names);
    await second.close();
  });

  it('merges every page of a paginated upstream tools/list, in order', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { paged: fixture(['--tools', 'many:25', '--page-size', '10']) },
    });
    host = await each.connect(config);
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    expect(names).toHaveLength(25);
    expect(names[0]).toBe('paged__tool_00001');
    expect(names[24]).toBe('paged__tool_00025');
  });

  it('applies include/exclude filters per server', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { up: fixture([], { tools: { include: ['e*', 'add'], exclude: ['env', 'echo_*'] } }) },
    });
    host = await each.connect(config);
    expect((await host.client.listTools()).tools.map((t) => t.name).sort()).toEqual(['up__add', 'up__echo']);
    await expect(host.client.callTool({ name: 'up__env', arguments: {} })).rejects.toMatchObject({
      code: -32602,
    });
  });
});
