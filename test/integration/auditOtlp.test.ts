/**
 * Audit records shipped as OTLP logs (HTTP, JSON) through the built binary, to a receiver in the
 * test: each record once, in order, in the OCSF API Activity shape when asked, across a time the
 * receiver refuses them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { killRawSessions, readAudit, runCli } from './harness.js';
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

describe('a sink whose spool overflowed while it was down', () => {
  it('is told, in its own format and in its place, how many records it missed and which', async () => {
    const otlp = await receiver();
    const { s, file, callOnce } = await gatewayWithSinks(
      [{ type: 'otlp', endpoint: otlp.url, spoolMaxSize: '1KiB' }],
      undefined,
      { onFailure: 'continue' },
    );
    await callOnce();
    await until('the first call at the receiver', () => otlp.logs.length >= readAudit(file).length);

    // Down long enough for its 1 KiB spool to overflow: calls go on, records are lost for it.
    otlp.state.up = false;
    for (let i = 0; i < 12; i++) await callOnce();
    await until('the full spool in the log', () => /the spool for audit sink otlp is full/.test(s.stderr()));
    otlp.state.up = true;
    // Back: what its spool kept drains; the next record it keeps comes after a gap record.
    await expect
      .poll(async () => (await runCli(['audit', 'summary', file])).stdout, { timeout: 30_000, interval: 200 })
      .not.toMatch(/waiting for sink otlp/);
    await callOnce();
    s.child.stdin.end();
    expect(await s.exited).toBe(0);
    const written = readAudit(file);
    await until('the last record', () => otlp.logs.some((l) => l.body.includes('"gateway_stop"')));

    const got = otlp.logs.map((l) => JSON.parse(l.body) as Record<string, unknown>);
    const sent = new Set(got.map((r) => r.seq));
    const missed = written.filter((r) => !sent.has(r.seq));
    expect(missed.length).toBeGreaterThan(0);
    const gaps = got.flatMap((r, at) => (r.type === 'audit_gap' ? [{ gap: r, at }] : []));
    expect(gaps.length).toBeGreaterThan(0);
    let told = 0;
    for (const { gap, at } of gaps) {
      const range = missed.filter(
        (r) => r.seq >= (gap.firstSeq as number) && r.seq <= (gap.lastSeq as number),
      );
      expect(gap).toMatchObject({
        sink: 'otlp',
        lost: range.length,
        since: range[0]!.ts,
        until: range.at(-1)!.ts,
        error: expect.stringContaining('the spool for audit sink otlp is full'),
      });
      // In its place: after every record sent before the loss, before every record after it.
      const seqs = (records: Record<string, unknown>[]) =>
        records.filter((r) => r.type !== 'audit_gap').map((r) => r.seq as number);
      expect(Math.max(...seqs(got.slice(0, at)))).toBeLessThan(gap.firstSeq as number);
      expect(Math.min(...seqs(got.slice(at + 1)))).toBeGreaterThan(gap.lastSeq as number);
      expect(otlp.logs[at]!.severityText).toBe('ERROR');
      told += range.length;
    }
    expect(told).toBe(missed.length);
    // The sink's copy, verified: it stops at the gap, naming what it lacks.
    const copy = path.join(path.dirname(file), 'from-sink.jsonl');
    writeFileSync(copy, otlp.logs.map((l) => `${l.body}\n`).join(''));
    const verify = await runCli(['audit', 'verify', copy]);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain(
      `${copy}:${gaps[0]!.at + 1}: the gateway told sink otlp that ${String(gaps[0]!.gap.lost)} records`,
    );
    otlp.close();
  }, 120_000);
});
