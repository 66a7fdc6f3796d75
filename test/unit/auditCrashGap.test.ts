/**
 * `audit verify` tells a crash from tampering: a record cut short by a killed gateway (or a full
 * disk), followed by the writer's recovery record, is a warning; any other unreadable or altered
 * line fails, naming file:line.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openAuditLog } from '../../src/features/audit/auditWriter.js';
import { sealRecord } from '../../src/features/audit/chain.js';
import { formatVerifyResult, verifyAuditFiles, type VerifyResult } from '../../src/features/audit/verify.js';
import type { CallEvent } from '../../src/core/events.js';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'warden-crash-'));
  file = path.join(dir, 'audit.jsonl');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function call(n: number): CallEvent {
  return {
    type: 'call',
    session: 's1',
    tool: 'fs__read',
    server: 'fs',
    upstreamTool: 'read',
    args: { path: `/tmp/${n}`, pad: 'x'.repeat(200) },
    decision: { effect: 'allow', rule: null },
    outcome: 'ok',
    ms: n,
    repairs: [],
  };
}

async function writeCalls(from: number, count: number): Promise<void> {
  const log = await openAuditLog({ file, onFailure: 'block' });
  for (let i = from; i < from + count; i++) log.append(call(i));
  log.close();
}

function lines(): string[] {
  return readFileSync(file, 'utf8').split('\n').slice(0, -1);
}

function parsed(line: string | undefined): Record<string, unknown> {
  return JSON.parse(line ?? '') as Record<string, unknown>;
}

/** Cuts the file in the middle of its last record, as a SIGKILL during write(2) does. */
function tearLastRecord(): void {
  const text = readFileSync(file, 'utf8');
  const lastStart = text.lastIndexOf('\n', text.length - 2) + 1;
  writeFileSync(file, text.slice(0, lastStart + 120));
}

/** A crash gap: 3 records, the 4th torn, then a restarted writer's recovery and 2 more records. */
async function crashedLog(): Promise<void> {
  await writeCalls(0, 4);
  tearLastRecord();
  await writeCalls(4, 2);
}

function failure(result: VerifyResult): { line: number; problem: string } {
  if (result.ok) throw new Error(`expected a failure, got ${formatVerifyResult(result)}`);
  return { line: result.line, problem: result.problem };
}

describe('a crash: a torn record and the writer recovery', () => {
  it('the restarted writer starts with an audit_gap record chained to the last whole record', async () => {
    await crashedLog();
    const content = lines();
    expect(content).toHaveLength(7);
    expect(() => JSON.parse(content[3] ?? '')).toThrow(); // the torn line is left as it was
    const gap = parsed(content[4]);
    expect(gap).toMatchObject({ type: 'audit_gap', torn: true, lost: 1, seq: 3 });
    expect(gap.prev).toBe(parsed(content[2]).hash);
    expect(gap.since).toMatch(/^\d{4}-\d\d-\d\dT/); // the cut record's own time
    expect(parsed(content[5])).toMatchObject({ type: 'call', seq: 4, prev: gap.hash });
  });

  it('verify goes on to the end, exits 0 and says where the crash gap is', async () => {
    await crashedLog();
    const result = verifyAuditFiles(file);
    expect(result).toMatchObject({ ok: true, records: 6, fromGenesis: true });
    expect(result.ok && result.warnings).toEqual([
      `${file}:4: crash gap: a record cut short (the gateway was killed or crashed, or the disk filled, while writing it); the writer recovered at ${file}:5`,
    ]);
    const text = formatVerifyResult(result);
    expect(text.split('\n')[0]).toBe(`warning: ${result.ok && result.warnings[0]}`);
    expect(text.split('\n')[1]).toMatch(/^ok: 6 records .*1 crash gap, see/);
  });

  it('a write cut right before its newline lost nothing: no gap record, no warning', async () => {
    await writeCalls(0, 3);
    writeFileSync(file, readFileSync(file, 'utf8').slice(0, -1));
    await writeCalls(3, 1);
    expect(lines().map((line) => parsed(line).type)).toEqual(['call', 'call', 'call', 'call']);
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 4, warnings: [] });
  });

  it('a torn very first record: the recovery starts the chain', async () => {
    await writeCalls(0, 1);
    tearLastRecord();
    await writeCalls(1, 1);
    expect(parsed(lines()[1])).toMatchObject({ type: 'audit_gap', seq: 0, torn: true });
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 2, fromGenesis: true });
  });
});

