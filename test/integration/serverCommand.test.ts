/**
 * `mcp-warden server add|remove|enable|disable|list` through the built binary: edits change the
 * one entry and keep every other byte of the file (comments, order, formatting), are checked
 * before writing (a file the edit would break is left untouched, with no backup made), keep the
 * previous file as FILE.bak, and what they write is what `check` and `tools` then see.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  FIXTURE,
  isAlive,
  NODE,
  runCli,
  serverBin,
  tempDir,
  textOf,
  waitForExit,
  writeConfig,
  type HostSession,
} from './harness.js';

/** A hand-written config: comments, blank lines, a padded flow list, a one-line entry. */
const ORIGINAL = `# My gateway.
gateway:
  startupTimeout: 5s   # short, for the tests

servers:
  # The fixture, started with node.
  fx:
    command: ${NODE}   # absolute on purpose
    args: [ ${FIXTURE} ]

  tight: {command: ${NODE}, args: [${FIXTURE}], disabled: true}
  remote:
    url: https://tools.example.com/mcp
# end of servers
audit:
  file: ./audit.jsonl
`;

function configIn(dir = tempDir(), text = ORIGINAL): string {
  const file = path.join(dir, 'proxy.config.yaml');
  writeFileSync(file, text);
  return file;
}

/** The file must be exactly as it was, and no backup made: nothing was written. */
function expectUntouched(file: string, text = ORIGINAL): void {
  expect(readFileSync(file, 'utf8')).toBe(text);
  expect(existsSync(`${file}.bak`)).toBe(false);
}

