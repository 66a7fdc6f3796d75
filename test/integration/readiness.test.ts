/**
 * Readiness per server: the host's initialize is answered, and a call to a server that is ready
 * goes, at once, whatever a slower server is doing. Through the built binary, driven raw.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { startModernHost, type ModernHost } from '../fixtures/modernHost.js';
import { CLI, fixture, spawnGateway, tempDir, writeConfig } from './harness.js';
import { modernResult } from './modernWire.js';

let child: ReturnType<typeof spawnGateway> | undefined;
let modern: ModernHost | undefined;
afterEach(async () => {
  child?.kill('SIGKILL');
  child = undefined;
  await modern?.close();
  modern = undefined;
});

describe('readiness per server', () => {
  it('answers a call to a ready server before a slow server has finished starting', async () => {
    // The slow server acts on nothing for 30 s; the startup window is 20 s. The call must wait
    // for neither.
    const config = writeConfig({
      gateway: { startupTimeout: '20s', connectTimeout: '60s' },
      servers: { up: fixture(), slow: fixture(['--start-delay', '30000']) },
    });
    const gateway = raw(config);
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
    const gateway = raw(config);
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
    modern = startModernHost(CLI, config);
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

/** The gateway driven raw: lines out, and each answer by id as it arrives. */
function raw(config: string) {
  child = spawnGateway(config);
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const answers = new Map<number | string, object>();
  const waiting = new Map<number | string, (m: object) => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as { id?: number | string };
    if (message.id === undefined) return;
    answers.set(message.id, message);
    waiting.get(message.id)?.(message);
  });
  return {
    send: (message: object) => child!.stdin.write(`${JSON.stringify(message)}\n`),
    answer: (id: number | string) =>
      new Promise<object>((resolve) => {
        const known = answers.get(id);
        if (known !== undefined) resolve(known);
        else waiting.set(id, resolve);
      }),
    stderr: () => stderr,
  };
}
