/**
 * What the host sends that is not a message we serve: every malformed message whose id can be
 * read is answered under that id (null when it cannot), -32600 where JSON-RPC says, -32700 only
 * for text that is not JSON; nothing before initialize but ping is served; nothing the host sent
 * is echoed back at length; and arguments nested too deep are refused and recorded as such.
 * Served in-process (test/inprocess/served.ts), raw lines over the gateway's stdio.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FAST_GATEWAY, fixture, initialize, tempDir, writeConfig } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

async function session(extra: Record<string, unknown> = {}, dir = tempDir()) {
  return each.raw(
    writeConfig(
      { gateway: { ...FAST_GATEWAY, maxMessageSize: '1MiB' }, servers: { up: fixture() }, ...extra },
      dir,
    ),
  );
}

type Answer = { id?: unknown; result?: unknown; error?: { code: number; message: string } };

describe('before initialize', () => {
  it('answers ping, and refuses anything else with the SDK’s "Server not initialized" error', async () => {
    const s = await session();
    const pong = s.next((m) => m.id === 'p');
    const listed = s.next((m) => m.id === 'l');
    const called = s.next((m) => m.id === 'c');
    s.send('{"jsonrpc":"2.0","id":"p","method":"ping"}');
    s.send('{"jsonrpc":"2.0","id":"l","method":"tools/list"}');
    s.send('{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"up__echo","arguments":{}}}');
    expect(await pong).toMatchObject({ result: {} });
    for (const answer of [await listed, await called]) {
      expect(answer).toMatchObject({ error: { code: -32000 } });
      expect((answer as Answer).error!.message).toContain('Server not initialized');
    }
    // Once initialized, the same request is served.
    await initialize(s);
    const later = s.next((m) => m.id === 'l2');
    s.send('{"jsonrpc":"2.0","id":"l2","method":"tools/list"}');
    expect(await later).toHaveProperty('result.tools');
  });
});

describe('malformed messages', () => {
  it.each([
    ['jsonrpc "1.0"', '{"jsonrpc":"1.0","id":"a1","method":"ping"}', 'a1', -32600],
    ['params as an array', '{"jsonrpc":"2.0","id":"a2","method":"tools/list","params":[1]}', 'a2', -32602],
    ['method not a string', '{"jsonrpc":"2.0","id":42,"method":7}', 42, -32600],
    ['a boolean id', '{"jsonrpc":"2.0","id":true,"method":"ping"}', null, -32600],
    ['an object id', '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', null, -32600],
    ['an id of null', '{"jsonrpc":"2.0","id":null,"method":"ping"}', null, -32600],
    ['text that is not JSON', '{"jsonrpc":"2.0","id":5,"method":', null, -32700],
  ])('%s gets an error under the id it can be told by', async (_what, line, id, code) => {
    const s = await session();
    await initialize(s);
    const answered = s.next((m) => m.id === id && 'error' in m);
    s.send(line);
    expect(await answered).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
    // Nothing else was served for it (an id of null must not be served as a request).
    const pong = s.next((m) => m.id === 'after');
    s.send('{"jsonrpc":"2.0","id":"after","method":"ping"}');
    await pong;
    expect(
      s.lines.filter((l) => l.includes('"result"') && !l.includes('"after"') && !l.includes('"id":0')),
    ).toEqual([]);
  });

  it('a batch gets one -32600 per request in it, under each one’s id', async () => {
    const s = await session();
    await initialize(s);
    const pong = s.next((m) => m.id === 'after');
    s.send(
      '[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"ping"}]',
    );
    s.send('{"jsonrpc":"2.0","id":"after","method":"ping"}');
    await pong;
    const batch = s.lines.find((l) => l.startsWith('['));
    expect(JSON.parse(batch!)).toEqual([
      { jsonrpc: '2.0', id: 'b1', error: { code: -32600, message: expect.stringContaining('batches') } },
      { jsonrpc: '2.0', id: 2, error: { code: -32600, message: expect.stringContaining('batches') } },
    ]);
  });

  it('a host on 2025-03-26 gets a batch served: one array with an answer per request, none per notification', async () => {
    const s = await session();
    await initialize(s, {}, '2025-03-26');
    const batch = s.next((_m, line) => line.startsWith('['));
    s.send(
      JSON.stringify([
        { jsonrpc: '2.0', id: 'b1', method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'up__echo', arguments: { text: 'in a batch' } },
        },
        { jsonrpc: '2.0', id: 3, method: 'no/such/method' },
        { jsonrpc: '2.0', id: 4 },
      ]),
    );
    const answers = (await batch) as unknown as Answer[];
    expect(answers).toHaveLength(4);
    const byId = new Map(answers.map((a) => [a.id, a]));
    expect(byId.get('b1')).toEqual({ jsonrpc: '2.0', id: 'b1', result: {} });
    expect(byId.get(2)?.result).toMatchObject({ content: [{ type: 'text', text: 'in a batch' }] });
    expect(byId.get(3)?.error?.code).toBe(-32601);
    expect(byId.get(4)?.error?.code).toBe(-32600);
    // Nothing of the batch was answered on a line of its own.
    expect(s.lines.filter((l) => /"id":("b1"|2|3|4)[,}]/.test(l) && !l.startsWith('['))).toEqual([]);
  });

  it('a host on 2025-03-26 gets a batch over 100 elements refused whole, each request under its id', async () => {
    const s = await session();
    await initialize(s, {}, '2025-03-26');
    const refused = s.next((_m, line) => line.startsWith('['));
    s.send(
      JSON.stringify(Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' }))),
    );
    const answers = (await refused) as unknown as Answer[];
    expect(answers).toHaveLength(101);
    expect(answers.map((a) => a.id)).toEqual(Array.from({ length: 101 }, (_, i) => i + 1));
    for (const answer of answers) {
      expect(answer.error?.code).toBe(-32600);
      expect(answer.error?.message).toContain('over the bound of 100');
    }
    // Nothing of it was served.
    expect(s.lines.filter((l) => l.includes('"result"') && !l.includes('"id":0'))).toEqual([]);
  });

  it('a host on 2025-03-26 gets a batch refused that would take the answers open batches owe past 100, and served once they are done', async () => {
    const s = await session();
    await initialize(s, {}, '2025-03-26');
    const hang = (i: number) => ({
      jsonrpc: '2.0',
      id: `h${i}`,
      method: 'tools/call',
      params: { name: 'up__hang', arguments: {} },
    });
    const pings = (from: number) =>
      JSON.stringify(
        Array.from({ length: 50 }, (_, i) => ({ jsonrpc: '2.0', id: from + i, method: 'ping' })),
      );
    s.send(JSON.stringify(Array.from({ length: 60 }, (_, i) => hang(i))));
    const refused = s.next((_m, line) => line.startsWith('[{"jsonrpc":"2.0","id":1000,'));
    s.send(pings(1000));
    const first = ((await refused) as unknown as Answer[])[0]!;
    expect(first.error?.code).toBe(-32600);
    expect(first.error?.message).toContain('60 answers to earlier batches are still owed');
    // The host cancels the calls it is waiting for: the batch is owed nothing more.
    for (let i = 0; i < 60; i++)
      s.send(
        JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: `h${i}` } }),
      );
    const served = s.next((_m, line) => line.startsWith('[') && line.includes('"id":2000,'));
    s.send(pings(2000));
    const answers = (await served) as unknown as Answer[];
    expect(answers).toHaveLength(50);
    expect(answers.every((a) => a.error === undefined)).toBe(true);
  });

  it('a host on 2025-03-26 gets one -32600 for an empty batch', async () => {
    const s = await session();
    await initialize(s, {}, '2025-03-26');
    const refused = s.next((m) => m.id === null);
    s.send('[]');
    expect(await refused).toMatchObject({
      error: { code: -32600, message: expect.stringContaining('empty') },
    });
  });

  it('a leading byte order mark is ignored', async () => {
    const s = await session();
    await initialize(s);
    const pong = s.next((m) => m.id === 'bom');
    s.send('\uFEFF{"jsonrpc":"2.0","id":"bom","method":"ping"}');
    expect(await pong).toMatchObject({ result: {} });
  });

  it('an id of 1e400 comes back exactly as sent', async () => {
    const s = await session();
    await initialize(s);
    const pong = s.next((_m, line) => line.includes('1e400'));
    s.send('{"jsonrpc":"2.0","id":1e400,"method":"ping"}');
    await pong;
    const line = s.lines.find((l) => l.includes('1e400'))!;
    expect(line).toContain('"id":1e400,');
    expect(JSON.parse(line)).toEqual({ jsonrpc: '2.0', id: Infinity, result: {} });
  });

  it('a line over gateway.maxMessageSize is answered under its id, read from its head', async () => {
    const s = await session();
    await initialize(s);
    const answered = s.next((m) => m.id === 'big');
    s.send(
      `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"${'x'.repeat(2 * 1024 * 1024)}"}}}`,
    );
    const answer = (await answered) as Answer;
    expect(answer.error?.code).toBe(-32600);
    expect(answer.error?.message).toContain('over the limit of 1048576 bytes (gateway.maxMessageSize)');
  });

  it('a 10 MiB method name is not echoed back whole', async () => {
    const s = await each.raw(writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }));
    await initialize(s);
    const answered = s.next((m) => m.id === 'long');
    s.send(`{"jsonrpc":"2.0","id":"long","method":"${'m'.repeat(10 * 1024 * 1024)}"}`);
    const answer = (await answered) as Answer;
    expect(answer.error?.code).toBe(-32601);
    expect(answer.error!.message.length).toBeLessThan(1000);
    expect(answer.error!.message).toContain(`(${10 * 1024 * 1024} chars)`);
  });
});

describe('arguments nested too deep', () => {
  it('are refused as invalid params and recorded as a protocol error, not an upstream failure', async () => {
    const dir = tempDir();
    const s = await session({ audit: { file: './audit.jsonl' } }, dir);
    await initialize(s);
    const listed = s.next((m) => m.id === 1);
    s.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    await listed;
    const answered = s.next((m) => m.id === 'deep');
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    s.send(
      `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"up__echo","arguments":${deep}}}`,
    );
    const answer = (await answered) as Answer;
    expect(answer.error?.code).toBe(-32602);
    expect(answer.error?.message).toContain('nested deeper than');
    // The gateway still serves, and the call is in the audit log as the host's error.
    const pong = s.next((m) => m.id === 'after');
    s.send('{"jsonrpc":"2.0","id":"after","method":"ping"}');
    await pong;
    await s.close();
    const records = readFileSync(path.join(dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; tool?: string; outcome?: string });
    expect(records.filter((r) => r.type === 'call')).toMatchObject([
      { tool: 'up__echo', outcome: 'protocol_error' },
    ]);
  });
});
