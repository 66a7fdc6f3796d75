import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openAuditLog } from '../../src/features/audit/auditWriter.js';
import { canonicalJson } from '../../src/lib/canonicalJson.js';
import { lineHashes, sealRecord, sealSuffix } from '../../src/features/audit/chain.js';
import { LineBatch } from '../../src/features/audit/lineBatch.js';
import { sha256Hex } from '../../src/lib/hash.js';
import { GENESIS_HASH, type CallEvent } from '../../src/core/events.js';
import { createRedactor } from '../../src/features/audit/redact.js';
import { formatVerifyResult, verifyAuditFiles } from '../../src/features/audit/verify.js';
import { callEvent as call } from './auditEvents.js';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'warden-audit-'));
  file = path.join(dir, 'audit.jsonl');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function writeCalls(
  count: number,
  options: { maxBytes?: number; maxFiles?: number } = {},
): Promise<void> {
  const log = await openAuditLog({ file, onFailure: 'block', ...options });
  for (let i = 0; i < count; i++) log.append(call(i));
  log.close();
}

function lines(target = file): string[] {
  return readFileSync(target, 'utf8').split('\n').slice(0, -1);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function writeLines(content: string[], target = file): void {
  writeFileSync(target, content.map((line) => `${line}\n`).join(''));
}

describe('canonical JSON', () => {
  it('sorts keys at every depth, without whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('maps what JSON cannot hold, and survives a parse round trip', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const value = {
      u: undefined,
      f: () => 1,
      n: [undefined, NaN, Infinity, -0, 1e21, 0.1],
      big: 12345678901234567890n,
      date: new Date(0),
      cyclic,
      text: 'line\n\u2028"quote" \ud800',
    };
    const text = canonicalJson(value);
    expect(text).toBe(
      '{"big":"12345678901234567890","cyclic":{"self":"[Circular]"},"date":"1970-01-01T00:00:00.000Z",' +
        '"n":[null,null,null,0,1e+21,0.1],"text":"line\\n\u2028\\"quote\\" \\ud800"}',
    );
    expect(canonicalJson(JSON.parse(text))).toBe(text);
    expect(canonicalJson(undefined)).toBe('null');
  });
});

