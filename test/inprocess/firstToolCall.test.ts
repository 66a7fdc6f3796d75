/**
 * The gateway's "first tool call answered" event (`Gateway.firstToolCallAnswered`), which a
 * serving process waits for before it keeps its compiled code: it fires once the answer to the
 * first `tools/call` of any host connection has left, and not on the answers to other requests.
 * That the built binary then writes its code cache, over stdio and over HTTP only, is in
 * test/integration/codeCache.test.ts.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tokenPrincipal } from '../../src/core/principal.js';
import { MemoryTransport, sdkTransport, type InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

function echo(): McpServer {
  const server = new McpServer({ name: 'web', version: '1' });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

/** The gateway, and whether its event has fired so far. */
async function serve(): Promise<{ running: InProcessGateway; fired: () => boolean }> {
  const running = await each.inProcess({
    config: 'servers:\n  web: { command: unused }\n',
    upstreams: { web: echo },
  });
  let fired = false;
  void running.gateway.firstToolCallAnswered.then(() => (fired = true));
  return { running, fired: () => fired };
}

describe('the first tool call answered', () => {
  it('fires once a tools/call was answered, not on the answers that come before it', async () => {
    const { running, fired } = await serve();
    await running.client.listTools();
    await running.client.ping();
    expect(fired()).toBe(false);
    await running.client.callTool({ name: 'web__echo', arguments: { text: 'hi' } });
    await expect.poll(fired).toBe(true);
  });

  it('fires for a call on another connection than the first, as a listener session makes one', async () => {
    const { running, fired } = await serve();
    const [gatewayEnd, clientEnd] = MemoryTransport.pair();
    running.gateway.connect(gatewayEnd, tokenPrincipal({ sub: 'alice', iss: 'https://idp.example' }, []));
    const client = each.track(new Client({ name: "alice's host", version: '1' }));
    await client.connect(sdkTransport(clientEnd));
    await client.listTools();
    expect(fired()).toBe(false);
    await client.callTool({ name: 'web__echo', arguments: { text: 'hi' } });
    await expect.poll(fired).toBe(true);
  });
});
