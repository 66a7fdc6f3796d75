/**
 * The call pipeline with the gateway served in-process and the SDK Client as host: result repair
 * as a strict host sees it, timeouts that really cancel upstream, and per-server concurrency.
 * Results that must reach the host byte for byte are checked on the built binary's own stdout,
 * in test/integration/callPipeline.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readRecord } from '../fixtures/fixtureProcess.js';
import {
  FAST_GATEWAY,
  FIXTURE,
  fixture,
  NODE,
  serverBin,
  tempDir,
  writeConfig,
  type HostSession,
  textOf,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';
import { connectServed } from './served.js';

/** The same fixture without the gateway, to compare against. */
async function direct(args: string[]): Promise<Client> {
  const client = new Client({ name: 'direct', version: '1' });
  await client.connect(
    new StdioClientTransport({ command: NODE, args: [FIXTURE, ...args], stderr: 'ignore' }),
  );
  await client.listTools(); // as a host does: this is what arms callTool's output validation
  return client;
}

describe('result repair, as a strict SDK host sees it', () => {
  let host: HostSession;
  let plain: Client;

  beforeAll(async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { s: fixture(['--tools', 'structured']) } });
    host = await shared.connect(config);
    await host.client.listTools();
    plain = await direct(['--tools', 'structured']);
  });
  afterAll(async () => {
    await plain?.close();
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('passes a valid structured result through unchanged', async () => {
    const via = await host.client.callTool({ name: 's__structured_valid', arguments: {} });
    const without = await plain.callTool({ name: 'structured_valid', arguments: {} });
    expect(via).toEqual(without);
    expect(via.structuredContent).toEqual({ value: 42, label: 'answer' });
  });

  it.each(['structured_no_text', 'structured_no_content'])(
    '%s: adds the JSON as a text block for hosts that only read text',
    async (tool) => {
      const via = await host.client.callTool({ name: `s__${tool}`, arguments: {} });
      expect(via.isError).toBeFalsy();
      expect(via.content).toEqual([{ type: 'text', text: JSON.stringify(via.structuredContent) }]);
    },
  );

  it('invalid structured content: the strict host does not throw, and sees the data and why', async () => {
    // Direct, the SDK's own Client.callTool throws on this tool.
    await expect(plain.callTool({ name: 'structured_invalid', arguments: {} })).rejects.toThrow(
      /output schema/,
    );
    const via = await host.client.callTool({ name: 's__structured_invalid', arguments: {} });
    expect(via.isError).toBe(true);
    expect(via.structuredContent).toBeUndefined();
    expect(textOf(via)).toContain('{"value":"not a number"}');
    expect(textOf(via)).toMatch(/\[mcp-warden\] .*outputSchema/);
  });

  it('a large structured result is validated and repaired like a small one', async () => {
    // Its long label is left undecoded on the way in; repair and validation must still see it.
    const args = { kib: 200, valid: true };
    const without = await plain.callTool({ name: 'structured_large', arguments: args });
    const via = await host.client.callTool({ name: 's__structured_large', arguments: args });
    expect(via.isError).toBeFalsy();
    expect(via.structuredContent).toEqual(without.structuredContent);
    expect((via.structuredContent as { label: string }).label.length).toBeGreaterThan(200_000);
    expect(via.content).toEqual([{ type: 'text', text: JSON.stringify(without.structuredContent) }]);

    const invalid = await host.client.callTool({
      name: 's__structured_large',
      arguments: { kib: 200, valid: false },
    });
    expect(invalid.isError).toBe(true);
    expect(invalid.structuredContent).toBeUndefined();
    expect(textOf(invalid)).toContain(JSON.stringify((without.structuredContent as { label: string }).label));
  });

  it('JSON text that validates is offered as structuredContent', async () => {
    await expect(plain.callTool({ name: 'structured_missing', arguments: {} })).rejects.toThrow(
      /structured content/,
    );
    const via = await host.client.callTool({ name: 's__structured_missing', arguments: {} });
    expect(via.isError).toBeFalsy();
    expect(via.structuredContent).toEqual({ value: 7 });
    expect(textOf(via)).toBe('{"value":7}');
  });

  it('no structured content and no usable text: an error the strict host accepts', async () => {
    const via = await host.client.callTool({ name: 's__structured_missing_bad_text', arguments: {} });
    expect(via.isError).toBe(true);
    expect(textOf(via)).toContain('plain words');
    expect(textOf(via)).toMatch(/\[mcp-warden\] .*outputSchema/);
  });

  it('honours a draft-07 output schema', async () => {
    const via = await host.client.callTool({ name: 's__structured_draft07', arguments: {} });
    expect(via).toEqual(await plain.callTool({ name: 'structured_draft07', arguments: {} }));
  });

  it('records repairs in the log', () => {
    expect(host.stderr()).toMatch(/repaired the result of s__structured_invalid: structured-invalid/);
  });
});

