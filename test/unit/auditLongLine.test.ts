/**
 * A line longer than Node can hold as text was never written by a gateway; reading it whole
 * would gather it in memory only to fail there (a file of zeros without a newline, say). The
 * reader stops at the bound and says which line, and verify reports it as that file's line.
 * The bound is V8's longest string; these tests give a small one.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LineTooLongError, readLinesSync } from '../../src/features/audit/files.js';
import { readAuditRecords } from '../../src/features/audit/summary.js';
import { verifyAuditFiles } from '../../src/features/audit/verify.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'warden-long-line-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function fileWith(text: string): string {
  const file = path.join(dir, 'audit.jsonl');
  writeFileSync(file, text);
  return file;
}

describe('a line past the longest the reader takes', () => {
  it('yields the lines before it, then names it', () => {
    const file = fileWith(`short\n${'x'.repeat(50)}\nafter\n`);
    const seen: string[] = [];
    expect(() => {
      for (const line of readLinesSync(file, { maxLineBytes: 20 })) seen.push(line.text);
    }).toThrow(new LineTooLongError(2, 20));
    expect(seen).toEqual(['short']);
  });

  it('stops across read chunks, and on a last line without a newline, before holding it all', () => {
    // 2.5 MiB with no newline: the reader reads 1 MiB at a time and stops once past 2 MiB.
    const file = fileWith('y'.repeat(2.5 * 1024 * 1024));
    expect(() => [...readLinesSync(file, { maxLineBytes: 2 * 1024 * 1024 })]).toThrow(LineTooLongError);
    // The same file under the default bound is read whole, as one unterminated line.
    const lines = [...readLinesSync(file)];
    expect(lines.map((l) => [l.number, l.text.length, l.terminated])).toEqual([
      [1, 2.5 * 1024 * 1024, false],
    ]);
  });

  it('is reported by verify as that file and line', () => {
    const file = fileWith(`${'z'.repeat(5000)}\n`);
    const result = verifyAuditFiles([file], undefined, { maxLineBytes: 1000 });
    expect(result).toMatchObject({ ok: false, file, line: 1 });
    expect(result.ok === false && result.problem).toMatch(/line 1 is longer than 1000 bytes/);
    // Under the default bound the same line is read, and fails as a record instead.
    const whole = verifyAuditFiles([file]);
    expect(whole.ok === false && whole.problem).not.toMatch(/longer than/);
  });

  it('fails a report naming the file and line, rather than leave the rest of the file out', () => {
    const file = fileWith(`{"seq":0}\n${'z'.repeat(5000)}\n{"seq":2}\n`);
    expect(() => readAuditRecords([file], { maxLineBytes: 1000 })).toThrow(
      `${file}: line 2 is longer than 1000 bytes`,
    );
    expect(readAuditRecords([file]).records).toHaveLength(2);
  });
});
