#!/usr/bin/env node
// How long the audit writer takes to notice that a full disk has room again, with nothing
// appended meanwhile (so only its own retry timer can notice). Needs root: the disk is a real
// 64 KiB tmpfs, filled by a file and freed by deleting it.
//
//   node bench/auditDiskFull.mjs [--dist DIR]
//
// For each time the disk stays full (0.1 s, 1 s, 3 s, 6 s), prints the time from freeing the
// space to the writer's `recovered` status, and whether the audit_gap record is in the file.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { values } = parseArgs({ options: { dist: { type: 'string' } } });
const dist = path.resolve(values.dist ?? path.join(ROOT, 'dist'));
const { openAuditLog } = await import(pathToFileURL(path.join(dist, 'features/audit/auditWriter.js')).href);

if (process.getuid?.() !== 0) {
  console.error('auditDiskFull: needs root (it mounts a small tmpfs)');
  process.exit(2);
}

// The writer's retry timer does not keep a process alive (a gateway has stdin for that): this does.
const keepAlive = setInterval(() => {}, 1000);

const event = { type: 'gateway_start', session: 'bench', version: '0', pid: process.pid };

for (const fullMs of [100, 1000, 3000, 6000]) {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-diskfull-'));
  const mount = path.join(dir, 'disk');
  mkdirSync(mount);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mount]).status !== 0) {
    console.error('auditDiskFull: mount failed');
    process.exit(1);
  }
  try {
    const filler = path.join(mount, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(64 * 1024));
    } catch {
      // Full: as intended.
    }
    let recovered;
    const done = new Promise((resolve) => (recovered = resolve));
    const log = await openAuditLog({
      file: path.join(mount, 'audit.jsonl'),
      onFailure: 'block',
      writes: 'per-tick',
      onStatus: (status) => status.kind === 'recovered' && recovered(performance.now()),
    });
    await log.writeAhead(event).catch(() => {});
    if (log.healthy) throw new Error('the disk was not full');
    await new Promise((resolve) => setTimeout(resolve, fullMs));
    rmSync(filler);
    const freed = performance.now();
    const at = await done;
    log.close();
    const gap = readFileSync(path.join(mount, 'audit.jsonl'), 'utf8').includes('"type":"audit_gap"');
    console.log(
      `disk full for ${String(fullMs).padStart(5)} ms: recovered ${(at - freed).toFixed(0).padStart(5)} ms after the space was freed; audit_gap record ${gap ? 'written' : 'MISSING'}`,
    );
  } finally {
    spawnSync('umount', [mount]);
    rmSync(dir, { recursive: true, force: true });
  }
}

clearInterval(keepAlive);
