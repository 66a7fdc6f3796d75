import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditWriteError, openAuditLog, type AuditStatus } from '../../src/features/audit/auditWriter.js';
import type { GatewayStartEvent } from '../../src/core/events.js';
import { verifyAuditFiles } from '../../src/features/audit/verify.js';
import { WardenError } from '../../src/core/errors.js';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'warden-audit-fail-'));
  file = path.join(dir, 'audit.jsonl');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const start: GatewayStartEvent = { type: 'gateway_start', session: 's', version: '0.1.0', pid: 1 };

function records(target = file): Record<string, unknown>[] {
  return readFileSync(target, 'utf8')
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('audit writer when the file cannot be written', () => {
  it('continue: never throws, goes unhealthy, then recovers and records the gap', async () => {
    mkdirSync(file); // EISDIR, whoever runs the test (root ignores permission bits)
    const statuses: AuditStatus[] = [];
    const log = await openAuditLog({ file, onFailure: 'continue', onStatus: (s) => statuses.push(s) });
    expect(log.healthy).toBe(false);
    expect(log.lastError).toBeInstanceOf(AuditWriteError);
    expect(log.lastError?.reason).toBe('EISDIR');
    expect(log.lastError?.message).toMatch(/cannot be written .*EISDIR.*calls continue unaudited/);
    expect(() => log.append(start)).not.toThrow();
    expect(() => log.append(start)).not.toThrow();
    expect(log.lost).toBe(2);
    expect(statuses.map((s) => s.kind)).toEqual(['failed']);

    rmSync(file, { recursive: true });
    log.append(start);
    log.close();
    expect(log.healthy).toBe(true);
    expect(log.lost).toBe(0);
    expect(statuses.map((s) => s.kind)).toEqual(['failed', 'recovered']);
    expect(statuses[1]).toEqual({ kind: 'recovered', lost: 2 });
    const written = records();
    expect(written.map((r) => r.type)).toEqual(['audit_gap', 'gateway_start']);
    expect(written[0]).toMatchObject({ lost: 2, error: expect.stringMatching(/EISDIR/) });
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 2 });
  });

  it('block: append throws a typed error the pipeline can turn into a denial', async () => {
    mkdirSync(file);
    const log = await openAuditLog({ file, onFailure: 'block' });
    expect(log.healthy).toBe(false);
    let thrown: unknown;
    try {
      log.append(start);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AuditWriteError);
    expect(thrown).toBeInstanceOf(WardenError);
    expect(thrown).toMatchObject({ code: 'DENIED', expose: true, reason: 'EISDIR', file });
    expect((thrown as Error).message).toMatch(
      /^Calls are refused: the audit log ".*" cannot be written \(EISDIR.*"block"\.$/,
    );

    rmSync(file, { recursive: true });
    expect(() => log.append(start)).not.toThrow();
    log.close();
    expect(records().map((r) => r.type)).toEqual(['audit_gap', 'gateway_start']);
  });

  it.skipIf(!existsSync('/dev/full'))('reports a full disk (ENOSPC) in both modes', async () => {
    const tolerant = await openAuditLog({ file: '/dev/full', onFailure: 'continue' });
    expect(tolerant.healthy).toBe(true); // opening works; writing does not
    expect(() => tolerant.append(start)).not.toThrow();
    expect(tolerant.healthy).toBe(false);
    expect(tolerant.lastError?.reason).toBe('ENOSPC');
    tolerant.close();

    const strict = await openAuditLog({ file: '/dev/full', onFailure: 'block' });
    expect(() => strict.append(start)).toThrow(AuditWriteError);
    strict.close();
  });

  it('reports a folder that cannot be created (ENOTDIR)', async () => {
    writeFileSync(path.join(dir, 'plain'), 'x');
    const log = await openAuditLog({ file: path.join(dir, 'plain', 'audit.jsonl'), onFailure: 'continue' });
    expect(log.healthy).toBe(false);
    expect(log.lastError?.reason).toBe('ENOTDIR');
  });

  it('creates a missing folder, and the file with mode 0600', async () => {
    const nested = path.join(dir, 'a', 'b', 'audit.jsonl');
    const log = await openAuditLog({ file: nested, onFailure: 'block', fsync: true });
    log.append(start);
    log.close();
    expect(records(nested)).toHaveLength(1);
    if (process.platform !== 'win32') expect(statSync(nested).mode & 0o777).toBe(0o600);
  });

  it('fails appends after close as configured', async () => {
    const tolerant = await openAuditLog({ file, onFailure: 'continue' });
    tolerant.close();
    tolerant.close();
    expect(() => tolerant.append(start)).not.toThrow();
    expect(tolerant.lastError?.reason).toBe('CLOSED');
    const strict = await openAuditLog({ file, onFailure: 'block' });
    strict.close();
    expect(() => strict.append(start)).toThrow(/closed/);
  });

  it('a throwing status listener does not escape append', async () => {
    mkdirSync(file);
    const log = await openAuditLog({
      file,
      onFailure: 'continue',
      onStatus: () => {
        throw new Error('listener bug');
      },
    });
    expect(() => log.append(start)).not.toThrow();
  });

  it('starts on a new line after a torn write, with a recovery record that verify accepts as a crash gap', async () => {
    writeFileSync(file, '{"seq":0,"ts":"cut');
    const log = await openAuditLog({ file, onFailure: 'block' });
    log.append(start);
    log.close();
    const content = readFileSync(file, 'utf8').split('\n');
    expect(content[0]).toBe('{"seq":0,"ts":"cut');
    expect(JSON.parse(content[1] ?? '')).toMatchObject({ type: 'audit_gap', seq: 0, torn: true, lost: 1 });
    expect(JSON.parse(content[2] ?? '')).toMatchObject({ type: 'gateway_start', seq: 1 });
    expect(verifyAuditFiles(file)).toMatchObject({
      ok: true,
      warnings: [expect.stringMatching(/:1: crash gap/)],
    });
  });

  it('rejects invalid options', async () => {
    await expect(openAuditLog({ file, onFailure: 'block', maxFiles: 0 })).rejects.toThrow(/maxFiles/);
    await expect(openAuditLog({ file, onFailure: 'block', maxBytes: -1 })).rejects.toThrow(/maxBytes/);
    await expect(openAuditLog({ file, onFailure: 'sometimes' as 'block' })).rejects.toThrow(/onFailure/);
  });
});

