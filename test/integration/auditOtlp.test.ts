/**
 * Audit records shipped as OTLP logs (HTTP, JSON) through the built binary, to a receiver in the
 * test: each record once, in order, in the OCSF API Activity shape when asked, across a time the
 * receiver refuses them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import { killRawSessions, readAudit } from './harness.js';
import { gatewayWithSinks, until } from './sinkHelpers.js';

afterEach(() => killRawSessions());

interface Received {
  readonly body: string;
  readonly severityText: string;
  readonly attributes: Record<string, string>;
}

/** An OTLP/HTTP logs receiver: keeps what it is sent while `up`, answers 503 otherwise. */
async function receiver() {
  const logs: Received[] = [];
  const resources: unknown[] = [];
  const state = { up: true, refused: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!state.up || req.url !== '/v1/logs') {
        state.refused++;
        res.writeHead(503).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceLogs: {
          resource: unknown;
          scopeLogs: {
            logRecords: {
              body: { stringValue: string };
              severityText: string;
              attributes: { key: string; value: { stringValue: string } }[];
            }[];
          }[];
        }[];
      };
      for (const rl of body.resourceLogs) {
        resources.push(rl.resource);
        for (const sl of rl.scopeLogs)
          for (const lr of sl.logRecords)
            logs.push({
              body: lr.body.stringValue,
              severityText: lr.severityText,
              attributes: Object.fromEntries(lr.attributes.map((a) => [a.key, a.value.stringValue])),
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { logs, resources, state, url: `http://127.0.0.1:${port}/v1/logs`, close: () => server.close() };
}

describe('audit shipped as OTLP logs', () => {
  it('each record once and in order, as OCSF 6003, across a time the receiver refuses them', async () => {
    const otlp = await receiver();
    const { s, file, callOnce } = await gatewayWithSinks([
      { type: 'otlp', endpoint: otlp.url, format: 'ocsf' },
    ]);
    for (let i = 0; i < 3; i++) await callOnce();
    await until('the first calls at the receiver', () => otlp.logs.length >= readAudit(file).length);

    otlp.state.up = false;
    for (let i = 0; i < 5; i++) await callOnce();
    await until('the gateway to say records wait', () => /audit sink otlp: cannot send/.test(s.stderr()));
    otlp.state.up = true;
    const waited = readAudit(file).length;
    await until('the records that waited', () => otlp.logs.length >= waited);
    s.child.stdin.end();
    expect(await s.exited).toBe(0);
    const written = readAudit(file);
    await until('every record', () => otlp.logs.length >= written.length);

    const events = otlp.logs.map((l) => JSON.parse(l.body) as Record<string, unknown>);
    expect(events.map((e) => JSON.parse(e.raw_data as string))).toEqual(written);
    const call = events.find((e) => e.activity_name === 'call')!;
    expect(call).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      type_uid: 600399,
      status_id: 1,
      disposition_id: 1,
      api: { operation: 'tools/call', service: { name: 'up' } },
      resources: [{ name: 'up__echo', type: 'MCP tool' }],
      metadata: { product: { name: 'mcp-warden' } },
    });
    const log = otlp.logs.find((l) => l.attributes['mcp_warden.event'] === 'call')!;
    expect(log.attributes).toMatchObject({
      'mcp_warden.server': 'up',
      'mcp_warden.tool': 'up__echo',
      'mcp_warden.decision': 'allow',
    });
    expect(log.severityText).toBe('INFO');
    expect(JSON.stringify(otlp.resources[0])).toContain('mcp-warden');
    otlp.close();
  }, 120_000);
});
