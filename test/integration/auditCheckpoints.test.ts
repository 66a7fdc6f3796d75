/**
 * Signed checkpoints through the built binary: `audit keygen`, the gateway signing its chain at
 * an interval and when it stops, and `audit verify --key [--anchor]` telling an intact trail from
 * a tampered, truncated or re-signed one, each with its reason.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHash, createPrivateKey, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  FAST_GATEWAY,
  fixture,
  initialize,
  killRawSessions,
  rawSession,
  readAudit,
  runCli,
  tempDir,
  writeConfig,
} from './harness.js';
import { until } from './sinkHelpers.js';
import { echoCall, runCalls, trailLines } from './auditRuns.js';

afterEach(() => killRawSessions());

async function keygen(dir: string, name: string): Promise<{ key: string; pub: string }> {
  const out = path.join(dir, name);
  const made = await runCli(['audit', 'keygen', '--out', out]);
  expect(made.code, made.stderr).toBe(0);
  return { key: `${out}.key`, pub: `${out}.pub` };
}

function setup(key: string, interval = '5m') {
  const dir = path.dirname(key);
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: './audit.jsonl', checkpoints: { key, interval } },
      servers: { up: fixture() },
    },
    dir,
  );
  return { config, file: path.join(dir, 'audit.jsonl') };
}

/** One gateway run: `n` calls, then the host closes stdin. */
function run(config: string, n: number, from = 1): Promise<void> {
  return runCalls(
    config,
    Array.from({ length: n }, (_, i) => `call ${from + i}`),
    from,
  );
}

/** Re-seals a record line after its text was changed, as someone rewriting the trail would. */
function reseal(record: Record<string, unknown>): string {
  const { hash: _old, ...rest } = record;
  const open = JSON.stringify(rest).slice(0, -1);
  return `${open},"hash":"${createHash('sha256').update(open).digest('hex')}"}`;
}

