/**
 * Lazy start and idle stop served in-process (`startServing` on the config file, real fixture
 * upstreams): a lazy server is listed from its last listing without running, starts on the
 * first call, stops when idle and starts again; a subscription keeps it awake; a changed entry
 * makes its listing unusable. And what the model sees of servers that are down. The `tools` and
 * `check` commands, the gateway's own children, and how soon a raw `initialize` is answered stay
 * with the built binary in test/integration/lazyStart.test.ts.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  FAST_GATEWAY,
  fixture,
  isAlive,
  NODE,
  FIXTURE,
  tempDir,
  textOf,
  waitForExit,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { lazyConfig } from '../integration/lazyScenario.js';
import { servedPerTest } from './perTest.js';

let host: HostSession | undefined;
const each = servedPerTest();

const pidIn = (file: string): number => Number(readFileSync(file, 'utf8'));

/** Waits until the fixture wrote its pid to `file` (a process of it started). */
async function startedPid(file: string): Promise<number> {
  await expect.poll(() => existsSync(file), { timeout: 10_000 }).toBe(true);
  await expect.poll(() => readFileSync(file, 'utf8').length > 0, { timeout: 2000 }).toBe(true);
  return pidIn(file);
}

describe('start: lazy and idleTimeout', () => {
  it('lists a lazy server once, then lists it without starting it; the first call starts it, idleness stops it, the next call starts it again', async () => {
    const dir = tempDir();
    const config = lazyConfig(dir);
    const pidFile = path.join(dir, 'lz.pid');

    // Never listed before: it starts with the gateway to be listed, then stops when idle.
    host = await each.connect(config);
    expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('lz__echo');
    const first = await startedPid(pidFile);
    expect(await waitForExit(first, 10_000)).toBe(true);
    await host.waitForStderr('[lz]: stopped after 300 ms without requests');
    expect(host.stderr()).not.toMatch(/\[lz\]:.*(restarting|exited|error)/i);
    await host.close();

    // Listed from its last listing: no process, until a call needs one.
    rmSync(pidFile);
    host = await each.connect(config);
    const listed = (await host.client.listTools()).tools.map((t) => t.name);
    expect(listed).toContain('lz__echo');
    expect(existsSync(pidFile)).toBe(false);
    await host.waitForStderr('[lz]: listed from its last listing');
    expect(existsSync(pidFile)).toBe(false);

    const answer = await host.client.callTool({ name: 'lz__echo', arguments: { text: 'woken' } });
    expect(textOf(answer)).toBe('woken');
    const second = pidIn(pidFile);
    expect(isAlive(second)).toBe(true);

    // Idle for 300 ms: stopped; the next call starts a new process.
    expect(await waitForExit(second, 10_000)).toBe(true);
    const again = await host.client.callTool({ name: 'lz__echo', arguments: { text: 'again' } });
    expect(textOf(again)).toBe('again');
    const third = pidIn(pidFile);
    expect(third).not.toBe(second);
    expect(isAlive(third)).toBe(true);
  });

  it('gives a lazy server that is not running the capabilities of its last listing in the initialize answer', async () => {
    const dir = tempDir();
    const config = lazyConfig(dir, {}, ['--resources']);
    host = await each.connect(config);
    await host.client.listTools();
    await host.waitForStderr('[lz]: stopped after');
    await host.close();

    rmSync(path.join(dir, 'lz.pid'));
    host = await each.connect(config);
    expect(host.client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
    expect(existsSync(path.join(dir, 'lz.pid'))).toBe(false);
  });

  it('tells the host when a lazy server, once started, lists other tools than its kept listing, and keeps the new listing; the same listing tells it nothing', async () => {
    const dir = tempDir();
    const config = lazyConfig(dir);
    host = await each.connect(config);
    await host.client.listTools();
    await host.waitForStderr('[lz]: stopped after');
    await host.close();

    // The kept listing lacks a tool the server has: as if the server gained it since.
    const listsFile = path.join(dir, 'tool-pins.listings', 'lz.lists.json');
    const kept = JSON.parse(readFileSync(listsFile, 'utf8')) as { tools: { name: string }[] };
    kept.tools = kept.tools.filter((t) => t.name !== 'add');
    writeFileSync(listsFile, JSON.stringify(kept));

    const startOnce = async () => {
      host = await each.connect(config);
      let changes = 0;
      host.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
      const before = (await host.client.listTools()).tools.map((t) => t.name);
      // The call waits for the start, whose listing (and any announcement of it) comes first.
      const answer = await host.client.callTool({ name: 'lz__echo', arguments: { text: 'up' } });
      expect(textOf(answer)).toBe('up');
      const after = (await host.client.listTools()).tools.map((t) => t.name);
      await host.close();
      return { before, after, changes };
    };
    const stale = await startOnce();
    expect(stale.before).not.toContain('lz__add');
    expect(stale.after).toContain('lz__add');
    expect(stale.changes).toBe(1);
    const rewritten = JSON.parse(readFileSync(listsFile, 'utf8')) as { tools: { name: string }[] };
    expect(rewritten.tools.map((t) => t.name)).toContain('add');

    const same = await startOnce();
    expect(same.before).toContain('lz__add');
    expect(same.after).toEqual(same.before);
    expect(same.changes).toBe(0);
  });

  it('answers an unsubscribe for an asleep server without starting it', async () => {
    const dir = tempDir();
    const config = lazyConfig(dir, {}, ['--resources']);
    host = await each.connect(config);
    await host.client.listTools();
    await host.waitForStderr('[lz]: stopped after');
    await host.close();

    const pidFile = path.join(dir, 'lz.pid');
    rmSync(pidFile);
    host = await each.connect(config);
    await host.waitForStderr('[lz]: listed from its last listing');
    // Asleep, it holds no subscription: the unsubscribe ends the host's without waking it.
    await host.client.unsubscribeResource({ uri: 'fixture://fixture/a' });
    expect(existsSync(pidFile)).toBe(false);
    expect(host.stderr()).not.toContain('[lz]: starting: a request needs it');
    // A subscribe is a request that needs it.
    await host.client.subscribeResource({ uri: 'fixture://fixture/a' });
    await startedPid(pidFile);
  });

  it('keeps a server with a resource subscription awake, and lets it stop once unsubscribed', async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: { ...FAST_GATEWAY, idleTimeout: '300ms' },
        servers: {
          sub: fixture(['--resources', '--pid-file', path.join(dir, 'sub.pid')]),
          other: fixture(['--pid-file', path.join(dir, 'other.pid')]),
        },
      },
      dir,
    );
    host = await each.connect(config);
    const uri = 'fixture://fixture/a';
    await host.client.subscribeResource({ uri });
    const subscribed = await startedPid(path.join(dir, 'sub.pid'));
    // On a slow machine the server may have gone idle once before the subscribe came (it
    // started with the gateway): only what follows the subscription counts.
    const subscribedAt = host.stderr().length;
    // The other server's last request settles after the subscribe did: once its idle timeout
    // has stopped it, the subscribed server has been quiet longer than its own.
    await host.client.callTool({ name: 'other__echo', arguments: { text: 'x' } });
    const calledAt = host.stderr().length;
    const since = (from: number) => () => host!.stderr().slice(from);
    await expect
      .poll(since(calledAt), { timeout: 10_000 })
      .toContain('[other]: stopped after 300 ms without requests');
    expect(since(subscribedAt)()).not.toContain('[sub]: stopped after');
    expect(isAlive(subscribed)).toBe(true);

    const unsubscribedAt = host.stderr().length;
    await host.client.unsubscribeResource({ uri });
    await expect
      .poll(since(unsubscribedAt), { timeout: 10_000 })
      .toContain('[sub]: stopped after 300 ms without requests');
    expect(await waitForExit(subscribed, 10_000)).toBe(true);
  });

  it('does not use a listing kept for another entry: a changed entry is started to be listed again', async () => {
    const dir = tempDir();
    host = await each.connect(lazyConfig(dir));
    await host.client.listTools();
    await host.waitForStderr('[lz]: stopped after');
    await host.close();

    rmSync(path.join(dir, 'lz.pid'));
    // Another tool set: the kept listing would show tools this entry does not serve.
    host = await each.connect(lazyConfig(dir, {}, ['--tools', 'basic,collide']));
    await startedPid(path.join(dir, 'lz.pid'));
    await host.waitForStderr('its entry or package changed since it was last listed');
    expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('lz__same_name');
  });

  it('tells the model, for a tool of its last listing, that a lazy server cannot start', async () => {
    const dir = tempDir();
    const script = path.join(dir, 'server.sh');
    writeFileSync(script, `#!/bin/sh\nexec "${NODE}" "${FIXTURE}"\n`, { mode: 0o755 });
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        pins: { file: './tool-pins.json' },
        servers: { lz: { command: script, start: 'lazy', idleTimeout: '300ms' } },
      },
      dir,
    );
    host = await each.connect(config);
    await host.client.listTools();
    await host.waitForStderr('[lz]: stopped after');
    await host.close();

    // The same entry, whose program now fails at once: the kept listing is still its own.
    writeFileSync(script, '#!/bin/sh\necho "cannot start today" >&2\nexit 3\n', { mode: 0o755 });
    host = await each.connect(config);
    expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('lz__echo');
    const result = await host.client.callTool({ name: 'lz__echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(
      /Upstream server "lz" is not available: it is restarting after: .*cannot start today/s,
    );
  });
});

