/**
 * Readiness per server: a call to a server that is ready goes at once, whatever a slower server
 * is doing. Through the built binary, driven raw, so the test sees the order of the answers.
 */
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, spawnGateway, writeConfig } from './harness.js';

let child: ReturnType<typeof spawnGateway> | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

describe('readiness per server', () => {
  it('answers a call to a ready server before a slow server has finished starting', async () => {
    // The slow server acts on nothing for 30 s; the startup window is 20 s. The initialize answer
    // waits for that window (to say what every server offers); the call must not.
    const config = writeConfig({
      gateway: { startupTimeout: '20s', connectTimeout: '60s' },
      servers: { up: fixture(), slow: fixture(['--start-delay', '30000']) },
    });
    child = spawnGateway(config);
    const order: (number | string)[] = [];
    const answered = new Promise<void>((resolve) => {
      createInterface({ input: child!.stdout }).on('line', (line) => {
        const message = JSON.parse(line) as { id?: number; result?: { content?: { text?: string }[] } };
        if (message.id === undefined) return;
        order.push(message.id === 1 ? (message.result?.content?.[0]?.text ?? 'no text') : message.id);
        if (message.id === 1) resolve();
      });
    });
    const send = (message: object) => child!.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'up__echo', arguments: { text: 'now' } },
    });
    await answered;
    // The call was answered, and the initialize answer (waiting for the slow server) was not yet.
    expect(order).toEqual(['now']);
  });
});
