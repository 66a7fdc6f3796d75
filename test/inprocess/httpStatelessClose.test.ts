/**
 * Closing the HTTP listener ends what its stateless requests left behind: the connections kept
 * idle for the next request and those parked while a call waits for its host's retry. Served
 * in-process: the gateway built over memory (test/inprocess/harness.ts), its listener started
 * with the stateless dispatch as `startHttp` wires it, and the listener closed on its own, the
 * gateway still running (as an embedder may, and as shutdown does once the gateway has drained).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfigText } from '../../src/config/load.js';
import { principalKey } from '../../src/core/principal.js';
import type { Connection } from '../../src/gateway/hosts.js';
import { startListener, type ServedConnection } from '../../src/http/listener.js';
import { createStatelessDispatch } from '../../src/http/stateless.js';
import { postRpc } from '../integration/httpHarness.js';
import { memoryLogger, modernEnvelope } from './harness.js';
import { servedPerTest } from './perTest.js';

type Json = Record<string, unknown>;

const each = servedPerTest();

const CONFIG = `listen: { http: '127.0.0.1:0' }
audit: { file: ./audit.jsonl }
policies: [./policy.yaml]
servers:
  up: { command: unused }
`;
const POLICY =
  'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n';

function upstream(): McpServer {
  const server = new McpServer({ name: 'up', version: '1' });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

/** The timers that would keep the process alive (unref'd ones are not listed). */
const liveTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/**
 * The gateway in-process, and its listener with the stateless dispatch as `startHttp` wires it;
 * `open`: the connections the dispatch made that are not closed yet.
 */
async function serve() {
  const running = await each.inProcessModern({
    config: CONFIG,
    upstreams: { up: upstream },
    files: { 'policy.yaml': POLICY },
  });
  const { config } = parseConfigText(CONFIG, { file: path.join(running.dir, 'proxy.config.yaml'), env: {} });
  const open = new Set<Connection>();
  const logger = memoryLogger();
  const listener = await startListener({
    listen: config.listen!,
    maxBodyBytes: config.gateway.maxMessageBytes,
    logger,
    connect: (transport, principal) => running.gateway.connect(transport, principal),
    ready: () => true,
    stateless: createStatelessDispatch({
      logger,
      connect: (transport, principal): ServedConnection => {
        const connection = running.gateway.connect(transport, principal, {
          taskOwner: `principal\u0000${principalKey(principal)}`,
          stateless: true,
        });
        open.add(connection);
        return {
          ...connection,
          close: async () => {
            await connection.close();
            open.delete(connection);
          },
        };
      },
    }),
  });
  each.track(listener);
  return { url: listener.url, listener, open, audit: running.auditRecords };
}

const headers = (method: string, name?: string): Record<string, string> => ({
  'Mcp-Protocol-Version': '2026-07-28',
  'Mcp-Method': method,
  ...(name !== undefined && { 'Mcp-Name': name }),
});

const request = (id: number, method: string, params: Json = {}) => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { ...params, _meta: modernEnvelope({ elicitation: { form: {} } }) },
});

describe('closing the HTTP listener', () => {
  it('closes the stateless connections kept idle and parked: the waiting call ends, and no timer is left', async () => {
    const gateway = await serve();
    const timersAtStart = liveTimers();
    // Asked for a confirmation: its connection is parked until the host retries.
    const call = request(1, 'tools/call', { name: 'up__echo', arguments: { text: 'hi' } });
    const asked = JSON.parse((await postRpc(gateway.url, call, headers('tools/call', 'up__echo'))).text) as {
      result: Json;
    };
    expect(asked.result.resultType).toBe('input_required');
    // Answered: its connection is kept for the next request of the same principal and envelope.
    const listed = await postRpc(gateway.url, request(2, 'tools/list'), headers('tools/list'));
    expect(listed.status).toBe(200);
    expect(gateway.open.size).toBe(2);
    expect(gateway.audit().filter((r) => r.type === 'call')).toHaveLength(0);

    await gateway.listener.close();
    expect(gateway.open.size).toBe(0);
    // The call waiting for its confirmation ends now, not when the wait would have run out.
    await expect
      .poll(() => gateway.audit().filter((r) => r.type === 'call'))
      .toEqual([
        expect.objectContaining({
          tool: 'up__echo',
          outcome: 'denied',
          error: expect.stringContaining('mcp-warden is shutting down') as unknown,
        }),
      ]);
    // Nothing of either connection keeps the process alive: its wait, the confirmation's timer.
    // (Read once the call has ended: expect.poll's own timer would count.)
    expect(liveTimers()).toBeLessThanOrEqual(timersAtStart);
  });
});
