/**
 * Results that need no repair, seen on the built binary's own stdout: they reach the host byte
 * for byte as the upstream wrote them, and one over gateway.maxMessageSize fails its call alone.
 * The rest of the call pipeline (repair, timeouts, concurrency) runs in-process, in
 * test/inprocess/callPipeline.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FixtureProcess } from '../fixtures/fixtureProcess.js';
import { envelope } from '../fixtures/modernHost.js';
import { FAST_GATEWAY, fixture, initialize, killRawSessions, rawSession, writeConfig } from './harness.js';

afterEach(() => killRawSessions());

/** Calls `name` through a raw session under request id `id`; resolves with the answer. */
function callRaw(session: ReturnType<typeof rawSession>, id: number, name: string, args: object) {
  const answered = session.next((m) => m.id === id);
  session.send(
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
  );
  return answered;
}

describe('results that need no repair', () => {
  it('reach the host byte for byte as the upstream wrote them', async () => {
    const tools = ['--tools', 'structured,basic'];
    const upstream = new FixtureProcess(tools);
    await upstream.initialize();
    const gateway = rawSession(writeConfig({ gateway: FAST_GATEWAY, servers: { s: fixture(tools) } }));
    await initialize(gateway);
    // Both write {"jsonrpc":"2.0","id":N,"result":...}: the first ',"result":' is the top-level one.
    const resultText = (line: string) => line.slice(line.indexOf(',"result":') + ',"result":'.length, -1);
    const calls: [string, Record<string, unknown>][] = [
      ['handwritten', {}],
      ['structured_valid', {}],
      ['echo', { text: 'caf\u00e9 \u{1F600} "quoted" \\ \u2028 end' }],
      ['big', { kib: 512 }],
      // Large enough to be forwarded from its bytes, and not ASCII: bytes and characters differ.
      ['echo', { text: `${'caf\u00e9 \u{1F600} '.repeat(12_000)}end` }],
    ];
    for (const [i, [tool, args]] of calls.entries()) {
      const id = 100 + i;
      await callRaw(gateway, id, `s__${tool}`, args);
      const viaLine = gateway.lines.find((l) => l.startsWith(`{"jsonrpc":"2.0","id":${id},`))!;

      upstream.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args } });
      let directLine = '';
      while (!directLine.startsWith(`{"jsonrpc":"2.0","id":${id},`))
        directLine = await upstream.stdout.next();

      expect(resultText(viaLine).length).toBeGreaterThan(10);
      expect(resultText(viaLine)).toBe(resultText(directLine));
    }
    upstream.child.kill();
  });

  it('reach a modern host as the upstream wrote them, behind the members the revision adds', async () => {
    const tools = ['--tools', 'structured,basic'];
    const upstream = new FixtureProcess(tools);
    await upstream.initialize();
    const gateway = rawSession(writeConfig({ gateway: FAST_GATEWAY, servers: { s: fixture(tools) } }));
    const resultText = (line: string) => line.slice(line.indexOf(',"result":') + ',"result":'.length, -1);
    const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
    const calls: [string, Record<string, unknown>][] = [
      ['structured_valid', {}],
      ['echo', { text: 'caf\u00e9 \u{1F600} "quoted" \\ \u2028 end' }],
      // Forwarded from its bytes (over 64 KiB), once ASCII and once not.
      ['big', { kib: 512 }],
      ['echo', { text: `${'caf\u00e9 \u{1F600} '.repeat(12_000)}end` }],
      // Its own _meta: merged as a value, not written in front of the text.
      ['handwritten', {}],
    ];
    for (const [i, [tool, args]] of calls.entries()) {
      const id = 100 + i;
      const answered = gateway.next((m) => m.id === id);
      gateway.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: `s__${tool}`, arguments: args, _meta: envelope() },
        }),
      );
      const via = (await answered) as { result: { _meta: Record<string, unknown> } };
      const viaLine = gateway.lines.find((l) => l.startsWith(`{"jsonrpc":"2.0","id":${id},`))!;

      upstream.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args } });
      let directLine = '';
      while (!directLine.startsWith(`{"jsonrpc":"2.0","id":${id},`))
        directLine = await upstream.stdout.next();

      const direct = resultText(directLine);
      const server = { [SERVER_INFO]: via.result._meta[SERVER_INFO] };
      expect(server[SERVER_INFO]).toMatchObject({ name: 'mcp-warden' });
      if (tool === 'handwritten') {
        const own = JSON.parse(direct) as { _meta: object };
        expect(via.result).toEqual({ ...own, resultType: 'complete', _meta: { ...own._meta, ...server } });
        continue;
      }
      const added = `{"resultType":"complete","_meta":${JSON.stringify(server)},`;
      expect(direct.length).toBeGreaterThan(10);
      expect(resultText(viaLine)).toBe(`${added}${direct.slice(1)}`);
    }
    upstream.child.kill();
  });

  it('a result over gateway.maxMessageSize fails its call, naming the limit, and the next large one passes', async () => {
    const tools = ['--tools', 'basic'];
    const gateway = rawSession(
      writeConfig({ gateway: { ...FAST_GATEWAY, maxMessageSize: '256KiB' }, servers: { s: fixture(tools) } }),
    );
    await initialize(gateway);
    const call = async (id: number, kib: number) =>
      (await callRaw(gateway, id, 's__big', { kib })) as {
        result?: { isError?: boolean; content: { text: string }[] };
      };
    const refused = await call(1, 512);
    expect(refused.result?.isError).toBe(true);
    expect(refused.result?.content[0]?.text).toContain(
      'over the limit of 262144 bytes (gateway.maxMessageSize)',
    );
    const served = await call(2, 200);
    expect(served.result?.isError).toBeFalsy();
    expect(JSON.stringify(served.result).length).toBeGreaterThan(200 * 1024);
  });
});
