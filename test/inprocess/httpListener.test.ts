/**
 * The Streamable HTTP listener (2025-11-25 sessions) served in-process (`startServing` with
 * `--http`, the real fixture upstream), with the SDK's `StreamableHTTPClientTransport` as host:
 * sessions of their own, the DNS-rebinding checks, bounds, health and readiness, batches. What
 * needs the gateway's own process (SIGTERM, its stderr's reader gone, the exit code of a refused
 * address) stays with the built binary in test/integration/httpListener.test.ts.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { FAST_GATEWAY, fixture, readAudit, tempDir, textOf, writeConfig } from '../integration/harness.js';
import { connectHttpHost, INITIALIZE, postRpc, type HttpHost } from '../integration/httpHarness.js';
import { type ServedHttp } from './served.js';
import { servedPerTest } from './perTest.js';

let gateway: ServedHttp | undefined;
const each = servedPerTest();

async function host(url: string, options: Parameters<typeof connectHttpHost>[1] = {}): Promise<HttpHost> {
  const connected = await connectHttpHost(url, options);
  // A host the test already closed, or whose gateway stopped, may fail to close again.
  each.track({ close: () => connected.close().catch(() => {}) });
  return connected;
}

function setup(extra: Record<string, unknown> = {}, fixtureArgs: string[] = []) {
  const dir = tempDir();
  const auditFile = path.join(dir, 'audit.jsonl');
  const record = path.join(dir, 'upstream.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: auditFile },
      servers: { up: fixture(['--record', record, ...fixtureArgs]) },
      ...extra,
    },
    dir,
  );
  return { dir, config, auditFile, record };
}

describe('HTTP listener', () => {
  it('serves each host its own session, and records the calls of both', async () => {
    const { config, auditFile } = setup();
    gateway = await each.http(config);
    const a = await host(gateway.url, { name: 'host-a' });
    const b = await host(gateway.url, { name: 'host-b' });
    expect(a.transport.sessionId).toBeTruthy();
    expect(b.transport.sessionId).toBeTruthy();
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name)).toContain('up__echo');
    expect(textOf(await a.client.callTool({ name: 'up__echo', arguments: { text: 'from a' } }))).toBe(
      'from a',
    );
    expect(textOf(await b.client.callTool({ name: 'up__echo', arguments: { text: 'from b' } }))).toBe(
      'from b',
    );
    const calls = readAudit(auditFile).filter((r) => r.type === 'call');
    expect(
      calls.map((c) => [(c.client as { name: string }).name, (c.args as { text: string }).text]),
    ).toEqual([
      ['host-a', 'from a'],
      ['host-b', 'from b'],
    ]);
    // Without auth: nobody is authenticated, and the records say so.
    for (const call of calls) expect(call.principal).toEqual({ source: 'anonymous', subject: 'anonymous' });
    for (const lifecycle of readAudit(auditFile).filter((r) => r.type === 'gateway_start'))
      expect(lifecycle.principal).toMatchObject({ source: 'os' });
  });

  it('ends a session on DELETE: its id then gets 404 session not found', async () => {
    const { config } = setup();
    gateway = await each.http(config);
    const a = await connectHttpHost(gateway.url);
    const id = a.transport.sessionId!;
    await a.transport.terminateSession();
    await a.client.close();
    const after = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { 'Mcp-Session-Id': id, 'Mcp-Protocol-Version': '2025-11-25' },
    );
    expect(after.status).toBe(404);
    expect(JSON.parse(after.text)).toMatchObject({ error: { code: -32001, message: 'Session not found' } });
  });

  it('answers 404 at once for a session id it never issued', async () => {
    const { config } = setup();
    gateway = await each.http(config);
    const made = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { 'Mcp-Session-Id': 'x.y.z' },
    );
    expect(made.status).toBe(404);
  });

  it('refuses a foreign Origin or Host with 403 (DNS rebinding), and nothing reaches the upstream', async () => {
    const { config, record } = setup();
    gateway = await each.http(config);
    const origin = await postRpc(gateway.url, INITIALIZE, { Origin: 'http://evil.example' });
    expect(origin.status).toBe(403);
    expect(origin.text).toContain('Origin');
    // fetch sets Host from the URL; a rebinding page's request carries the page's own name.
    const port = new URL(gateway.url).port;
    const rebound = await new Promise<number>((resolve, reject) => {
      import('node:http')
        .then(({ request }) => {
          const req = request(
            {
              host: '127.0.0.1',
              port,
              path: '/mcp',
              method: 'POST',
              headers: { Host: `evil.example:${port}` },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.end(JSON.stringify(INITIALIZE));
        })
        .catch(reject);
    });
    expect(rebound).toBe(403);
    // The upstream is started at listen time; it never saw a tools/call.
    const seen = existsSync(record) ? readFileSync(record, 'utf8') : '';
    expect(seen).not.toContain('tools/call');
  });

  it('serves /healthz and /readyz', async () => {
    const { config } = setup();
    gateway = await each.http(config);
    expect((await fetch(`${gateway.base}/healthz`)).status).toBe(200);
    // Ready once the upstreams' first start has settled: poll for that event's effect.
    let ready = await fetch(`${gateway.base}/readyz`);
    while (ready.status !== 200) {
      expect(ready.status).toBe(503);
      await gateway.waitForStderr('[up]: connected');
      ready = await fetch(`${gateway.base}/readyz`);
    }
    expect(await ready.json()).toEqual({ status: 'ready' });
  });

  it('refuses a body over gateway.maxMessageSize with 413, and sessions over listen.maxSessions with 503', async () => {
    const { config } = setup({
      gateway: { ...FAST_GATEWAY, maxMessageSize: '64KiB' },
      listen: { http: '127.0.0.1:0', maxSessions: 1 },
    });
    gateway = await each.http(config);
    const big = await postRpc(gateway.url, {
      ...INITIALIZE,
      params: { ...INITIALIZE.params, padding: 'x'.repeat(70_000) },
    });
    expect(big.status).toBe(413);
    expect(big.text).toContain('gateway.maxMessageSize');
    await host(gateway.url);
    const second = await postRpc(gateway.url, INITIALIZE);
    expect(second.status).toBe(503);
    expect(second.text).toContain('listen.maxSessions');
  });

  it("asks the confirmation of a call on the connection that made it, not another host's", async () => {
    const { dir, config } = setup({
      policies: ['policy.yaml'],
      confirmation: { methods: ['elicitation'] },
    });
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n',
    );
    gateway = await each.http(config);
    const asked: string[] = [];
    const answering = (who: string) => (client: HttpHost['client']) =>
      client.setRequestHandler(ElicitRequestSchema, (request: ElicitRequest) => {
        asked.push(`${who}: ${String(request.params.message).split('\n')[0]}`);
        return { action: 'accept', content: {} };
      });
    // The first host to connect is the one upstreams were told about; the second one calls.
    await host(gateway.url, { beforeConnect: answering('a'), capabilities: { elicitation: {} } });
    const b = await host(gateway.url, { beforeConnect: answering('b'), capabilities: { elicitation: {} } });
    const result = await b.client.callTool({ name: 'up__echo', arguments: { text: 'ok?' } });
    expect(textOf(result)).toBe('ok?');
    expect(asked).toEqual(['b: Server "up" wants to run tool "echo" with arguments:']);
  });
});

describe('JSON-RPC batches over HTTP', () => {
  /** Opens a session on `version` by hand; returns the headers its later requests carry. */
  async function rawSession(url: string, version: string): Promise<Record<string, string>> {
    const init = await postRpc(url, {
      ...INITIALIZE,
      params: { ...INITIALIZE.params, protocolVersion: version },
    });
    expect(init.status).toBe(200);
    const headers = {
      'Mcp-Session-Id': init.headers.get('mcp-session-id')!,
      'Mcp-Protocol-Version': version,
    };
    expect(
      (await postRpc(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status,
    ).toBe(202);
    return headers;
  }

  /** The JSON-RPC messages of an answer, whether one JSON body or an event stream. */
  function messagesOf(answer: {
    headers: Headers;
    text: string;
  }): { id?: unknown; result?: unknown; error?: { code: number; message: string } }[] {
    if (answer.headers.get('content-type')?.includes('text/event-stream'))
      return answer.text
        .split('\n')
        .filter((line) => line.startsWith('data: ') && line.length > 6)
        .map((line) => JSON.parse(line.slice(6)) as never);
    const body = JSON.parse(answer.text) as unknown;
    return (Array.isArray(body) ? body : [body]) as never;
  }

  const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
  const echo = (id: number, text: string) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'up__echo', arguments: { text } },
  });

  it('answers a call with nothing before its answer as one JSON body, and one with progress as an event stream', async () => {
    const { config } = setup();
    gateway = await each.http(config);
    const headers = await rawSession(gateway.url, '2025-11-25');
    const plain = await postRpc(gateway.url, echo(3, 'plain'), headers);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('application/json');
    expect(plain.headers.get('mcp-session-id')).toBe(headers['Mcp-Session-Id']);
    expect(JSON.parse(plain.text)).toMatchObject({ id: 3, result: { content: [{ text: 'plain' }] } });
    const progressed = await postRpc(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'up__progress', arguments: { steps: 2 }, _meta: { progressToken: 'p' } },
      },
      headers,
    );
    expect(progressed.headers.get('content-type')).toBe('text/event-stream');
    const messages = messagesOf(progressed);
    expect(messages.filter((m) => m.id === undefined)).toHaveLength(2);
    expect(messages.at(-1)).toMatchObject({ id: 4, result: { content: [{ text: 'done' }] } });
  });

  it('a 2025-03-26 session gets a batch served: an answer per request, on the POST that carried it', async () => {
    const { config } = setup();
    gateway = await each.http(config);
    const headers = await rawSession(gateway.url, '2025-03-26');
    const answer = await postRpc(
      gateway.url,
      [ping(7), echo(8, 'batched'), { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }],
      headers,
    );
    expect(answer.status).toBe(200);
    const messages = messagesOf(answer);
    expect(messages.map((m) => m.id).sort()).toEqual([7, 8]);
    expect(messages.find((m) => m.id === 7)?.result).toEqual({});
    expect(messages.find((m) => m.id === 8)?.result).toMatchObject({
      content: [{ type: 'text', text: 'batched' }],
    });
  });

  it('a 2025-03-26 session gets a batch over the bound refused whole, each request under its id', async () => {
    const { config, record } = setup();
    gateway = await each.http(config);
    const headers = await rawSession(gateway.url, '2025-03-26');
    const calls = Array.from({ length: 101 }, (_, i) => echo(i + 1, `n${i}`));
    const answer = await postRpc(gateway.url, calls, headers);
    expect(answer.status).toBe(400);
    const messages = messagesOf(answer);
    expect(messages).toHaveLength(101);
    expect(messages[0]).toMatchObject({ id: 1, error: { code: -32600 } });
    expect(messages[0]!.error!.message).toContain('over the bound of 100');
    // None of it reached the upstream.
    expect(existsSync(record) ? readFileSync(record, 'utf8') : '').not.toContain('"tools/call"');
  });

  it("bounds a 2025-03-26 session's open batches together, over all its POSTs, until their answers are owed no more", async () => {
    const { config, record } = setup();
    gateway = await each.http(config);
    const headers = await rawSession(gateway.url, '2025-03-26');
    const hang = (i: number) => ({
      jsonrpc: '2.0',
      id: `h${i}`,
      method: 'tools/call',
      params: { name: 'up__hang', arguments: {} },
    });
    const pings = (from: number) => Array.from({ length: 50 }, (_, i) => ping(from + i));
    // A batch whose answers stay owed: its POST stays open while its calls hang.
    const hanging = postRpc(
      gateway.url,
      Array.from({ length: 60 }, (_, i) => hang(i)),
      headers,
    ).catch(() => undefined);
    await expect.poll(() => (existsSync(record) ? readFileSync(record, 'utf8') : '')).toContain('"hang"');
    const refused = await postRpc(gateway.url, pings(1000), headers);
    expect(refused.status).toBe(400);
    const messages = messagesOf(refused);
    expect(messages).toHaveLength(50);
    expect(messages[0]!.error!.message).toContain('60 answers to earlier batches are still owed');
    // The host cancels the calls it waits for: the batch is owed nothing more.
    const cancels = Array.from({ length: 60 }, (_, i) => ({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: `h${i}` },
    }));
    expect((await postRpc(gateway.url, cancels, headers)).status).toBe(202);
    const served = await postRpc(gateway.url, pings(2000), headers);
    expect(served.status).toBe(200);
    expect(messagesOf(served).every((m) => m.error === undefined && m.result !== undefined)).toBe(true);
    void hanging;
  });

  it('a session on a later revision gets a batch refused, saying batches belong to 2025-03-26', async () => {
    const { config, record } = setup();
    gateway = await each.http(config);
    const headers = await rawSession(gateway.url, '2025-11-25');
    const answer = await postRpc(gateway.url, [ping(1), echo(2, 'x')], headers);
    expect(answer.status).toBe(400);
    const messages = messagesOf(answer);
    expect(messages.map((m) => m.id)).toEqual([1, 2]);
    for (const message of messages) {
      expect(message.error?.code).toBe(-32600);
      expect(message.error?.message).toContain('2025-03-26');
    }
    expect(existsSync(record) ? readFileSync(record, 'utf8') : '').not.toContain('"tools/call"');
  });
});