describe('tampering is not mistaken for a crash', () => {
  it('an edited line', async () => {
    await crashedLog();
    const content = lines();
    content[5] = (content[5] ?? '').replace('/tmp/4', '/tmp/9');
    writeFileSync(file, content.map((line) => `${line}\n`).join(''));
    expect(failure(verifyAuditFiles(file))).toEqual({
      line: 6,
      problem: 'hash mismatch: the record was changed after it was written',
    });
  });

  it('a deleted middle line', async () => {
    await crashedLog();
    const content = lines();
    content.splice(1, 1);
    writeFileSync(file, content.map((line) => `${line}\n`).join(''));
    expect(failure(verifyAuditFiles(file))).toMatchObject({
      line: 2,
      problem: expect.stringMatching(/missing/),
    });
  });

  it('a record deleted and its line cut to look torn, with a fake recovery that does not chain', async () => {
    await writeCalls(0, 5);
    const content = lines();
    // Remove record 2 (a call someone wants gone): cut line 3 and forge an audit_gap after it,
    // chained to record 0 instead of record 1, the last whole record before the cut (with the
    // seq the cut record had, so only the link gives it away).
    const forged = sealRecord(
      JSON.stringify({
        seq: 2,
        ts: '2025-01-01T00:00:00.000Z',
        type: 'audit_gap',
        lost: 1,
        since: '2025-01-01T00:00:00.000Z',
        error: 'x',
        torn: true,
        writer: parsed(content[0]).writer,
        prev: parsed(content[0]).hash,
      }),
    ).line;
    const tampered = [content[0], content[1], (content[2] ?? '').slice(0, 60)].join('\n') + '\n' + forged;
    writeFileSync(file, tampered);
    expect(failure(verifyAuditFiles(file))).toEqual({
      line: 3,
      problem: expect.stringMatching(
        /^not valid JSON: a garbled or cut record, and the next record is not the writer's recovery/,
      ),
    });
  });

  it('a torn line in the middle without a recovery record after it', async () => {
    await writeCalls(0, 5);
    const content = lines();
    content[2] = (content[2] ?? '').slice(0, 60);
    writeFileSync(file, content.map((line) => `${line}\n`).join(''));
    expect(failure(verifyAuditFiles(file))).toMatchObject({
      line: 3,
      problem: expect.stringMatching(/not the writer's recovery/),
    });
  });

  it('an audit_gap after a cut line that does not say it recovers from a torn write', async () => {
    await crashedLog();
    const content = lines();
    const gap = parsed(content[4]);
    delete gap.torn;
    delete gap.hash;
    content[4] = sealRecord(JSON.stringify(gap)).line.trimEnd();
    writeFileSync(file, content.map((line) => `${line}\n`).join(''));
    expect(failure(verifyAuditFiles(file)).line).toBe(4);
  });

  it('a cut record whose seq is not the one its recovery takes', async () => {
    await crashedLog();
    const content = lines();
    content[3] = (content[3] ?? '').replace(/^\{"seq":3,/, '{"seq":7,');
    writeFileSync(file, content.map((line) => `${line}\n`).join(''));
    expect(failure(verifyAuditFiles(file)).line).toBe(4);
  });

  it('two cut lines in a row', async () => {
    await crashedLog();
    const content = lines();
    content.splice(3, 0, (content[2] ?? '').slice(0, 30));
    writeFileSync(file, content.map((line) => `${line}\n`).join(''));
    expect(failure(verifyAuditFiles(file)).line).toBe(4);
  });

  it('a garbled line that is not the beginning of a record', async () => {
    await writeCalls(0, 3);
    const content = lines();
    content[1] = 'hello';
    writeFileSync(file, content.map((line) => `${line}\n`).join(''));
    expect(failure(verifyAuditFiles(file))).toEqual({
      line: 2,
      problem: 'not valid JSON, and not the beginning of a record: a garbled line',
    });
  });

  it('garbage at the very end', async () => {
    await writeCalls(0, 3);
    writeFileSync(file, `${readFileSync(file, 'utf8')}#!/bin/sh`);
    expect(failure(verifyAuditFiles(file)).line).toBe(4);
  });
});
