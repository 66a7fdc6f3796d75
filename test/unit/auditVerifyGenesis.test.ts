/**
 * Where `audit verify --key` accepts a second chain from genesis: gateways started together on an
 * empty trail each find it empty and start one, and that is genuine; one that starts after a
 * checkpoint, or long after the trail's first record, came from another trail. The race is made
 * certain here with writers whose output remembers no last line, so each starts from genesis.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openAuditLog, type AuditLog } from '../../src/features/audit/auditWriter.js';
import {
  generateCheckpointKeys,
  keyIdOf,
  loadCheckpointSigner,
} from '../../src/features/audit/checkpoint.js';
import { createCheckpointCheck } from '../../src/features/audit/verifyCheckpoints.js';
import { verifyAuditFiles } from '../../src/features/audit/verify.js';
import { callEvent as call } from './auditEvents.js';
import type { AuditEvent } from '../../src/core/events.js';

let dir: string;
let file: string;
let keyFile: string;
let publicPem: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'warden-genesis-'));
  file = path.join(dir, 'audit.jsonl');
  const keys = generateCheckpointKeys();
  keyFile = path.join(dir, 'k.key');
  writeFileSync(keyFile, keys.privatePem, { mode: 0o600 });
  publicPem = keys.publicPem;
});

afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

/** A signing writer that appends to the shared file and, like a gateway that found it empty, starts from genesis. */
function writer(name: string): Promise<AuditLog> {
  return openAuditLog({
    file,
    onFailure: 'block',
    writer: name,
    checkpoints: { signer: loadCheckpointSigner(keyFile), intervalMs: 3_600_000 },
    output: { write: (lines) => appendFileSync(file, lines) },
  });
}

function verifyWithKey() {
  const key = createPublicKey(publicPem);
  return verifyAuditFiles(file, createCheckpointCheck({ key, keyId: keyIdOf(key) }));
}

const genesisChains = () =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .filter((line) => (JSON.parse(line) as { seq: number }).seq === 0).length;

describe('a second chain from genesis under audit verify --key', () => {
  it('passes for gateways that started on the empty trail together', async () => {
    const [one, two] = await Promise.all([writer('w-one'), writer('w-two')]);
    one.append(call(1));
    two.append(call(2));
    one.append(call(3));
    one.close();
    two.close();
    expect(genesisChains()).toBe(2);
    expect(verifyWithKey()).toMatchObject({ ok: true, writers: 2 });
  });

  it('fails for one that starts after a checkpoint, naming it and its line', async () => {
    const one = await writer('w-one');
    one.append(call(1));
    one.checkpoint();
    const two = await writer('w-two');
    two.append(call(2));
    one.close();
    two.close();
    expect(verifyWithKey()).toMatchObject({
      ok: false,
      file,
      line: 3,
      seq: 0,
      problem: expect.stringContaining(
        `a chain starts from genesis where no gateway could have started one: writer w-two from ${file}:3 (after a checkpoint)`,
      ) as unknown,
    });
  });

  it('fails for one that starts more than a minute after the trail began', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-11-30T01:00:00Z') });
    const one = await writer('w-one');
    one.append(call(1));
    vi.setSystemTime(Date.parse('2026-11-30T01:01:30Z'));
    const two = await writer('w-two');
    two.append(call(2));
    one.close();
    two.close();
    expect(verifyWithKey()).toMatchObject({
      ok: false,
      line: 2,
      problem: expect.stringContaining(
        `writer w-two from ${file}:2 (90 s from the trail's first record)`,
      ) as unknown,
    });
  });

  it("the limit with several writers: a gateway's records after its last checkpoint can be cut wherever they sit, and verify names its chain", async () => {
    const signing = { signer: loadCheckpointSigner(keyFile), intervalMs: 3_600_000 };
    const one = await openAuditLog({ file, onFailure: 'block', writer: 'w-one', checkpoints: signing });
    one.append({ type: 'gateway_start', version: '0.1.0', pid: 1, session: 's1' } as AuditEvent);
    one.append(call(1));
    one.checkpoint();
    const two = await openAuditLog({ file, onFailure: 'block', writer: 'w-two', checkpoints: signing });
    two.append(call(2));
    one.append(call(3));
    two.append(call(4));
    one.append({ type: 'gateway_stop', reason: 'test', uptimeMs: 1 } as AuditEvent);
    one.close();
    two.close();
    const intact = verifyWithKey();
    expect(intact).toMatchObject({ ok: true, writers: 2 });
    expect(intact.ok && intact.checkpoints?.summary).not.toContain('without the gateway stopping');
    // w-one's records after its first checkpoint removed from the middle of the file: its chain
    // ends there, as that of a gateway killed while idle would, and w-two goes on.
    const all = readFileSync(file, 'utf8').split('\n');
    const kept = all.filter(
      (line) =>
        line === '' || !(line.includes('"writer":"w-one"') && (JSON.parse(line) as { seq: number }).seq > 2),
    );
    expect(kept.length).toBe(all.length - 3);
    writeFileSync(file, kept.join('\n'));
    const cut = verifyWithKey();
    expect(cut).toMatchObject({ ok: true, writers: 2 });
    expect(cut.ok && cut.checkpoints?.summary).toContain(
      `1 gateway chain (writer w-one at ${file}:3) ends at a checkpoint without the gateway stopping: running, killed, ` +
        'or the records after that checkpoint were removed, which leaves no trace',
    );
  });
});
