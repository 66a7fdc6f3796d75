import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openAuditLog } from '../../src/features/audit/auditWriter.js';
import type { CallEvent, CallOutcome } from '../../src/core/events.js';
import {
  formatSummary,
  percentile,
  summarizeAudit,
  summarizeRecords,
} from '../../src/features/audit/summary.js';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'warden-audit-sum-'));
  file = path.join(dir, 'audit.jsonl');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function call(tool: string, outcome: CallOutcome, ms: number): CallEvent {
  const [server = '', upstreamTool = ''] = tool.split('__');
  return {
    type: 'call',
    session: 's',
    tool,
    server,
    upstreamTool,
    decision: { effect: outcome === 'denied' ? 'deny' : 'allow', rule: 'r' },
    outcome,
    ms,
    repairs: [],
  };
}

describe('percentile (nearest rank)', () => {
  it('picks the smallest value with at least p% at or below it', () => {
    const values = Array.from({ length: 20 }, (_, i) => i + 1); // 1..20
    expect(percentile(values, 50)).toBe(10);
    expect(percentile(values, 95)).toBe(19);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });
});

describe('audit summary', () => {
  it('counts calls, denials and errors per tool, with p50/p95 of calls not denied', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', maxBytes: 1500, maxFiles: 20 });
    log.append({ type: 'gateway_start', session: 's', version: '0.1.0', pid: 1 });
    for (let ms = 1; ms <= 20; ms++) log.append(call('fs__read', 'ok', ms));
    log.append(call('fs__read', 'timeout', 300_000));
    log.append(call('fs__write', 'denied', 0));
    log.append(call('fs__write', 'denied', 0));
    log.append(call('fs__write', 'ok', 40));
    log.append(call('git__push', 'tool_error', 2.5));
    log.append(call('git__push', 'upstream_failure', 3.25));
    log.append({ type: 'upstream_restart', session: 's', server: 'git', attempt: 1, delayMs: 500 });
    log.close();
    appendFileSync(file, 'not json\n');

    const summary = summarizeAudit(file);
    expect(summary.files.length).toBeGreaterThan(1); // rotated files are included
    expect(summary.records).toBe(28);
    expect(summary.unreadable).toBe(1);
    expect(summary.tools).toEqual([
      { tool: 'fs__read', server: 'fs', calls: 21, ok: 20, denied: 0, errors: 1, p50: 11, p95: 20 },
      { tool: 'fs__write', server: 'fs', calls: 3, ok: 1, denied: 2, errors: 0, p50: 40, p95: 40 },
      { tool: 'git__push', server: 'git', calls: 2, ok: 0, denied: 0, errors: 2, p50: 2.5, p95: 3.25 },
    ]);
    expect(summary.total).toMatchObject({ tool: 'total', calls: 26, ok: 21, denied: 2, errors: 3 });
    expect(summary.errorOutcomes).toEqual({ timeout: 1, tool_error: 1, upstream_failure: 1 });
    expect(summary.events).toEqual({ gateway_start: 1, upstream_restart: 1 });

    const text = formatSummary(summary);
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^28 records in \d+ files from \S+ to \S+$/);
    expect(lines[1]).toBe('1 unreadable line skipped (run "mcp-warden audit verify")');
    expect(text).toContain(
      [
        'tool       server  calls  ok  denied  errors  p50 ms  p95 ms',
        '---------  ------  -----  --  ------  ------  ------  ------',
        'fs__read   fs         21  20       0       1      11      20',
        'fs__write  fs          3   1       2       0      40      40',
        'git__push  git         2   0       0       2     2.5     3.3',
        '---------  ------  -----  --  ------  ------  ------  ------',
        'total                 26  21       2       3      10      40',
      ].join('\n'),
    );
    expect(text).toContain('errors by outcome: timeout 1, tool_error 1, upstream_failure 1');
    expect(text).toContain('other records: gateway_start 1, upstream_restart 1');
  });

  it('says so when there are no calls, and shows "-" for a tool with only denials', () => {
    const empty = { ...summarizeRecords([]), files: [file], unreadable: 0 };
    expect(formatSummary(empty)).toBe('0 records in 1 file\n\nno calls recorded\n');
    const denied = { ...summarizeRecords([call('a__b', 'denied', 0)]), files: [file], unreadable: 0 };
    expect(formatSummary(denied)).toContain('a__b   a           1   0       1       0       -       -\n');
  });

  it('skips values that are not records and is not fooled by a __proto__ type', () => {
    const summary = summarizeRecords([
      null,
      42,
      { type: '__proto__' },
      { type: 'call', tool: 'x', outcome: '__proto__' },
    ]);
    expect(summary.records).toBe(2);
    expect(summary.events).toEqual(JSON.parse('{"__proto__": 1}'));
    expect(Object.getPrototypeOf(summary.events)).toBe(Object.prototype);
    expect(summary.total.errors).toBe(1);
  });
});

describe('audit summary by principal', () => {
  it('counts calls per principal, most first, with records that name none as (unknown)', () => {
    const alice = { source: 'token' as const, subject: 'alice', issuer: 'https://idp.example' };
    const bob = { source: 'os' as const, subject: 'bob', hostname: 'laptop' };
    const summary = summarizeRecords([
      { ...call('fs__read', 'ok', 5), principal: alice },
      { ...call('fs__write', 'denied', 1), principal: alice },
      { ...call('fs__read', 'timeout', 9), principal: alice },
      { ...call('fs__read', 'ok', 2), principal: bob },
      call('fs__read', 'ok', 3),
    ]);
    expect(summary.principals.map((p) => [p.tool, p.calls, p.ok, p.denied, p.errors])).toEqual([
      ['alice@https://idp.example', 3, 1, 1, 1],
      ['(unknown)', 1, 1, 0, 0],
      ['bob@laptop', 1, 1, 0, 0],
    ]);
    const text = formatSummary({ ...summary, files: [file], unreadable: 0 });
    expect(text).toMatch(
      /principal\s+calls\s+ok\s+denied\s+errors\n[- ]+\nalice@https:\/\/idp\.example\s+3\s+1\s+1\s+1\n/,
    );
  });
});