describe('rotation problems', () => {
  it('keeps appending to the current file when rotation fails', async () => {
    mkdirSync(`${file}.1`); // renaming the file onto a folder fails
    writeFileSync(path.join(`${file}.1`, 'keep'), 'x');
    const statuses: AuditStatus[] = [];
    const log = await openAuditLog({
      file,
      onFailure: 'block',
      maxBytes: 300,
      maxFiles: 1,
      onStatus: (s) => statuses.push(s),
    });
    for (let i = 0; i < 3; i++) log.append(start);
    log.close();
    expect(records()).toHaveLength(3);
    expect(log.healthy).toBe(true);
    expect(statuses.map((s) => s.kind)).toContain('rotate_failed');
  });

  it('skips rotating while another writer holds the lock, and takes over a stale lock', async () => {
    const lock = `${file}.lock`;
    writeFileSync(lock, '');
    const log = await openAuditLog({ file, onFailure: 'block', maxBytes: 300, maxFiles: 5 });
    for (let i = 0; i < 3; i++) log.append(start);
    expect(readdirSync(dir).sort()).toEqual(['audit.jsonl', 'audit.jsonl.lock']);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    log.append(start);
    log.close();
    expect(readdirSync(dir).sort()).toEqual(['audit.jsonl', 'audit.jsonl.1']);
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 4 });
  });

  it('follows the file when another process rotated it', async () => {
    const a = await openAuditLog({ file, onFailure: 'block', maxBytes: 600, maxFiles: 10 });
    const b = await openAuditLog({ file, onFailure: 'block', maxBytes: 600, maxFiles: 10 });
    for (let i = 0; i < 20; i++) (i % 3 === 0 ? b : a).append(start);
    a.close();
    b.close();
    const result = verifyAuditFiles(file);
    expect(result).toMatchObject({ ok: true, records: 20, writers: 2 });
    // Neither writer kept writing into a rotated file after noticing the rotation.
    expect(readFileSync(file).length).toBeLessThanOrEqual(600);
  });
});
