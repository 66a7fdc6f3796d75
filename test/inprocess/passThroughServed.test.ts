/**
 * Full protocol pass-through, served in-process (test/inprocess/served.ts: the same
 * `startServing` as `mcp-warden --config FILE`, with the real server-everything as a process):
 * the host, declaring sampling, elicitation and roots, uses everything server-everything offers
 * through the gateway as if it were connected directly. The same routing over in-memory
 * upstreams, with the requests servers make of the host, is in test/inprocess/passThrough.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { readRecord } from '../fixtures/fixtureProcess.js';
import {
  FAST_GATEWAY,
  fixture,
  NODE,
  serverBin,
  tempDir,
  writeConfig,
  type HostSession,
  textOf,
} from '../integration/harness.js';
import { keepServedListings } from './servedListings.js';
import { servedPerTest } from './perTest.js';
import { connectServed } from './served.js';

describe('pass-through to server-everything', () => {
  let host: HostSession;
  const sampled: unknown[] = [];

  beforeAll(async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    // What the initialize answer declares is what the server declared, however slow its start.
    await keepServedListings(config);
    host = await shared.connect(config, {
      capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } },
      beforeConnect: (client) => {
        client.setRequestHandler(CreateMessageRequestSchema, (request) => {
          sampled.push(request.params);
          return {
            role: 'assistant',
            content: { type: 'text', text: 'sampled by the host' },
            model: 'test-model',
          };
        });
        client.setRequestHandler(ElicitRequestSchema, () => ({
          action: 'accept',
          content: { name: 'Ada Lovelace', check: true },
        }));
        client.setRequestHandler(ListRootsRequestSchema, () => ({
          roots: [{ uri: 'file:///tmp/warden-root', name: 'warden root' }],
        }));
      },
    });
    // In-process the gateway is ready at once, and on a loaded machine server-everything can
    // still be starting when the start-up window closes: these scenarios are about the server
    // once connected.
    await host.waitForStderr('[everything]: connected', 25_000);
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('advertises what it can route', () => {
    expect(host.client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      logging: {},
      completions: {},
    });
  });

  it('declares the host’s capabilities upstream, so capability-gated tools appear', async () => {
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'everything__trigger-sampling-request',
        'everything__trigger-elicitation-request',
        'everything__get-roots-list',
      ]),
    );
  });

  it('forwards sampling to the host and the answer back to the upstream', async () => {
    const result = await host.client.callTool({
      name: 'everything__trigger-sampling-request',
      arguments: { prompt: 'Say hi', maxTokens: 20 },
    });
    expect(textOf(result)).toContain('sampled by the host');
    expect(sampled).toHaveLength(1);
  });

  it('forwards elicitation to the host and the user’s answer back', async () => {
    const result = await host.client.callTool({
      name: 'everything__trigger-elicitation-request',
      arguments: {},
    });
    expect(textOf(result)).toContain('Ada Lovelace');
  });

  it('forwards roots/list to the host', async () => {
    const result = await host.client.callTool({ name: 'everything__get-roots-list', arguments: {} });
    expect(textOf(result)).toContain('file:///tmp/warden-root');
  });
});

describe('cancellation from the host', () => {
  it('reaches the upstream that runs the call, under that upstream’s request id', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'record.jsonl');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { up: fixture(['--record', record]) } },
      dir,
    );
    const host = await connectServed(config);
    await host.client.listTools();
    const controller = new AbortController();
    const call = host.client.callTool({ name: 'up__hang', arguments: {} }, undefined, {
      signal: controller.signal,
    });
    // Once this echo (sent after the hang) is answered, the hang has reached the upstream.
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'sync' } });
    controller.abort('user pressed stop');
    await expect(call).rejects.toThrow();
    // And once this one is answered, the cancellation has been recorded.
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'after' } });
    const messages = readRecord(record);
    const hang = messages.find((m) => m.method === 'tools/call' && m.params?.name === 'hang')!;
    const cancel = messages.find((m) => m.method === 'notifications/cancelled');
    expect(cancel?.params?.requestId).toBe(hang.id);
    expect(host.stderr()).not.toContain('internal error');
    await host.close();
  });
});

describe('without the capability', () => {
  it('does not declare to upstreams what the host cannot do', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    const host = await connectServed(config);
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    // server-everything offers the sampling tool only to clients that can sample.
    expect(names).not.toContain('everything__trigger-sampling-request');
    await host.close();
  });
});