describe('server add', () => {
  it('appends a stdio server after the last entry, keeping every other byte; check and tools see it', async () => {
    const file = configIn();
    const added = await runCli([
      'server',
      'add',
      'more',
      '--config',
      file,
      '--env',
      'GREETING=hi there',
      '--',
      NODE,
      FIXTURE,
      '--name',
      'more, please',
    ]);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    expect(added.stdout).toContain(`Added server "more" in ${file}`);
    const after = readFileSync(file, 'utf8');
    expect(after).toBe(
      ORIGINAL.replace(
        '# end of servers',
        `  more:\n    command: ${NODE}\n    args: [${FIXTURE}, --name, "more, please"]\n    env: {GREETING: hi there}\n# end of servers`,
      ),
    );
    expect(readFileSync(`${file}.bak`, 'utf8')).toBe(ORIGINAL);

    const checked = await runCli(['check', '--config', file]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
    const tools = await runCli(['tools', '--config', file, '--json']);
    const listing = JSON.parse(tools.stdout) as { servers: { name: string; state: string }[] };
    expect(listing.servers.find((s) => s.name === 'more')?.state).toBe('ready');
  });

  it('adds an HTTP server with headers', async () => {
    const file = configIn();
    const added = await runCli([
      'server',
      'add',
      'api',
      '-c',
      file,
      '--url',
      'https://api.example.com/mcp',
      '--header',
      'Authorization=Bearer ${API_TOKEN:-none}',
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toContain(
      '  api:\n    url: https://api.example.com/mcp\n    headers: {Authorization: "Bearer ${API_TOKEN:-none}"}\n# end of servers',
    );
  });

  it('refuses a taken name, a bad name, and an entry that would not load, leaving the file untouched', async () => {
    const file = configIn();
    const taken = await runCli(['server', 'add', 'fx', '-c', file, '--', NODE]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain(
      `server "fx" already exists under servers in ${file}; nothing was changed`,
    );
    const badName = await runCli(['server', 'add', 'my server', '-c', file, '--', NODE]);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain('"my server" is not a server name');
    const badEnv = await runCli(['server', 'add', 'e', '-c', file, '--envfile', 'missing.env', '--', NODE]);
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toContain(`${file} was not changed: with this edit it would not be valid:`);
    expect(badEnv.stderr).toContain('servers.e.envFile: cannot read env file');
    const noCommand = await runCli(['server', 'add', 'n', '-c', file]);
    expect(noCommand.code).toBe(2);
    expect(noCommand.stderr).toContain('give the server\'s command line after "--"');
    expectUntouched(file);
  });

  it('refuses a server the managed settings block, leaving the file untouched', async () => {
    const managed = tempDir('warden-managed-');
    writeFileSync(
      path.join(managed, 'managed.yaml'),
      'servers:\n  deny:\n    - url: https://blocked.example.com/mcp\n',
    );
    const file = configIn();
    const refused = await runCli(
      ['server', 'add', 'nope', '-c', file, '--url', 'https://blocked.example.com/mcp'],
      { MCP_WARDEN_MANAGED_DIR: managed },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `${file} was not changed: the managed settings block server "nope": denied by servers.deny[0]`,
    );
    expectUntouched(file);
  });

  it('edits a JSON config as JSON, in its own indentation', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'proxy.config.json');
    const original = `${JSON.stringify({ servers: { fx: { command: NODE, args: [FIXTURE] } } }, null, 4)}\n`;
    writeFileSync(file, original);
    expect((await runCli(['server', 'add', 'two', '-c', file, '--', NODE, FIXTURE])).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(
      `${JSON.stringify({ servers: { fx: { command: NODE, args: [FIXTURE] }, two: { command: NODE, args: [FIXTURE] } } }, null, 4)}\n`,
    );
  });
});

describe('server disable and enable', () => {
  it('writes or takes out only the disabled line; tools then reports the server disabled, and ready again', async () => {
    const file = configIn();
    expect((await runCli(['server', 'disable', 'fx', '-c', file])).code).toBe(0);
    const disabled = ORIGINAL.replace(`args: [ ${FIXTURE} ]\n`, `args: [ ${FIXTURE} ]\n    disabled: true\n`);
    expect(readFileSync(file, 'utf8')).toBe(disabled);
    const off = await runCli(['tools', '--config', file, '--json']);
    const offServers = (JSON.parse(off.stdout) as { servers: { name: string; state: string }[] }).servers;
    expect(offServers.find((s) => s.name === 'fx')?.state).toBe('disabled');

    const again = await runCli(['server', 'disable', 'fx', '-c', file]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already disabled');
    expect(readFileSync(file, 'utf8')).toBe(disabled);

    expect((await runCli(['server', 'enable', 'fx', '-c', file])).code).toBe(0);
    expect((await runCli(['server', 'enable', 'tight', '-c', file])).code).toBe(0);
    // The one-line entry is written again on its line, as tight as it was.
    expect(readFileSync(file, 'utf8')).toBe(ORIGINAL.replace(', disabled: true}', '}'));
    const on = await runCli(['tools', '--config', file, '--json']);
    const onServers = (JSON.parse(on.stdout) as { servers: { name: string; state: string }[] }).servers;
    expect(onServers.filter((s) => s.state === 'ready').map((s) => s.name)).toEqual(['fx', 'tight']);
  });

  it('names the servers there are when asked for one that is not', async () => {
    const file = configIn();
    const missing = await runCli(['server', 'disable', 'nosuch', '-c', file]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`no server "nosuch" in ${file} (it has fx, tight, remote)`);
    expectUntouched(file);
  });
});

describe('server remove', () => {
  it('takes out the entry with the comment right above it, and nothing else', async () => {
    const file = configIn();
    const removed = await runCli(['server', 'remove', 'fx', '-c', file]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(
      ORIGINAL.replace(
        `  # The fixture, started with node.\n  fx:\n    command: ${NODE}   # absolute on purpose\n    args: [ ${FIXTURE} ]\n`,
        '',
      ),
    );
    expect(readFileSync(`${file}.bak`, 'utf8')).toBe(ORIGINAL);
  });

  it('refuses to remove the only server', async () => {
    const text = `servers:\n  only:\n    command: ${NODE}\n`;
    const file = configIn(tempDir(), text);
    const refused = await runCli(['server', 'remove', 'only', '-c', file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is the only one');
    expectUntouched(file, text);
  });
});

describe('server list', () => {
  it('lists each server with its settings, and what the audit log and pins file last recorded', async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const file = configIn(
      dir,
      ORIGINAL.replace(
        '  file: ./audit.jsonl\n',
        '  file: ./audit.jsonl\npins:\n  file: ./pins.json\n',
      ).replace(`    args: [ ${FIXTURE} ]\n`, `    args: [ ${FIXTURE} ]\n    startupTimeout: 30s\n`),
    );
    // A gateway run that recorded a start of fx, and a failure of remote.
    writeFileSync(
      path.join(dir, 'audit.jsonl'),
      [
        {
          seq: 0,
          ts: '2026-01-01T00:00:00.000Z',
          type: 'upstream_start',
          server: 'fx',
          transport: 'stdio',
          tools: 3,
        },
        {
          seq: 1,
          ts: '2026-01-01T00:00:01.000Z',
          type: 'upstream_failed',
          server: 'remote',
          error: 'connection refused',
        },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n') + '\n',
    );
    expect((await runCli(['pins', 'accept', '--all', '-c', file])).code).toBe(1); // remote is not reachable
    const listed = await runCli(['server', 'list', '-c', file, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const { servers } = JSON.parse(listed.stdout) as { servers: Record<string, unknown>[] };
    expect(servers.map((s) => [s.name, s.transport, s.enabled])).toEqual([
      ['fx', 'stdio', true],
      ['tight', 'stdio', false],
      ['remote', 'http', true],
    ]);
    expect(servers[0]).toMatchObject({
      command: NODE,
      args: [FIXTURE],
      settings: { startupTimeout: '30s' },
      lastKnown: { tools: 3, startedAt: '2026-01-01T00:00:00.000Z', pinned: expect.any(Number) as number },
    });
    expect(servers[2]).toMatchObject({
      url: 'https://tools.example.com/mcp',
      lastKnown: { error: 'connection refused', errorAt: '2026-01-01T00:00:01.000Z' },
    });
    const text = await runCli(['server', 'list', '-c', file]);
    expect(text.stdout).toContain('fx: stdio, enabled: ');
    expect(text.stdout).toContain('    last known: 3 tools when it started at 2026-01-01T00:00:00.000Z');
    expect(text.stdout).toContain('    last known error (2026-01-01T00:00:01.000Z): connection refused');
    expect(text.stdout).toContain('tight: stdio, disabled: ');
    expect(text.stdout).toContain('not their state now');
  });
});

describe('server list with a gateway serving the config', () => {
  let host: HostSession | undefined;
  const children: number[] = [];
  afterEach(async () => {
    await host?.close().catch(() => {});
    host = undefined;
    for (const pid of children.splice(0)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });

  /** `server list --json`, as the servers' live lines by name. */
  const live = async (file: string) => {
    const listed = await runCli(['server', 'list', '-c', file, '--json']);
    const parsed = JSON.parse(listed.stdout) as {
      servers: { name: string; live: Record<string, unknown>[] }[];
      gateways: { pid: number }[];
      stale: { pid: number }[];
    };
    return { ...parsed, byName: new Map(parsed.servers.map((s) => [s.name, s.live])) };
  };

  it("shows each server's live state in the gateway serving it: running and asleep with their tools, running after a first call, stale once the gateway is killed", async () => {
    const dir = tempDir();
    const file = writeConfig(
      {
        gateway: FAST_GATEWAY,
        pins: { file: './tool-pins.json' },
        servers: {
          everything: { command: NODE, args: [serverBin('everything')] },
          lz: fixture([], { start: 'lazy' }),
        },
      },
      dir,
    );
    // The lazy server's listing, kept by a first run.
    expect((await runCli(['tools', '-c', file])).code).toBe(0);
    const idle = await live(file);
    expect(idle.gateways).toEqual([]);
    expect((await runCli(['server', 'list', '-c', file])).stdout).toContain(
      'No gateway running for this config; showing the config only.',
    );

    host = await connectHost(file);
    await host.client.listTools();
    await expect
      .poll(async () => (await live(file)).byName, { timeout: 20_000 })
      .toEqual(
        new Map([
          [
            'everything',
            [
              expect.objectContaining({
                gateway: host.pid,
                state: 'running',
                pid: expect.any(Number),
                tools: expect.any(Number),
                lazy: false,
              }),
            ],
          ],
          ['lz', [expect.objectContaining({ gateway: host.pid, state: 'asleep', lazy: true })]],
        ]),
      );
    const before = await live(file);
    expect(before.byName.get('everything')![0]!.tools).toBeGreaterThan(5);
    expect(before.byName.get('lz')![0]!.tools).toBeGreaterThan(0);
    expect(before.byName.get('lz')![0]!.pid).toBeUndefined();
    const text = (await runCli(['server', 'list', '-c', file])).stdout;
    expect(text).toMatch(new RegExp(`gateway ${host.pid}: running since .*, pid \\d+, \\d+ tools`));
    expect(text).toMatch(new RegExp(`gateway ${host.pid}: asleep since .*, \\d+ tools, lazy`));
    expect(text).toContain(`Live state from the gateway serving it now (pid ${host.pid}).`);

    expect(textOf(await host.client.callTool({ name: 'lz__echo', arguments: { text: 'up' } }))).toBe('up');
    await expect
      .poll(async () => (await live(file)).byName.get('lz'), { timeout: 10_000 })
      .toEqual([expect.objectContaining({ state: 'running', pid: expect.any(Number) })]);

    const after = await live(file);
    for (const name of ['everything', 'lz']) children.push(after.byName.get(name)![0]!.pid as number);
    const gateway = host.pid;
    process.kill(gateway, 'SIGKILL');
    expect(await waitForExit(gateway, 10_000)).toBe(true);
    await expect.poll(async () => (await live(file)).stale.map((s) => s.pid)).toEqual([gateway]);
    const stale = await live(file);
    expect(stale.gateways).toEqual([]);
    expect(stale.byName.get('lz')).toEqual([]);
    expect((await runCli(['server', 'list', '-c', file])).stdout).toContain(
      `No gateway running for this config; showing the config only (the live state left by pid ${gateway} is stale: that gateway is gone).`,
    );
  }, 120_000);
});
