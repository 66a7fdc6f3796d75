/**
 * The gateway's initialize answer says what is true of its upstreams: their instructions, merged
 * a section per server as each server's setting says, and capabilities derived from theirs.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

function server(name: string, instructions?: string, extra?: (s: McpServer) => void): () => McpServer {
  return () => {
    const s = new McpServer({ name, version: '1' }, instructions === undefined ? {} : { instructions });
    s.registerTool('ping', { inputSchema: { x: z.string().optional() } }, () => ({ content: [] }));
    extra?.(s);
    return s;
  };
}

let running: InProcessGateway | undefined;
const each = servedPerTest();

describe('the initialize answer', () => {
  it("merges the upstreams' instructions, a section per server in config order, as each is set", async () => {
    running = await each.inProcess({
      config: [
        'servers:',
        '  docs: { command: unused }',
        '  quiet: { command: unused, instructions: false }',
        '  shop: { command: unused, namespace: store, instructions: "Prices are in euros." }',
        '  plain: { command: unused }',
        '',
      ].join('\n'),
      upstreams: {
        docs: server('docs', 'Search before you answer.'),
        quiet: server('quiet', 'Never shown.'),
        shop: server('shop', 'Replaced by the config.'),
        plain: server('plain'),
      },
    });
    expect(running.client.getInstructions()).toBe(
      '## docs\nSearch before you answer.\n\n## store\nPrices are in euros.',
    );
  });

  it('cuts a server whose instructions are too long, and says so in the log', async () => {
    running = await each.inProcess({
      config: 'servers:\n  big: { command: unused }\n',
      upstreams: { big: server('big', 'x'.repeat(20_000)) },
    });
    const text = running.client.getInstructions()!;
    expect(text.startsWith('## big\nxxx')).toBe(true);
    expect(text.length).toBeLessThan(9000);
    expect(
      running.log.some((line) => line.includes('the instructions of server "big" are 20000 characters')),
    ).toBe(true);
  });

  it('declares completions and resource subscriptions only when an upstream offers them', async () => {
    running = await each.inProcess({
      config: 'servers:\n  a: { command: unused }\n',
      upstreams: { a: server('a') },
    });
    const capabilities = running.client.getServerCapabilities()!;
    expect(capabilities).toMatchObject({ tools: { listChanged: true }, prompts: { listChanged: true } });
    expect(capabilities.completions).toBeUndefined();
    expect(capabilities.resources).toEqual({ listChanged: true });
    await running.close();

    running = await each.inProcess({
      config: 'servers:\n  a: { command: unused }\n',
      upstreams: {
        a: server('a', undefined, (s) => {
          s.registerPrompt('p', { argsSchema: { v: z.string() } }, () => ({ messages: [] }));
          s.registerResource('r', 'mem://r', {}, () => ({ contents: [] }));
          s.server.registerCapabilities({ completions: {}, resources: { subscribe: true } });
        }),
      },
    });
    expect(running.client.getServerCapabilities()).toMatchObject({
      completions: {},
      resources: { subscribe: true, listChanged: true },
    });
  });
});

describe('upstream notifications', () => {
  it('passes notifications/elicitation/complete on, and logs at info what it keeps back', async () => {
    const { ElicitationCompleteNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
    let sdkServer: McpServer | undefined;
    const completed: unknown[] = [];
    running = await each.inProcess({
      config: 'servers:\n  a: { command: unused }\n',
      upstreams: {
        a: server('a', undefined, (s) => {
          sdkServer = s;
        }),
      },
      // The server may send it only to a client that declared URL-mode elicitation.
      client: { capabilities: { elicitation: { url: {} } } },
      beforeConnect: (client) =>
        client.setNotificationHandler(
          ElicitationCompleteNotificationSchema,
          (n) => void completed.push(n.params),
        ),
    });
    await running.client.listTools();
    await sdkServer!.server.notification({
      method: 'notifications/elicitation/complete',
      params: { elicitationId: 'e-1' },
    });
    await sdkServer!.server.notification({ method: 'notifications/custom/thing', params: {} });
    await expect.poll(() => completed).toEqual([{ elicitationId: 'e-1' }]);
    await expect
      .poll(() => running!.log.find((l) => l.includes('notifications/custom/thing')))
      .toBe(
        'info: did not forward notifications/custom/thing from a: mcp-warden does not know this notification',
      );
  });
});
