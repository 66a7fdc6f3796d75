/**
 * Lazy start through the built binary, for what needs the process: the `tools` and `check`
 * commands on a lazy server, a lazy server-memory that is none of the gateway's children until
 * the first call, and a raw `initialize` answered before a server that takes 20 s to start. The
 * other lazy-start scenarios run in-process in test/inprocess/lazyStart.test.ts.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  NODE,
  runCli,
  serverBin,
  spawnGateway,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';
import { lazyConfig } from './lazyScenario.js';

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

describe('tools and check with a lazy server', () => {
  it('tools lists a lazy server from its cached listing without starting it, marked cached with its age; --live starts it; check says which it will be', async () => {
    const dir = tempDir();
    const config = lazyConfig(dir);
    const pidFile = path.join(dir, 'lz.pid');
    const check = async () => (await runCli(['check', '--config', config])).stdout;

    expect(await check()).toContain(
      'server lz: start: lazy, no cached listing yet: it would start once to be listed',
    );
    // Never listed: tools starts it to list it, and keeps the listing.
    const first = await runCli(['tools', '--config', config, '--json']);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).servers[0]).toMatchObject({ name: 'lz', state: 'ready' });
    expect(existsSync(pidFile)).toBe(true);
    expect(await check()).toMatch(
      /server lz: start: lazy, listed from its cached listing of (just now|\d+ s ago) \(\d+ tools\) without starting/,
    );

    rmSync(pidFile);
    const cached = await runCli(['tools', '--config', config]);
    expect(cached.code).toBe(0);
    expect(cached.stdout).toContain('lz__echo');
    expect(cached.stdout).toMatch(
      /server lz: cached, \d+ tools \(listed from its cached listing of (just now|\d+ s ago), not started; --live starts it\)/,
    );
    expect(existsSync(pidFile)).toBe(false);
    const json = JSON.parse((await runCli(['tools', '--config', config, '--json'])).stdout);
    expect(json.servers[0]).toMatchObject({ name: 'lz', state: 'cached', cachedAt: expect.any(String) });
    expect(existsSync(pidFile)).toBe(false);

    const live = await runCli(['tools', '--config', config, '--live']);
    expect(live.code).toBe(0);
    expect(live.stdout).toMatch(/server lz: ready/);
    expect(existsSync(pidFile)).toBe(true);

    // Another entry: the cached listing is not its own.
    const changed = lazyConfig(dir, {}, ['--tools', 'basic,collide']);
    expect(await runCli(['check', '--config', changed]).then((r) => r.stdout)).toContain(
      'server lz: start: lazy, its entry or package changed since its cached listing: it would start once to be listed again',
    );
  });
});

/** The gateway's children whose command line mentions `what` (read from /proc). */
function childrenRunning(gatewayPid: number, what: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === gatewayPid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(what))
        found.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return found;
}

describe('start: lazy with a real server', () => {
  it('serves server-memory from its last listing, starting it on the first call', async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: { ...FAST_GATEWAY, start: 'lazy' },
        pins: { file: './tool-pins.json' },
        servers: {
          memory: {
            command: NODE,
            args: [serverBin('memory')],
            env: { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') },
          },
        },
      },
      dir,
    );
    host = await connectHost(config);
    const first = (await host.client.listTools()).tools.map((t) => t.name);
    await host.close();
    host = undefined;

    host = await connectHost(config);
    expect((await host.client.listTools()).tools.map((t) => t.name)).toEqual(first);
    expect(childrenRunning(host.pid, 'server-memory')).toEqual([]);
    await host.client.callTool({
      name: 'memory__create_entities',
      arguments: { entities: [{ name: 'warden', entityType: 'gateway', observations: ['lazy'] }] },
    });
    expect(childrenRunning(host.pid, 'server-memory')).toHaveLength(1);
    const graph = await host.client.callTool({ name: 'memory__read_graph', arguments: {} });
    expect(textOf(graph)).toContain('warden');
  });
});

describe('servers that are down, as the model sees them', () => {
  it('answers initialize before a server that takes 20 s to start is ready', async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: { ...FAST_GATEWAY, startupTimeout: '30s', connectTimeout: '30s' },
        servers: { slow: fixture(['--start-delay', '20000']) },
      },
      dir,
    );
    const gateway = spawnGateway(config);
    try {
      let stderr = '';
      gateway.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const answered = new Promise<string>((resolve) => {
        let out = '';
        gateway.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolve(out);
        });
      });
      gateway.stdin.write(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        }) + '\n',
      );
      const answer = JSON.parse((await answered).split('\n')[0]!) as { id: number; result?: object };
      expect(answer).toMatchObject({ id: 1, result: { serverInfo: { name: 'mcp-warden' } } });
      // The answer came while the slow server was still starting.
      expect(stderr).not.toContain('[slow]: connected');
    } finally {
      gateway.kill('SIGKILL');
    }
  });
});