describe('servers that are down, as the model sees them', () => {
  it("answers a call to a failed or disabled server's tool with an isError result naming the server and what to do", async () => {
    const config = writeConfig({
      gateway: {
        ...FAST_GATEWAY,
        restart: { initialDelay: '10ms', maxDelay: '20ms', maxRestarts: 1, window: '10s' },
      },
      servers: {
        ok: fixture(),
        bad: fixture(['--crash-at-start']),
        off: fixture([], { disabled: true }),
      },
    });
    host = await each.connect(config);
    await host.waitForStderr('[bad]: marked failed');
    const failed = await host.client.callTool({ name: 'bad__echo', arguments: { text: 'x' } });
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toMatch(/Upstream server "bad" is not available: it failed .*restart the gateway/);
    const disabled = await host.client.callTool({ name: 'off__echo', arguments: { text: 'x' } });
    expect(disabled.isError).toBe(true);
    expect(textOf(disabled)).toMatch(
      /Upstream server "off" is not available: it is disabled in the config \(.*proxy\.config\.json:\d+\)/,
    );
    // A ready server's unknown tool is still an unknown tool.
    await expect(host.client.callTool({ name: 'ok__nope', arguments: {} })).rejects.toThrow(
      /Unknown tool: ok__nope/,
    );
  });
});