describe('signed checkpoints', () => {
  it('keygen writes a key pair and never overwrites one', async () => {
    const dir = tempDir();
    const { key, pub } = await keygen(dir, 'k');
    expect(readFileSync(key, 'utf8')).toContain('BEGIN PRIVATE KEY');
    expect(readFileSync(pub, 'utf8')).toContain('BEGIN PUBLIC KEY');
    const again = await runCli(['audit', 'keygen', '--out', path.join(dir, 'k')]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('exists');
  });

  it('a checkpoint at shutdown and at the interval; the intact trail verifies, with and without an anchor', async () => {
    const dir = tempDir();
    const { key, pub } = await keygen(dir, 'k');
    const { config, file } = setup(key, '100ms');
    // A run long enough for an interval checkpoint: wait for it in the file, then stop.
    const s = rawSession(config);
    await initialize(s);
    const answered = s.next((m) => m.id === 1);
    s.send(echoCall(1, 'one'));
    await answered;
    await until('an interval checkpoint', () => readAudit(file).some((r) => r.type === 'checkpoint'));
    s.child.stdin.end();
    expect(await s.exited).toBe(0);
    const records = readAudit(file);
    const last = records.at(-1)!;
    expect(last.type).toBe('checkpoint');
    expect(records.at(-2)!.type).toBe('gateway_stop');
    expect(records.filter((r) => r.type === 'checkpoint').length).toBeGreaterThanOrEqual(2);
    for (const r of records) {
      expect(typeof r.host).toBe('string');
      expect(r.session).toBe(records[0]!.session);
    }
    const ok = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/checkpoints? signed by key [0-9a-f]{16}; every record up to the last one/);
    const anchored = await runCli([
      'audit',
      'verify',
      file,
      '--key',
      pub,
      '--anchor',
      trailLines(file).at(-1)!,
    ]);
    expect(anchored.code, anchored.stdout).toBe(0);
    expect(anchored.stdout).toContain('is in the trail, so nothing up to it was removed');
  });

  it('fails a tampered, a truncated and a re-signed trail, each with its reason', async () => {
    const dir = tempDir();
    const { key, pub } = await keygen(dir, 'k');
    const other = await keygen(dir, 'other');
    const { config, file } = setup(key);
    await run(config, 3);
    const intact = trailLines(file);

    // Tampered: one call's arguments changed in place.
    const tampered = intact.map((l) => l.replace('"call 2"', '"call 9"'));
    writeFileSync(file, tampered.join('\n') + '\n');
    let result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('hash mismatch');

    // Truncated: the end cut off (the stop record and the shutdown checkpoint).
    writeFileSync(file, intact.slice(0, -2).join('\n') + '\n');
    result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/no checkpoint signed by key|not covered by a signature/);

    // Re-signed with another key, every hash recomputed: the chain holds, the key does not.
    const otherKey = createPrivateKey(readFileSync(other.key, 'utf8'));
    const resigned = intact.map((l) => {
      const record = JSON.parse(l) as Record<string, unknown>;
      if (record.type !== 'checkpoint') return l;
      const message =
        'mcp-warden audit checkpoint v1\n' +
        `writer ${String(record.writer)}\nseq ${String(record.seq)}\nts ${String(record.ts)}\n` +
        `prev ${String(record.prev)}\nrecords ${String(record.records)}\n`;
      return reseal({ ...record, sig: sign(null, Buffer.from(message), otherKey).toString('base64') });
    });
    writeFileSync(file, resigned.join('\n') + '\n');
    result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('checkpoint signature does not match');

    // The other key's id written in too: named as another key.
    const otherId = (await runCli(['audit', 'keygen', '--out', path.join(dir, 'third')])).stdout;
    expect(otherId).toContain('key id');
    const renamed = resigned.map((l) => {
      const record = JSON.parse(l) as Record<string, unknown>;
      return record.type === 'checkpoint' ? reseal({ ...record, key: '0123456789abcdef' }) : l;
    });
    writeFileSync(file, renamed.join('\n') + '\n');
    result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('not by the given key');

    // The intact trail again: it verifies.
    writeFileSync(file, intact.join('\n') + '\n');
    result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code, result.stdout).toBe(0);
  });

  it('a trail cut back to an earlier checkpoint passes alone and is caught with the anchor', async () => {
    const dir = tempDir();
    const { key, pub } = await keygen(dir, 'k');
    const { config, file } = setup(key);
    await run(config, 2);
    const firstRun = trailLines(file);
    await run(config, 2, 10);
    const both = trailLines(file);
    const anchorFile = path.join(dir, 'anchor.json');
    // What the SIEM kept: the second run's shutdown checkpoint.
    writeFileSync(anchorFile, both.at(-1)! + '\n');
    expect(JSON.parse(both.at(-1)!).type).toBe('checkpoint');

    let result = await runCli(['audit', 'verify', file, '--key', pub, '--anchor', anchorFile]);
    expect(result.code, result.stdout).toBe(0);

    // Everything after the first run's checkpoint removed: a valid-looking, shorter trail.
    writeFileSync(file, firstRun.join('\n') + '\n');
    result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code, result.stdout).toBe(0);
    result = await runCli(['audit', 'verify', file, '--key', pub, '--anchor', anchorFile]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('is not in the trail: records were removed from its end');
  });

  it('fails a chain of an invented writer slipped in before the last checkpoint, naming it; records after a checkpoint are not yet anchored', async () => {
    const dir = tempDir();
    const { key, pub } = await keygen(dir, 'k');
    const { config, file } = setup(key);
    await run(config, 2);
    await run(config, 2, 10);
    const intact = trailLines(file);
    const genuine = intact.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(new Set(genuine.map((r) => r.writer)).size).toBe(2);

    // A writer nobody ran: its own chain from genesis, each record sealed like the gateway's.
    const template = genuine.find((r) => r.type === 'call')!;
    const forged: string[] = [];
    let prev = '0'.repeat(64);
    for (let seq = 0; seq < 3; seq++) {
      const { hash: _hash, ...fields } = template;
      const line = reseal({ ...fields, seq, writer: 'w-invented', prev, hash: '' });
      forged.push(line);
      prev = (JSON.parse(line) as { hash: string }).hash;
    }
    // Slipped in after the first run's checkpoint, before the second run's records.
    const at = genuine.findIndex((r) => r.type === 'checkpoint') + 1;
    expect(at).toBeLessThan(intact.length - 1);
    writeFileSync(file, [...intact.slice(0, at), ...forged, ...intact.slice(at)].join('\n') + '\n');
    // The chains alone hold: only the key can tell.
    const chainOnly = await runCli(['audit', 'verify', file]);
    expect(chainOnly.code, chainOnly.stdout).toBe(0);
    let result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toContain(
      `${file}:${at + 1}: seq 0: records of writer w-invented (3 records from ${file}:${at + 1})`,
    );
    expect(result.stdout).toContain('covered by no checkpoint signed with key');

    // The same chain at the end, after the last checkpoint: not yet anchored, not called forged.
    writeFileSync(file, [...intact, ...forged].join('\n') + '\n');
    result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toContain(
      `${file}:${intact.length + 1}: seq 0: not yet anchored: writer w-invented`,
    );
    expect(result.stdout).not.toContain('covered by no checkpoint');

    writeFileSync(file, intact.join('\n') + '\n');
    result = await runCli(['audit', 'verify', file, '--key', pub]);
    expect(result.code, result.stdout).toBe(0);
  });

  it('an unusable key stops the gateway with the reason', async () => {
    const dir = tempDir();
    const bad = path.join(dir, 'bad.key');
    writeFileSync(bad, 'not a key\n');
    const { config } = setup(bad);
    const s = rawSession(config);
    expect(await s.exited).toBe(2);
    expect(s.stderr()).toContain('is not a private key in PEM form');
  });
});
