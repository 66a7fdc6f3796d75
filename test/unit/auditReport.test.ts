/** The numbers behind `audit report`'s page, from records as a trail may hold them. */
import { describe, expect, it } from 'vitest';
import { reportOf } from '../../src/features/audit/report.js';
import { renderAuditReportHtml } from '../../src/features/audit/reportHtml.js';

const verified = {
  ok: true as const,
  records: 0,
  writers: 1,
  files: ['audit.jsonl'],
  fromGenesis: true,
  firstSeq: 0,
  unanchored: 0,
  lastHash: null,
  warnings: [],
};

function call(ts: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'call',
    ts,
    tool: 'fs__read',
    server: 'fs',
    outcome: 'ok',
    decision: { effect: 'allow', rule: null },
    ...fields,
  };
}

describe('audit report data', () => {
  const records = [
    { type: 'gateway_start', ts: '2026-11-23T10:00:00.000Z' },
    call('2026-11-23T10:00:01.000Z', { principal: 'alice', host: 'laptop-1' }),
    call('2026-11-23T10:03:00.000Z', { principal: { subject: 'bob', claims: { team: 'x' } } }),
    call('2026-11-23T10:03:30.000Z', {
      outcome: 'denied',
      decision: { effect: 'deny', rule: 'no-write' },
      tool: 'fs__write',
    }),
    {
      type: 'request',
      ts: '2026-11-23T10:04:00.000Z',
      method: 'resources/read',
      server: 'web',
      outcome: 'timeout',
      decision: { effect: 'allow', rule: null },
    },
    { type: 'checkpoint', ts: '2026-11-23T10:05:00.000Z', seq: 5 },
  ];
  const report = reportOf(records, { files: ['audit.jsonl'], unreadable: 0, verify: verified });

  it('counts decisions by effect and rule, tools and servers, denials and errors', () => {
    expect(report.effects).toEqual({ allow: 3, deny: 1 });
    expect(report.rules).toEqual([
      { rule: '(default)', effect: 'allow', count: 3 },
      { rule: 'no-write', effect: 'deny', count: 1 },
    ]);
    expect(report.tools.map((t) => [t.name, t.calls, t.denied])).toEqual([
      ['fs__read', 2, 0],
      ['fs__write', 1, 1],
    ]);
    expect(report.servers.map((s) => [s.name, s.calls, s.errors])).toEqual([
      ['fs', 3, 0],
      ['web', 1, 1],
    ]);
    expect(report.denials.total).toBe(1);
    expect(report.errors.records[0]?.method).toBe('resources/read');
  });

  it('takes principals as strings or objects, and tolerates their absence', () => {
    expect(report.principals).toEqual([
      { principal: '(not recorded)', host: '', calls: 2 },
      { principal: 'alice', host: 'laptop-1', calls: 1 },
      { principal: 'bob', host: '', calls: 1 },
    ]);
  });

  it('buckets calls by minute over a short trail, and finds the last checkpoint', () => {
    expect(report.timeline.bucketMs).toBe(60_000);
    expect(report.timeline.starts[0]).toBe('2026-11-23T10:00:00.000Z');
    expect(report.timeline.ok).toEqual([1, 0, 0, 1, 0]);
    expect(report.timeline.denied).toEqual([0, 0, 0, 1, 0]);
    expect(report.timeline.errors).toEqual([0, 0, 0, 0, 1]);
    expect(report.checkpoint).toEqual({ seq: 5, ts: '2026-11-23T10:05:00.000Z', count: 1 });
  });

  it('keeps what a record says out of the markup and out of the scripts', () => {
    const hostile = reportOf(
      [
        call('2026-11-23T10:00:01.000Z', {
          tool: '</script><img src=x onerror=alert(1)>',
          outcome: 'denied',
        }),
      ],
      { files: ['audit.jsonl'], unreadable: 0, verify: verified },
    );
    const html = renderAuditReportHtml(hostile);
    expect(html).not.toContain('<img src=x');
    expect(html.match(/<\/script>/g)).toHaveLength(3); // the data, the library and the drawing
  });
});
