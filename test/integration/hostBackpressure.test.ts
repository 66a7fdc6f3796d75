/**
 * A host that stops reading: the gateway stops reading its upstreams until the host reads again,
 * says so in its log, and then delivers every answer. Through the built binary, driven raw so the
 * test decides when the host's end of stdout is read.
 */
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, spawnGateway, writeConfig } from './harness.js';

let child: ReturnType<typeof spawnGateway> | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

describe('a host that stops reading', () => {
  it('pauses reading from upstreams, says so, and delivers everything once the host reads again', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } });
    child = spawnGateway(config);
    let stderr = '';
    const stderrHas = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "${text}" on stderr; got:\n${stderr}`)), 20_000);
        const check = () => {
          if (!stderr.includes(text)) return;
          clearTimeout(timer);
          child!.stderr.off('data', check);
          resolve();
        };
        child!.stderr.on('data', check);
        check();
      });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const send = (message: object) => child!.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    // Answers far larger than a pipe holds, and nobody reading them.
    const text = 'x'.repeat(256 * 1024);
    const calls = 40;
    for (let id = 1; id <= calls; id++)
      send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'up__echo', arguments: { text } } });
    await stderrHas('the host is not reading what mcp-warden writes');

    const answered = new Set<number>();
    const allAnswered = new Promise<void>((resolve) => {
      createInterface({ input: child!.stdout, crlfDelay: Infinity }).on('line', (line) => {
        const message = JSON.parse(line) as { id?: number; result?: unknown };
        if (typeof message.id === 'number' && message.id > 0 && message.result !== undefined)
          answered.add(message.id);
        if (answered.size === calls) resolve();
      });
    });
    await allAnswered;
    await stderrHas('the host reads again');
    expect(answered.size).toBe(calls);
  });
});
