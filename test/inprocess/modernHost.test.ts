/**
 * A host of the stateless revision (2026-07-28) in-process, in front of upstreams of the
 * handshake era (the SDK's McpServer): no initialize, the envelope on every request, and every
 * question the gateway or a server has for the host carried inside the call as an
 * InputRequiredResult that the host answers by retrying. The same pairings with real upstream
 * processes (the fixture servers, server-everything), served as the binary serves them, are in
 * test/inprocess/eras.test.ts.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InProcessModernGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

type Json = Record<string, unknown>;

let running: InProcessModernGateway | undefined;
const each = servedPerTest();

const received: string[] = [];

function upstream(): McpServer {
  const server = new McpServer({ name: 'up', version: '1' });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => {
    received.push(text);
    return { content: [{ type: 'text', text }] };
  });
  server.registerTool('ask', { inputSchema: {} }, async () => {
    const answer = await server.server.elicitInput({
      message: 'Your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
    });
    return { content: [{ type: 'text', text: `answer: ${JSON.stringify(answer.content ?? null)}` }] };
  });
  return server;
}

async function start(extra = '', files?: Record<string, string>): Promise<InProcessModernGateway> {
  received.length = 0;
  running = await each.inProcessModern({
    config: `${extra}audit: { file: ./audit.jsonl }\nservers:\n  up: { command: unused }\n`,
    upstreams: { up: upstream },
    capabilities: { elicitation: { form: {} } },
    ...(files && { files }),
  });
  return running;
}

const textOf = (result: Json | undefined): string =>
  ((result?.['content'] as { type: string; text?: string }[] | undefined) ?? [])
    .map((c) => c.text ?? '')
    .join('');

describe('a 2026-07-28 host in front of a handshake-era server, in-process', () => {
  it('lists and calls without a handshake; every answer says it is complete', async () => {
    const host = await start();
    const discover = await host.request('server/discover');
    expect(discover.result?.['resultType']).toBe('complete');
    const list = await host.request('tools/list');
    expect(list.result?.['resultType']).toBe('complete');
    expect((list.result?.['tools'] as { name: string }[]).map((t) => t.name)).toEqual(
      expect.arrayContaining(['up__echo', 'up__ask']),
    );
    const call = await host.request('tools/call', { name: 'up__echo', arguments: { text: 'hi' } });
    expect(call.result?.['resultType']).toBe('complete');
    expect(textOf(call.result)).toBe('hi');
    // The gateway never sends a request to a host of this revision.
    expect(host.unsolicited.filter((m) => 'method' in m && 'id' in m)).toEqual([]);
  });

  it("a server's elicitation reaches the host inside its call; the retry with the answer completes it", async () => {
    const host = await start();
    const params = { name: 'up__ask', arguments: {} };
    const first = await host.request('tools/call', params);
    expect(first.result?.['resultType']).toBe('input_required');
    const requests = first.result?.['inputRequests'] as Record<string, { method: string; params: Json }>;
    const [key, asked] = Object.entries(requests)[0]!;
    expect(asked.method).toBe('elicitation/create');
    expect(asked.params['message']).toBe('[up] Your name?');
    const final = await host.request('tools/call', {
      ...params,
      inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
      requestState: first.result?.['requestState'],
    });
    expect(final.result?.['resultType']).toBe('complete');
    expect(textOf(final.result)).toBe('answer: {"name":"Ada"}');
  });

  it('a forged or replayed requestState is refused, naming why', async () => {
    const host = await start();
    const params = { name: 'up__ask', arguments: {} };
    const first = await host.request('tools/call', params);
    const state = first.result?.['requestState'] as string;
    const [key] = Object.keys(first.result?.['inputRequests'] as Json);
    const answer = { inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } } };
    const forged = `${state.slice(0, -4)}${state.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const refused = await host.request('tools/call', { ...params, ...answer, requestState: forged });
    expect(refused.error?.code).toBe(-32602);
    expect(refused.error?.message).toMatch(/requestState refused: it failed verification/);
    const used = await host.request('tools/call', { ...params, ...answer, requestState: state });
    expect(textOf(used.result)).toBe('answer: {"name":"Ada"}');
    const replayed = await host.request('tools/call', { ...params, ...answer, requestState: state });
    expect(replayed.error?.message).toMatch(/already used/);
  });

  it("a policy's confirmation is asked inside the call; declined, the call is refused unrun", async () => {
    const host = await start('policies: [./policy.yaml]\n', {
      'policy.yaml': 'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n',
    });
    const params = { name: 'up__echo', arguments: { text: 'guarded' } };
    const first = await host.request('tools/call', params);
    expect(first.result?.['resultType']).toBe('input_required');
    const [key, asked] = Object.entries(
      first.result?.['inputRequests'] as Record<string, { method: string; params: Json }>,
    )[0]!;
    expect(asked.method).toBe('elicitation/create');
    expect(received).toEqual([]);
    const declined = await host.request('tools/call', {
      ...params,
      inputResponses: { [key]: { action: 'decline' } },
      requestState: first.result?.['requestState'],
    });
    expect(declined.result?.['isError']).toBe(true);
    expect(received).toEqual([]);

    // Asked again and accepted, it runs once.
    const again = await host.request('tools/call', params);
    const [key2] = Object.keys(again.result?.['inputRequests'] as Json);
    const accepted = await host.request('tools/call', {
      ...params,
      inputResponses: { [key2!]: { action: 'accept', content: { confirm: true } } },
      requestState: again.result?.['requestState'],
    });
    expect(textOf(accepted.result)).toBe('guarded');
    expect(received).toEqual(['guarded']);
  });
});
