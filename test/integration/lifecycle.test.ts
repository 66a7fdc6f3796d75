/**
 * The gateway as a process: shutdown leaves no children behind, stdout carries JSON-RPC only,
 * and ids come back exactly as sent. What environment its children get runs in-process in
 * test/inprocess/lifecycle.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readRecord } from '../fixtures/fixtureProcess.js';
import {
  FAST_GATEWAY,
  FIXTURE,
  fixture,
  initialize,
  isAlive,
  killRawSessions,
  NODE,
  rawSession,
  tempDir,
  waitForExit,
  writeConfig,
} from './harness.js';

afterEach(() => killRawSessions());

/**
 * A launcher (`sh -c`) in front of a server that ignores SIGTERM and stdin EOF and has a child of
 * its own (only a process-group kill reaches all of them), and a plain server beside it.
 */
function stubbornTree(dir: string, extraFlags = '') {
  const files = {
    stubborn: path.join(dir, 'stubborn.pid'),
    grandchild: path.join(dir, 'grandchild.pid'),
  };
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      servers: {
        stubborn: {
          command: 'sh',
          args: [
            '-c',
            `"${NODE}" "${FIXTURE}" --ignore-sigterm --pid-file "${files.stubborn}" --spawn-grandchild "${files.grandchild}" ${extraFlags}`,
          ],
        },
        plain: fixture(['--pid-file', path.join(dir, 'plain.pid')]),
      },
    },
    dir,
  );
  return { config, files };
}

describe('shutdown', () => {
  it.each(['stdin closes', 'SIGTERM'])(
    'on %s: exits within 2 s, answers in-flight calls, kills grandchildren',
    async (how) => {
      const dir = tempDir();
      const { config, files } = stubbornTree(dir);
      const grandchildPid = files.grandchild;
      const stubbornPid = files.stubborn;
      const s = rawSession(config);
      await initialize(s);
      const listed = s.next((m) => m.id === 1);
      s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
      await listed;
      const pids = [Number(readFileSync(stubbornPid, 'utf8')), Number(readFileSync(grandchildPid, 'utf8'))];
      for (const pid of pids) expect(isAlive(pid)).toBe(true);

      // A call that would never finish on its own. The fixture handles messages in order, so once
      // the echo sent after it is answered, the hanging call has reached the upstream.
      const answered = s.next((m) => m.id === 2);
      const echoed = s.next((m) => m.id === 3);
      s.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plain__hang","arguments":{}}}');
      s.send(
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"plain__echo","arguments":{"text":"after"}}}',
      );
      await echoed;

      const started = Date.now();
      if (how === 'SIGTERM') s.child.kill('SIGTERM');
      else s.child.stdin.end();
      const code = await s.exited;
      expect(Date.now() - started).toBeLessThan(2000);
      expect(code).toBe(0);

      const response = (await answered) as { result: { isError: boolean; content: { text: string }[] } };
      expect(response.result.isError).toBe(true);
      expect(response.result.content[0]!.text).toContain('the gateway is shutting down');
      for (const pid of pids) expect(await waitForExit(pid, 1000)).toBe(true);
    },
  );
});

describe('orphans', () => {
  it('a gateway killed with SIGKILL leaves no process of any upstream tree behind', async () => {
    const dir = tempDir();
    const setsidPid = path.join(dir, 'setsid.pid');
    const { config, files } = stubbornTree(dir, `--spawn-setsid-grandchild "${setsidPid}"`);
    const s = rawSession(config);
    await initialize(s);
    const listed = s.next((m) => m.id === 1);
    s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    await listed;
    const pids = [files.stubborn, files.grandchild, setsidPid, path.join(dir, 'plain.pid')].map((f) =>
      Number(readFileSync(f, 'utf8')),
    );
    for (const pid of pids) expect(isAlive(pid)).toBe(true);

    s.child.kill('SIGKILL');
    await s.exited;
    const survivors: number[] = [];
    for (const pid of pids) if (!(await waitForExit(pid, 5000))) survivors.push(pid);
    for (const pid of survivors) process.kill(pid, 'SIGKILL');
    expect(survivors).toEqual([]);
  });

  // A server that exits as soon as its stdin closes (most do) loses the race with a watcher that
  // only looks afterwards: its orphaned setsid child can no longer be traced to it. The watcher
  // stops the server's group first, which wins that race only when the scheduler runs the watcher
  // before the server has exited: on a loaded machine it sometimes does not (seen 1 run in 4 at a
  // load of 19 on 2 cores). The guarantee is that good and no better, so the test is given
  // retries rather than a claim the lifeline cannot make.
  it.each([
    [
      'a node grandchild that calls setsid',
      (pidFile: string) => fixture(['--spawn-setsid-grandchild', pidFile]),
    ],
    [
      '`setsid sleep 1000` behind a launcher',
      (pidFile: string) => ({
        command: 'sh',
        args: ['-c', `setsid sleep 1000 & echo $! > "${pidFile}"; exec "${NODE}" "${FIXTURE}"`],
      }),
    ],
  ])(
    'a SIGKILLed gateway leaves no setsid descendant behind (%s) of a server that exits on end of input',
    { retry: 2 },
    async (_what, server) => {
      const dir = tempDir();
      const pidFile = path.join(dir, 'setsid.pid');
      const config = writeConfig({ gateway: FAST_GATEWAY, servers: { quick: server(pidFile) } }, dir);
      const s = rawSession(config);
      await initialize(s);
      const listed = s.next((m) => m.id === 1);
      s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
      await listed;
      const pid = Number(readFileSync(pidFile, 'utf8'));
      expect(isAlive(pid)).toBe(true);

      s.child.kill('SIGKILL');
      await s.exited;
      const gone = await waitForExit(pid, 5000);
      if (!gone) process.kill(pid, 'SIGKILL');
      expect(gone).toBe(true);
    },
  );

  it('a clean shutdown also stops a grandchild that left the process group (setsid)', async () => {
    const dir = tempDir();
    const setsidPid = path.join(dir, 'setsid.pid');
    const { config, files } = stubbornTree(dir, `--spawn-setsid-grandchild "${setsidPid}"`);
    const s = rawSession(config);
    await initialize(s);
    const listed = s.next((m) => m.id === 1);
    s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    await listed;
    const pids = [files.stubborn, files.grandchild, setsidPid].map((f) => Number(readFileSync(f, 'utf8')));
    for (const pid of pids) expect(isAlive(pid)).toBe(true);

    s.child.stdin.end();
    expect(await s.exited).toBe(0);
    const survivors: number[] = [];
    for (const pid of pids) if (!(await waitForExit(pid, 1000))) survivors.push(pid);
    for (const pid of survivors) process.kill(pid, 'SIGKILL');
    expect(survivors).toEqual([]);
  });
});

