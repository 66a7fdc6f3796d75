/**
 * A call that the host's transport runs again for a replica that died while its confirmation
 * was pending (see `MessageExtra.takenOverBy`; the HTTP session transport does this, proved end
 * to end with real replicas in test/integration/replicaTakeover.test.ts). The mark travels
 * beside the request into the routed call, so the call's audit record names the replica that
 * took it over, whatever copies of the request's params are made on the way to the router.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { POSTED_FOR } from '../../src/core/protocol/postedFor.js';
import type { JsonRpcMessage } from '../../src/core/protocol/jsonRpc.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

function upstream(): McpServer {
  const server = new McpServer({ name: 'up', version: '1' });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

/** The host transport's word on a call of `echo` with text `taken`: replica-b took it over. */
function takenOver(message: JsonRpcMessage): { takenOverBy: string } | undefined {
  if (!('method' in message) || message.method !== 'tools/call') return undefined;
  const args = message.params?.arguments as { text?: unknown } | undefined;
  return args?.text === 'taken' ? { takenOverBy: 'replica-b' } : undefined;
}

describe('a call taken over from a replica that died', () => {
  it('is recorded as taken over by the replica its transport names, though its params were copied before the router', async () => {
    const gateway = await each.inProcess({
      config: [
        'audit: { file: ./audit.jsonl }',
        'policies: [./policy.yaml]',
        'confirmation: { methods: [elicitation] }',
        'servers:',
        '  up: { command: unused }',
        '',
      ].join('\n'),
      files: {
        'policy.yaml':
          'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n',
      },
      upstreams: { up: upstream },
      client: { capabilities: { elicitation: { form: {} } } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: {} })),
      hostBesides: takenOver,
    });
    // The rpc peer takes the gateway's own `_meta` key off any request that carries it: the
    // router gets a copy of the params, not the object the transport delivered.
    const taken = await gateway.client.callTool({
      name: 'up__echo',
      arguments: { text: 'taken' },
      _meta: { [POSTED_FOR]: 1 },
    });
    expect(taken.content).toEqual([{ type: 'text', text: 'taken' }]);
    await gateway.client.callTool({ name: 'up__echo', arguments: { text: 'sent' } });

    const calls = gateway.auditRecords().filter((r) => r.type === 'call');
    expect(calls).toEqual([
      expect.objectContaining({
        args: { text: 'taken' },
        outcome: 'ok',
        decision: expect.objectContaining({ effect: 'confirm', confirmed: true }),
        takenOverBy: 'replica-b',
      }),
      expect.objectContaining({ args: { text: 'sent' }, outcome: 'ok' }),
    ]);
    expect(calls[1]).not.toHaveProperty('takenOverBy');
  });
});
