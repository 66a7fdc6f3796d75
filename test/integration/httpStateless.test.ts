/**
 * The stateless revision (2026-07-28) on the HTTP listener, through the built gateway: a POST
 * with the per-request envelope and no session is answered at once, as stdio answers a modern
 * host, and the `Mcp-Method` / `Mcp-Name` headers must agree with the body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, MODERN } from '../fixtures/modernHost.js';
import path from 'node:path';
import { FAST_GATEWAY, fixture, readAudit, tempDir, writeConfig } from './harness.js';
import { postRpc, startHttpGateway, type HttpGateway } from './httpHarness.js';

type Json = Record<string, unknown>;

const messageOf = (text: string) => (JSON.parse(text) as { error: { message: string } }).error.message;

describe('stateless requests on the HTTP listener', () => {
  let gateway: HttpGateway;
  const audit = path.join(tempDir(), 'audit.jsonl');
  const headers = (method: string, name?: string): Record<string, string> => ({
    'Mcp-Protocol-Version': MODERN,
    'Mcp-Method': method,
    ...(name !== undefined && { 'Mcp-Name': name }),
  });

  beforeAll(async () => {
    gateway = await startHttpGateway(
      writeConfig({ gateway: FAST_GATEWAY, audit: { file: audit }, servers: { up: fixture() } }),
    );
  });
  afterAll(async () => {
    await gateway.stop();
  });

  it('answers tools/list, tools/call and server/discover without a session', async () => {
    const list = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } },
      headers('tools/list'),
    );
    expect(list.status).toBe(200);
    expect(list.headers.get('mcp-session-id')).toBeNull();
    const tools = (JSON.parse(list.text) as { result: { tools: { name: string }[] } }).result.tools;
    expect(tools.map((t) => t.name)).toContain('up__echo');

    const call = await postRpc(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'up__echo', arguments: { text: 'hi' }, _meta: envelope() },
      },
      headers('tools/call', 'up__echo'),
    );
    expect(call.status).toBe(200);
    const result = (JSON.parse(call.text) as { id: number; result: { content: { text: string }[] } }).result;
    expect(result.content[0]!.text).toBe('hi');

    const discover = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: envelope() } },
      headers('server/discover'),
    );
    expect(discover.status).toBe(200);
    expect((JSON.parse(discover.text) as { result: Json }).result).toMatchObject({
      supportedVersions: expect.arrayContaining([MODERN]) as unknown,
    });
  });

  it('refuses a Mcp-Method or Mcp-Name header that disagrees with the body with 400', async () => {
    const call = {
      jsonrpc: '2.0',
      id: 4,
      method: 'tools/call',
      params: { name: 'up__echo', arguments: { text: 'hi' }, _meta: envelope() },
    };
    const wrongMethod = await postRpc(gateway.url, call, headers('tools/list'));
    expect(wrongMethod.status).toBe(400);
    expect(messageOf(wrongMethod.text)).toContain('Mcp-Method header says "tools/list"');
    const wrongName = await postRpc(gateway.url, call, headers('tools/call', 'up__other'));
    expect(wrongName.status).toBe(400);
    expect(messageOf(wrongName.text)).toContain('Mcp-Name header says "up__other"');
  });

  it('writes each call to the audit trail before its answer leaves', async () => {
    // Each check reads the file the moment the answer arrives: a record written after the
    // answer (at the end of the turn) would be missing for some of them.
    for (let i = 0; i < 10; i++) {
      const answer = await postRpc(
        gateway.url,
        {
          jsonrpc: '2.0',
          id: 10 + i,
          method: 'tools/call',
          params: { name: 'up__echo', arguments: { text: `n${i}` }, _meta: envelope() },
        },
        headers('tools/call', 'up__echo'),
      );
      expect(answer.status).toBe(200);
      const calls = readAudit(audit).filter((r) => r.type === 'call' && (r.args as Json).text === `n${i}`);
      expect(calls).toHaveLength(1);
    }
  });
});