describe('stdout', () => {
  it('carries nothing but JSON-RPC, even with noisy upstreams and a junk line from the host', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: {
        noisy: fixture(['--junk-stdout', '--stderr-chatter']),
        crashy: fixture(['--crash-at-start']),
      },
    });
    const s = rawSession(config);
    await initialize(s);
    const list = s.next((m) => m.id === 1);
    s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    await list;
    const call = s.next((m) => m.id === 'call-1');
    s.send(
      '{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"noisy__echo","arguments":{"text":"x"}}}',
    );
    await call;
    const junkAnswer = s.next((m) => m.id === null);
    s.send('this is not json');
    expect(await junkAnswer).toMatchObject({ error: { code: -32700 } });
    s.child.stdin.end();
    await s.exited;

    expect(s.lines.length).toBeGreaterThanOrEqual(4);
    for (const line of s.lines) {
      const m = JSON.parse(line) as Record<string, unknown>;
      expect(m.jsonrpc).toBe('2.0');
    }
    expect(s.stderr()).toContain('ignored a line on stdout');
  });

  it('returns ids exactly as sent, including integers beyond 2^53', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } });
    const s = rawSession(config);
    await initialize(s);
    const big = '12345678901234567890123';
    const answered = s.next((_m, line) => line.includes(big));
    s.send(
      `{"jsonrpc":"2.0","id":${big},"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"big id"}}}`,
    );
    await answered;
    const line = s.lines.find((l) => l.includes(big))!;
    expect(line).toContain(`"id":${big}`);
    expect(line).toContain('big id');
    s.child.stdin.end();
    await s.exited;
  });
});

/** Polls until `file` exists; false after `timeoutMs`. */
async function waitForFile(file: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(file)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

describe('start-up', () => {
  it('spawns upstreams before the host initializes, and declares its capabilities to them after', async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, 'up.pid');
    const record = path.join(dir, 'record.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        servers: { up: fixture(['--pid-file', pidFile, '--record', record]) },
      },
      dir,
    );
    const s = rawSession(config);
    // The server's process runs while the host has not said anything yet, and is told nothing.
    expect(await waitForFile(pidFile, 10_000)).toBe(true);
    expect(isAlive(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(readRecord(record)).toEqual([]);

    await initialize(s, { roots: { listChanged: true }, sampling: {}, experimental: { x: {} } });
    const listed = s.next((m) => m.id === 1);
    s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    const list = (await listed) as { result: { tools: { name: string }[] } };
    expect(list.result.tools.map((t) => t.name)).toContain('up__echo');

    const [first] = readRecord(record) as { method?: string; params?: { capabilities?: unknown } }[];
    expect(first?.method).toBe('initialize');
    expect(first?.params?.capabilities).toEqual({ roots: { listChanged: true }, sampling: {} });
  });

  it('stops the upstreams it spawned when the host leaves before initializing', async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, 'up.pid');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { up: fixture(['--pid-file', pidFile]) } },
      dir,
    );
    const s = rawSession(config);
    expect(await waitForFile(pidFile, 10_000)).toBe(true);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const started = Date.now();
    s.child.stdin.end();
    expect(await s.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await waitForExit(pid, 1000)).toBe(true);
    expect(s.lines).toEqual([]);
  });
  it('kills the upstreams it spawned when a policy file turns out invalid', async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, 'up.pid');
    writeFileSync(path.join(dir, 'bad.yaml'), 'default: maybe\n');
    const config = writeConfig(
      { policies: ['bad.yaml'], servers: { up: fixture(['--pid-file', pidFile]) } },
      dir,
    );
    const s = rawSession(config);
    expect(await s.exited).toBe(2);
    expect(s.stderr()).toContain('invalid policy:');
    expect(s.lines).toEqual([]);
    // The server may not have got as far as writing its pid; if it did, it is gone.
    if (existsSync(pidFile))
      expect(await waitForExit(Number(readFileSync(pidFile, 'utf8')), 1000)).toBe(true);
  });
});

describe('invalid config', () => {
  it('refuses to start, with the file, line and key on stderr', async () => {
    const config = writeConfig(`servers:\n  up:\n    comand: node\n`);
    const s = rawSession(config);
    const code = await s.exited;
    expect(code).toBe(2);
    expect(s.lines).toEqual([]);
    expect(s.stderr()).toContain(
      `${config}:3:5: servers.up.comand: unknown key "comand" (did you mean "command"?)`,
    );
    expect(existsSync(config)).toBe(true);
  });
});