describe('results that need no repair', () => {
  it('a large tool list (sent from bytes encoded once) is what the upstream lists, every time', async () => {
    const tools = ['--tools', 'many:3000'];
    const plain = await direct(tools);
    // Listed whole: a catalogue this large is otherwise served as a search tool (catalog.mode: auto).
    const host = await connectServed(
      writeConfig({ gateway: FAST_GATEWAY, catalog: { mode: 'all' }, servers: { s: fixture(tools) } }),
    );
    try {
      const expected = (await plain.listTools()).tools.map((t) => ({ ...t, name: `s__${t.name}` }));
      expect(expected.length).toBe(3000);
      for (let i = 0; i < 2; i++) expect((await host.client.listTools()).tools).toEqual(expected);
    } finally {
      await plain.close();
      await host.close();
    }
  });

  it('server-everything get-structured-content and server-filesystem tools pass unchanged', async () => {
    const dir = tempDir();
    const dataDir = path.join(dir, 'data');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'a.txt'), 'alpha\n');
    // Large enough for its long strings to be left undecoded on the way in (one escape per line).
    const source = Array.from({ length: 6000 }, (_, i) =>
      i % 5 === 0 ? `  log("caf\u00e9 ${i} \u2713");` : `  const v${i} = compute(v${i - 1}, ${i}); // step`,
    );
    writeFileSync(path.join(dataDir, 'big.ts'), `${source.join('\n')}\n`);
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        servers: {
          everything: { command: NODE, args: [serverBin('everything')] },
          fs: { command: NODE, args: [serverBin('filesystem'), dataDir] },
        },
      },
      dir,
    );
    const host = await connectServed(config);
    const { tools } = await host.client.listTools();
    expect(tools.find((t) => t.name === 'everything__get-structured-content')?.outputSchema).toBeDefined();

    const everything = new Client({ name: 'direct', version: '1' });
    await everything.connect(
      new StdioClientTransport({ command: NODE, args: [serverBin('everything')], stderr: 'ignore' }),
    );
    await everything.listTools();
    const fs = new Client({ name: 'direct', version: '1' });
    await fs.connect(
      new StdioClientTransport({ command: NODE, args: [serverBin('filesystem'), dataDir], stderr: 'ignore' }),
    );
    const fsTools = (await fs.listTools()).tools.filter((t) => t.outputSchema !== undefined);
    expect(fsTools.length).toBeGreaterThan(0);

    for (const location of ['New York', 'Chicago', 'Los Angeles']) {
      const args = { location };
      expect(
        await host.client.callTool({ name: 'everything__get-structured-content', arguments: args }),
      ).toEqual(await everything.callTool({ name: 'get-structured-content', arguments: args }));
    }
    const fsCalls: [string, Record<string, unknown>][] = [
      ['read_text_file', { path: path.join(dataDir, 'a.txt') }],
      ['read_text_file', { path: path.join(dataDir, 'big.ts') }],
      ['list_directory', { path: dataDir }],
      ['list_allowed_directories', {}],
      ['get_file_info', { path: path.join(dataDir, 'a.txt') }],
    ];
    for (const [tool, args] of fsCalls) {
      if (!fsTools.some((t) => t.name === tool)) continue;
      const via = await host.client.callTool({ name: `fs__${tool}`, arguments: args });
      const plain = await fs.callTool({ name: tool, arguments: args });
      // get_file_info reports access times, which reading the file just changed.
      if (tool === 'get_file_info')
        expect(Object.keys(via.structuredContent ?? {})).toEqual(Object.keys(plain.structuredContent ?? {}));
      else expect(via).toEqual(plain);
    }
    expect(host.stderr()).not.toContain('repaired the result');
    await Promise.all([host.close(), everything.close(), fs.close()]);
  });
});

describe('timeouts', () => {
  it('a hung tool times out on time, the upstream is told to cancel, and the gateway keeps serving', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'record.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        servers: { up: fixture(['--record', record], { tools: { timeouts: { hang: '300ms' } } }) },
      },
      dir,
    );
    const host = await connectServed(config);
    await host.client.listTools();
    const started = Date.now();
    const result = await host.client.callTool({ name: 'up__hang', arguments: {} });
    const elapsed = Date.now() - started;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      '[mcp-warden] Tool "hang" on server "up" timed out: no answer or progress for 300ms (its timeout); the call was cancelled upstream.',
    );
    expect(elapsed).toBeGreaterThanOrEqual(300);

    // The fixture handles messages in order: once this echo is answered, the cancellation has been recorded.
    expect(
      textOf(await host.client.callTool({ name: 'up__echo', arguments: { text: 'still serving' } })),
    ).toBe('still serving');
    const messages = readRecord(record);
    const call = messages.find(
      (m) => m.method === 'tools/call' && (m.params as { name: string }).name === 'hang',
    )!;
    const cancel = messages.find((m) => m.method === 'notifications/cancelled');
    expect(cancel).toBeDefined();
    expect((cancel!.params as { requestId: unknown }).requestId).toBe(call.id);
    await host.close();
  });

  // Progress keeping a long call alive past its idle timeout: test/inprocess/timeouts.test.ts.
});

describe('concurrency', () => {
  it('holds calls beyond maxConcurrency in a queue and refuses beyond maxQueue', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { up: fixture([], { maxConcurrency: 1, maxQueue: 1 }) },
    });
    const host = await connectServed(config);
    await host.client.listTools();
    const order: string[] = [];
    const slow = host.client
      .callTool({ name: 'up__sleep', arguments: { ms: 300 } })
      .then((r) => order.push('slow') && r);
    const queued = host.client
      .callTool({ name: 'up__echo', arguments: { text: 'q' } })
      .then((r) => order.push('queued') && r);
    const refused = await host.client.callTool({ name: 'up__echo', arguments: { text: 'r' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('Server "up" is busy: 1 calls are running and 1 are waiting');
    await Promise.all([slow, queued]);
    // Unlimited, the echo would have overtaken the sleep.
    expect(order).toEqual(['slow', 'queued']);
    await host.close();
  });
});
