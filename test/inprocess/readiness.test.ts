/**
 * Readiness per server: the host's initialize (or a 2026-07-28 host's server/discover) is
 * answered, and a call to a server that is ready goes, at once, whatever a slower server is
 * doing. Served in-process (`startServing` on the config file, real fixture upstreams), driven
 * raw, line by line, or by a host of the stateless revision (servedModern.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture, tempDir, writeConfig } from '../integration/harness.js';
import { modernResult } from '../integration/modernWire.js';
import { servedPerTest } from './perTest.js';
import { servedRawSession } from './servedRaw.js';

const opened = servedPerTest();

/** The gateway served in this process, driven raw (a message per line); closed after the test. */
async function raw(config: string): Promise<{
  send(message: object): void;
  answer(id: number): Promise<object>;
  stderr(): string;
}> {
  const session = opened.track(await servedRawSession(config));
  return {
    send: (message) => void session.send(JSON.stringify(message)),
    answer: (id) => session.next((message) => message.id === id),
    stderr: session.stderr,
  };
}

describe('readiness per server', () => {
  it('answers a call to a ready server before a slow server has finished starting', async () => {
    // The slow server acts on nothing for 30 s; the startup window is 20 s. The call must wait
    // for neither.
    const config = writeConfig({
      gateway: { startupTimeout: '20s', connectTimeout: '60s' },
      servers: { up: fixture(), slow: fixture(['--start-delay', '30000']) },
    });
    const gateway = await raw(config);
    gateway.send(INITIALIZE);
    gateway.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'up__echo', arguments: { text: 'now' } },
    });
    const answer = (await gateway.answer(1)) as { result?: { content?: { text?: string }[] } };
    expect(answer.result?.content?.[0]?.text).toBe('now');
    expect(gateway.stderr()).not.toContain('startup deadline');
  });

  it('answers initialize while a server is still blocked in its handshake', async () => {
    // The startup window is 20 s and the stuck server would be waited for 60 s: an initialize
    // answer that waited for either would come only after the gateway logs that the window passed.
    const dir = tempDir();
    const record = path.join(dir, 'stuck.jsonl');
    const config = writeConfig(
      {
        gateway: { startupTimeout: '20s', connectTimeout: '60s' },
        servers: { up: fixture(), stuck: fixture(['--hang-on-initialize', '--record', record]) },
      },
      dir,
    );
    const gateway = await raw(config);
    gateway.send(INITIALIZE);
    const answer = (await gateway.answer(0)) as {
      result?: { protocolVersion?: string; capabilities?: object };
    };
    expect(gateway.stderr()).not.toContain('startup deadline');
    expect(answer.result?.protocolVersion).toBe('2025-06-18');
    expect(answer.result?.capabilities).toMatchObject({ tools: { listChanged: true } });
    // The stuck server is asked (the answer, bounded to under a second, may even come first),
    // and never answers.
    const asked = () =>
      (existsSync(record) ? readFileSync(record, 'utf8') : '')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { method?: string }).method);
    await expect.poll(asked, { timeout: 10_000 }).toContain('initialize');
    gateway.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    gateway.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'up__echo', arguments: { text: 'hi' } },
    });
    expect(((await gateway.answer(1)) as { result?: { isError?: boolean } }).result?.isError).not.toBe(true);
  });

  it('answers a 2026-07-28 host’s server/discover while a server is still blocked in its handshake', async () => {
    const config = writeConfig({
      gateway: { startupTimeout: '20s', connectTimeout: '60s' },
      servers: { up: fixture(), stuck: fixture(['--hang-on-initialize']) },
    });
    const modern = await opened.modern(config);
    const discovered = modernResult('server/discover', await modern.request('server/discover'));
    expect(modern.stderr()).not.toContain('startup deadline');
    expect(discovered.capabilities).toMatchObject({ tools: { listChanged: true } });
  });
});

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