describe('audit log hash chain', () => {
  it('writes one line per record, hashed over its own bytes, chained from genesis', async () => {
    await writeCalls(3);
    const records = lines().map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const line of lines()) {
      const hashes = lineHashes(line);
      expect(hashes?.actual).toBe(hashes?.claimed);
    }
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(records[0]?.prev).toBe(GENESIS_HASH);
    expect(records[1]?.prev).toBe(records[0]?.hash);
    expect(records[2]?.prev).toBe(records[1]?.hash);
    for (const record of records) {
      expect(new Date(String(record.ts)).toISOString()).toBe(record.ts);
      expect(record.writer).toMatch(/^[0-9a-f]{12}$/);
    }
    expect(lines()[0]).toMatch(/^\{"seq":0,"ts":"[^"]+","type":"call","session":"s1",/);
    expect(lines()[0]).toMatch(/,"hash":"[0-9a-f]{64}"\}$/);
  });

  it('verifies an intact log', async () => {
    await writeCalls(20);
    expect(verifyAuditFiles(file)).toMatchObject({
      ok: true,
      records: 20,
      writers: 1,
      fromGenesis: true,
      firstSeq: 0,
    });
  });

  it('continues the chain when the file is reopened', async () => {
    await writeCalls(3);
    await writeCalls(2);
    const records = lines().map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(records[3]?.prev).toBe(records[2]?.hash);
    expect(records[3]?.writer).not.toBe(records[2]?.writer);
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 5, writers: 2 });
  });

  it('ignores chain fields callers try to set', async () => {
    const log = await openAuditLog({ file, onFailure: 'block' });
    log.append({ ...call(0), seq: 99, hash: 'x', prev: 'y', writer: 'me' } as CallEvent);
    log.close();
    const record = JSON.parse(lines()[0] ?? '') as Record<string, unknown>;
    expect(record).toMatchObject({ seq: 0, prev: GENESIS_HASH });
    expect(record.writer).not.toBe('me');
    expect(verifyAuditFiles(file).ok).toBe(true);
  });

  it('writes a writer id that needs escaping as valid JSON', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', writer: 'a "quoted" \\ id' });
    log.append(call(0));
    log.close();
    const record = JSON.parse(lines()[0] ?? '') as Record<string, unknown>;
    expect(record.writer).toBe('a "quoted" \\ id');
    expect(verifyAuditFiles(file).ok).toBe(true);
  });

  it('redacts with the configured redactor before hashing', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', redactor: createRedactor() });
    log.append(call(0, { args: { password: 'hunter2', note: 'password=hunter2' }, error: 'token=abc123' }));
    log.close();
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('abc123');
    expect(text).toContain('"session":"s1"'); // a record's own field names are not secret keys
    expect(verifyAuditFiles(file).ok).toBe(true);
  });

  it('counts the bytes of lines that are not ASCII (no false short write)', async () => {
    const statuses: string[] = [];
    const log = await openAuditLog({
      file,
      onFailure: 'block',
      writes: 'per-tick',
      maxBytes: 4096,
      onStatus: (status) => statuses.push(status.kind),
    });
    for (let n = 0; n < 20; n++)
      log.append(call(n, { args: { text: `ünïcödé 😀 ${'€'.repeat(n * 10)} \ud800` } }));
    log.close();
    expect(statuses).toEqual([]);
    expect(log.healthy).toBe(true);
    const files = [`${file}.3`, `${file}.2`, `${file}.1`, file].filter((name) => existsSync(name));
    expect(files.length).toBeGreaterThan(1);
    const records = files.flatMap((name) => readFileSync(name, 'utf8').split('\n').slice(0, -1));
    expect(records.map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual([...Array(20).keys()]);
    expect(JSON.parse(records[1]!)).toMatchObject({ args: { text: 'ünïcödé 😀 €€€€€€€€€€ \ud800' } });
    expect(verifyAuditFiles(files).ok).toBe(true);
  });

  describe('per-tick writes', () => {
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

    it('writes the records of one turn together at its end, or at flush()', async () => {
      const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
      for (let i = 0; i < 5; i++) log.append(call(i));
      expect(readFileSync(file, 'utf8')).toBe('');
      await nextTurn();
      expect(lines()).toHaveLength(5);
      log.append(call(5));
      log.flush();
      expect(lines()).toHaveLength(6);
      log.append(call(6));
      log.close(); // close flushes too
      expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 7, writers: 1 });
      expect(lines().map((line) => (JSON.parse(line) as { ms: number }).ms)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    });

    it('records what the caller had when it appended, not what it changed later', async () => {
      const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
      const event = call(0);
      log.append(event);
      event.outcome = 'denied';
      log.close();
      expect(JSON.parse(lines()[0] ?? '')).toMatchObject({ outcome: 'ok' });
    });

    it("splits one turn's records across rotated files at the size limit", async () => {
      const log = await openAuditLog({
        file,
        onFailure: 'block',
        writes: 'per-tick',
        maxBytes: 1500,
        maxFiles: 50,
      });
      for (let i = 0; i < 30; i++) log.append(call(i));
      await nextTurn();
      log.close();
      const files = readdirSync(dir).filter((f) => f.startsWith('audit.jsonl'));
      expect(files.length).toBeGreaterThan(2);
      for (const f of files) expect(readFileSync(path.join(dir, f)).length).toBeLessThanOrEqual(1500);
      expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 30, fromGenesis: true });
    });

    it('a failed write loses the queued records, never throws, and the gap is recorded later', async () => {
      const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
      log.append(call(0));
      log.flush();
      unlinkSync(file);
      mkdirSync(file); // the next write finds a folder: EISDIR
      log.append(call(1));
      log.append(call(2));
      expect(() => log.flush()).not.toThrow();
      expect(log.healthy).toBe(false);
      expect(log.lost).toBe(2);
      rmSync(file, { recursive: true });
      log.append(call(3));
      log.close();
      expect(log.healthy).toBe(true);
      const records = lines().map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(records.map((r) => r.type)).toEqual(['audit_gap', 'call']);
      expect(records[0]).toMatchObject({ lost: 2 });
    });
  });

  describe('rejects tampering, naming the first bad record', () => {
    it('an edited record (hash mismatch)', async () => {
      await writeCalls(10);
      const content = lines();
      content[4] = (content[4] ?? '').replace('"outcome":"ok"', '"outcome":"denied"');
      writeLines(content);
      expect(verifyAuditFiles(file)).toEqual({
        ok: false,
        file,
        line: 5,
        seq: 4,
        problem: 'hash mismatch: the record was changed after it was written',
      });
    });

    it('an edited record with its hash recomputed (the next record no longer links)', async () => {
      await writeCalls(10);
      const content = lines();
      const { hash: _hash, ...record } = JSON.parse(content[4] ?? '') as Record<string, unknown>;
      record.outcome = 'denied';
      content[4] = sealRecord(JSON.stringify(record)).line.trimEnd();
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        line: 6,
        seq: 5,
        problem: expect.stringMatching(/^prev is not the hash/),
      });
    });

    it('a record reformatted without changing its data (the bytes are hashed)', async () => {
      await writeCalls(3);
      const content = lines();
      content[1] = (content[1] ?? '').replace('"outcome":"ok"', '"outcome": "ok"');
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        line: 2,
        problem: 'hash mismatch: the record was changed after it was written',
      });
    });

    it('a record rewritten with its members reordered', async () => {
      await writeCalls(3);
      const content = lines();
      const { hash, ...rest } = JSON.parse(content[1] ?? '') as Record<string, unknown>;
      content[1] = JSON.stringify({ hash, ...rest });
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        line: 2,
        problem: 'the record does not end with its "hash" member: it was rewritten',
      });
    });

    it('a deleted record', async () => {
      await writeCalls(10);
      const content = lines();
      content.splice(3, 1);
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        line: 4,
        seq: 4,
        problem: expect.stringMatching(/seq 4 follows seq 2 .*: 1 record of this writer is missing/),
      });
    });

    it('swapped records', async () => {
      await writeCalls(10);
      const content = lines();
      [content[6], content[7]] = [content[7] ?? '', content[6] ?? ''];
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({ ok: false, line: 7, seq: 7 });
    });

    it('a repeated record', async () => {
      await writeCalls(5);
      const content = lines();
      content.splice(3, 0, content[2] ?? '');
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        line: 4,
        seq: 2,
        problem: expect.stringMatching(/out of order or repeated/),
      });
    });

    it('a truncated last line: a warning, since nothing after it exists to hide', async () => {
      await writeCalls(5);
      const text = readFileSync(file, 'utf8');
      writeFileSync(file, text.slice(0, -40));
      const result = verifyAuditFiles(file);
      expect(result).toMatchObject({ ok: true, records: 4 });
      expect(result.ok && result.warnings).toEqual([
        expect.stringMatching(
          new RegExp(`^${escape(file)}:5: the last record was cut short and nothing was written after it`),
        ),
      ]);
    });

    it('a garbled line in the middle', async () => {
      await writeCalls(5);
      const content = lines();
      content[1] = (content[1] ?? '').slice(0, 50);
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        line: 2,
        seq: null,
        problem: expect.stringMatching(/not valid JSON/),
      });
    });

    it('an emptied line (the record it held is missing from the chain)', async () => {
      await writeCalls(3);
      const content = lines();
      content[1] = '';
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({ ok: false, line: 3, seq: 2 });
    });

    it('skips empty lines', async () => {
      await writeCalls(3);
      const content = lines();
      content.splice(1, 0, '');
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 3 });
    });

    it('the first record cut: verifies but says the chain does not start at genesis', async () => {
      await writeCalls(5);
      writeLines(lines().slice(1));
      expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 4, fromGenesis: false, firstSeq: 1 });
    });
  });

  describe('rotation', () => {
    it('rotates by size and keeps one chain across files', async () => {
      await writeCalls(40, { maxBytes: 2000, maxFiles: 50 });
      const names = readdirSync(dir).sort();
      expect(names.length).toBeGreaterThan(3);
      expect(names).not.toContain('audit.jsonl.lock');
      const result = verifyAuditFiles(file);
      expect(result).toMatchObject({ ok: true, records: 40, writers: 1, fromGenesis: true });
      if (!result.ok) return;
      expect(result.files[0]).toBe(`${file}.${names.length - 1}`);
      expect(result.files.at(-1)).toBe(file);
      // Every file stays within the limit (each record is well under it).
      for (const name of result.files) expect(readFileSync(name).length).toBeLessThanOrEqual(2000);
      // The first record of the newest file links to the last of the one before.
      const last = JSON.parse(lines(`${file}.1`).at(-1) ?? '') as Record<string, unknown>;
      const first = JSON.parse(lines(file)[0] ?? '') as Record<string, unknown>;
      expect(first.prev).toBe(last.hash);
      expect(first.seq).toBe(Number(last.seq) + 1);
    });

    it('continues the chain from the rotated file when the current one is empty', async () => {
      await writeCalls(10, { maxBytes: 2000, maxFiles: 50 });
      rmSync(file);
      await writeCalls(1, { maxBytes: 2000, maxFiles: 50 });
      const last = JSON.parse(lines(`${file}.1`).at(-1) ?? '') as Record<string, unknown>;
      const first = JSON.parse(lines(file)[0] ?? '') as Record<string, unknown>;
      expect(first).toMatchObject({ prev: last.hash, seq: Number(last.seq) + 1 });
      expect(verifyAuditFiles(file)).toMatchObject({ ok: true, writers: 2 });
    });

    it('drops files beyond maxFiles; the rest verifies from where it starts', async () => {
      await writeCalls(60, { maxBytes: 2000, maxFiles: 3 });
      expect(readdirSync(dir).sort()).toEqual([
        'audit.jsonl',
        'audit.jsonl.1',
        'audit.jsonl.2',
        'audit.jsonl.3',
      ]);
      const result = verifyAuditFiles(file);
      expect(result).toMatchObject({ ok: true, fromGenesis: false, unanchored: 1 });
      if (result.ok) expect(result.firstSeq).toBeGreaterThan(0);
    });

    it('accepts a gateway that was idle while its earlier records rotated away', async () => {
      const idle = await openAuditLog({ file, onFailure: 'block', maxBytes: 2000, maxFiles: 2 });
      const busy = await openAuditLog({ file, onFailure: 'block', maxBytes: 2000, maxFiles: 2 });
      idle.append(call(0));
      for (let i = 0; i < 30; i++) busy.append(call(i));
      idle.append(call(1));
      idle.close();
      busy.close();
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: true,
        writers: 2,
        fromGenesis: false,
        unanchored: 2,
      });
    });

    it('is strict about unknown links in a log that starts at genesis', async () => {
      await writeCalls(3);
      await writeCalls(3);
      const content = lines();
      content.splice(2, 1); // the record the second gateway's chain started from
      writeLines(content);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        line: 3,
        seq: 3,
        problem: expect.stringMatching(/prev links to no earlier record/),
      });
    });

    it('names the rotated file with the bad record', async () => {
      await writeCalls(40, { maxBytes: 2000, maxFiles: 50 });
      const target = `${file}.2`;
      const content = lines(target);
      content.splice(1, 1);
      writeLines(content, target);
      expect(verifyAuditFiles(file)).toMatchObject({ ok: false, file: target, line: 2 });
    });

    it('reports a rotated file removed from the middle', async () => {
      await writeCalls(40, { maxBytes: 2000, maxFiles: 50 });
      unlinkSync(`${file}.2`);
      expect(verifyAuditFiles(file)).toMatchObject({
        ok: false,
        file: `${file}.2`,
        line: 0,
        problem: expect.stringMatching(/missing/),
      });
    });

    it('checks an explicit list of files in the order given', async () => {
      await writeCalls(20, { maxBytes: 2000, maxFiles: 50 });
      expect(verifyAuditFiles([`${file}.1`, file])).toMatchObject({ ok: true });
      // Newest first is wrong: the newest file's records link to ones not yet read.
      expect(verifyAuditFiles([file, `${file}.1`])).toMatchObject({ ok: false, file: `${file}.1` });
    });

    it('formats results for the command line', async () => {
      await writeCalls(3);
      const intact = verifyAuditFiles(file);
      expect(formatVerifyResult(intact)).toMatch(
        /^ok: 3 records from 1 writer in 1 file; the chain is complete from its first record; last hash [0-9a-f]{64}$/,
      );
      const content = lines();
      content.splice(1, 1);
      writeLines(content);
      expect(formatVerifyResult(verifyAuditFiles(file))).toBe(
        `${file}:2: seq 2: seq 2 follows seq 0 of writer ${String((JSON.parse(content[0] ?? '') as { writer: string }).writer)}: 1 record of this writer is missing`,
      );
      writeLines(lines().slice(1));
      expect(formatVerifyResult(verifyAuditFiles(file))).toMatch(
        /the chain starts at seq 2: earlier records were rotated away or removed/,
      );
    });

    it('reports a missing log', () => {
      expect(verifyAuditFiles(file)).toEqual({
        ok: false,
        file,
        line: 0,
        seq: null,
        problem: 'no such file',
      });
    });
  });
});

describe('LineBatch', () => {
  it('hashes each line from where it lies, before and after the buffer grows and is replaced', () => {
    const batch = new LineBatch();
    const opens = [
      '{"a":"é"',
      `{"big":"${'x'.repeat(70 * 1024)}"`,
      '{"b":1',
      `{"huge":"${'ü'.repeat(600 * 1024)}"`,
    ];
    for (const open of opens) expect(batch.sealOpen(open)).toBe(sha256Hex(open));
    expect(batch.text()).toBe(opens.map((open) => `${open}${sealSuffix(sha256Hex(open))}`).join(''));
    // Past the size kept between writes, the buffer is replaced by a small one.
    batch.clear();
    expect(batch.sealOpen('{"c":2')).toBe(sha256Hex('{"c":2'));
    expect(batch.text()).toBe(`{"c":2${sealSuffix(sha256Hex('{"c":2'))}`);
  });
});
