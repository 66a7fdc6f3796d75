/**
 * A restarted upstream is a new process that knows none of the host's resource subscriptions:
 * the gateway must subscribe it again, or the host silently stops getting updates. Served
 * in-process (test/inprocess/served.ts), with the fixture server as a real process to crash.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { readRecord } from '../fixtures/fixtureProcess.js';
import {
  FAST_GATEWAY,
  fixture,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

let host: HostSession | undefined;
const each = servedPerTest();

const A = 'fixture://up/a';
const B = 'fixture://up/b';

/** A host on a gateway fronting one fixture server `up` that serves resources A and B. */
function connectWithResources(dir: string, flags: string[]): Promise<HostSession> {
  const servers = { up: fixture(['--resources', '--name', 'up', ...flags]) };
  return each.connect(writeConfig({ gateway: FAST_GATEWAY, servers }, dir));
}

/** Resolves with the next `notifications/resources/updated` the host gets for `uri`. */
function nextUpdate(session: HostSession, uri: string): Promise<void> {
  return new Promise((resolve) =>
    session.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      if (n.params.uri === uri) resolve();
    }),
  );
}

/** Asks the fixture to announce a change of `uri`; it answers whether its process is subscribed. */
async function update(session: HostSession, uri: string): Promise<string> {
  return textOf(await session.client.callTool({ name: 'up__update_resource', arguments: { uri } }));
}

/** Crashes the fixture and waits until the gateway has connected its replacement. */
async function crashAndRestart(session: HostSession): Promise<void> {
  const crashed = await session.client.callTool({ name: 'up__crash', arguments: {} });
  expect(crashed.isError).toBe(true);
  await session.waitForStderr(/\[up\]: connected[\s\S]*\[up\]: connected/);
}

describe('resource subscriptions across an upstream restart', () => {
  it('are restored on the new process, whose updates reach the host; unsubscribed ones are not', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'record.jsonl');
    host = await connectWithResources(dir, ['--record', record]);
    const { resources } = await host.client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([A, B]);

    await host.client.subscribeResource({ uri: A });
    // Subscribing again (as a host may after resources/list_changed) must not double anything.
    await host.client.subscribeResource({ uri: A });
    await host.client.subscribeResource({ uri: B });
    await host.client.unsubscribeResource({ uri: B });
    let updated = nextUpdate(host, A);
    expect(await update(host, A)).toBe('notified');
    await updated;

    await crashAndRestart(host);
    updated = nextUpdate(host, A);
    expect(await update(host, A)).toBe('notified');
    await updated;
    expect(await update(host, B)).toBe('not subscribed');
    await host.waitForStderr('[up]: re-subscribed to 1 of 1 resources after the restart');

    // The new process (everything after the last initialize) got one subscribe, for A only.
    const messages = readRecord(record);
    const restarted = messages.slice(messages.map((m) => m.method).lastIndexOf('initialize'));
    expect(restarted.filter((m) => m.method === 'resources/subscribe').map((m) => m.params)).toEqual([
      { uri: A },
    ]);
  });

  it('are kept, with a warning, when the new process no longer declares resources.subscribe', async () => {
    const dir = tempDir();
    const off = path.join(dir, 'subscribe-off');
    host = await connectWithResources(dir, ['--subscribe-off-file', off]);
    await host.client.listResources();
    await host.client.subscribeResource({ uri: A });

    writeFileSync(off, '');
    await crashAndRestart(host);
    await host.waitForStderr(
      `[up]: server "up" no longer declares resources.subscribe; the host will get no updates for "${A}" until it does`,
    );
    expect(await update(host, A)).toBe('not subscribed');
    expect(host.stderr()).not.toContain('re-subscribed');
  });
});
