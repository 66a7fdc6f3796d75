/**
 * An upstream that stops talking is seen at once, and one that talks too much is not obeyed
 * notification by notification: served in-process (`startServing` on the config file, real
 * fixture upstreams), with the SDK Client as host.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, tempDir, textOf, writeConfig } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const served = servedPerTest();

describe('upstream liveness', () => {
  it('a server that closes its stdout but keeps running is a disconnect: calls fail at once, it restarts', async () => {
    // A long timeout: if the closed stdout went unseen, the next call would wait it out.
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, timeout: '2m' },
      servers: { up: fixture(['--tools', 'basic,odd']) },
    });
    const host = await served.connect(config);
    expect(textOf(await host.client.callTool({ name: 'up__close_stdout', arguments: {} }))).toBe(
      'closing stdout',
    );
    await host.waitForStderr(/up.*closed its stdout while running/, 10_000);
    // Restarted: the same tool set answers again.
    await expect
      .poll(
        async () => textOf(await host.client.callTool({ name: 'up__echo', arguments: { text: 'back' } })),
        {
          timeout: 10_000,
        },
      )
      .toBe('back');
  });

  it('a storm of list_changed is coalesced: a few re-lists and host notifications, not one each', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'record.jsonl');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { up: fixture(['--tools', 'basic,odd', '--record', record]) } },
      dir,
    );
    let told = 0;
    const host = await served.connect(config, {
      beforeConnect: (client) =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => void told++),
    });
    await host.client.listTools();
    const lists = () =>
      readFileSync(record, 'utf8')
        .split('\n')
        .filter((line) => line.includes('"method":"tools/list"')).length;
    const before = lists();
    await host.client.callTool({ name: 'up__list_changed_storm', arguments: { count: 300 } });
    // Settled: a call made after the storm is answered after every notification was read.
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'after' } });
    await expect.poll(() => lists() - before).toBeGreaterThan(0);
    expect(lists() - before).toBeLessThanOrEqual(3);
    // The list did not change, so the host is not told it did.
    expect(told).toBe(0);
  });

  it('a server that stops reading its input gets no more than the bound: later calls fail, saying so', async () => {
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, timeout: '3s', maxMessageSize: '1MiB' },
      servers: { up: fixture(['--tools', 'basic,odd']) },
    });
    const host = await served.connect(config);
    expect(textOf(await host.client.callTool({ name: 'up__stop_reading', arguments: {} }))).toBe(
      'not reading',
    );
    const text = 'y'.repeat(300 * 1024);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => host.client.callTool({ name: 'up__echo', arguments: { text } })),
    );
    const refused = results.filter((r) => textOf(r).includes('it is not reading its input'));
    expect(refused.length).toBeGreaterThan(0);
    expect(textOf(refused[0]!)).toMatch(
      /Upstream server "up" failed: cannot send tools\/call: it is not reading its input: \d+ bytes/,
    );
    // Every call ended: the ones sent before the bound time out, none hangs.
    expect(results.every((r) => r.isError === true)).toBe(true);
  });
});
