import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditFiles } from '../../src/features/audit/verify.js';

/*
 * Several processes appending to one audit file at once. Separate processes (not two logs in
 * one thread, whose appends can never overlap) are what two gateways are; they need the writer
 * as JavaScript, so it is transpiled here rather than depending on a prior `npm run build`.
 */

const root = path.resolve(import.meta.dirname, '../..');
let work: string;
let writerModule: string;

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'warden-audit-mp-'));
  const sources = [
    'src/core/errors.ts',
    'src/core/events.ts',
    'src/lib/canonicalJson.ts',
    'src/lib/hash.ts',
    'src/lib/schema/safeRegExp.ts',
    ...readdirSync(path.join(root, 'src/features/audit'))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `src/features/audit/${name}`),
  ];
  for (const source of sources) {
    const { outputText } = ts.transpileModule(readFileSync(path.join(root, source), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    const target = path.join(work, 'lib', source.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  writeFileSync(path.join(work, 'lib', 'package.json'), '{"type":"module"}');
  writerModule = pathToFileURL(path.join(work, 'lib/src/features/audit/auditWriter.js')).href;
});

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

interface ChildOptions {
  file: string;
  records: number;
  /** Created by the parent once every child of the group has opened its log: the start signal. */
  go: string;
  maxBytes?: number;
  maxFiles?: number;
  exitRightAway?: boolean;
}

/**
 * A child process that opens the log, says so on stdout, waits for `go` to exist, then appends
 * `records` call records. `ready` resolves once it has opened the log.
 */
function runChild(
  id: number,
  options: ChildOptions,
): { ready: Promise<void>; exited: Promise<number | null> } {
  const script = `
    const { openAuditLog } = await import(${JSON.stringify(writerModule)});
    const o = ${JSON.stringify(options)};
    const { existsSync } = await import('node:fs');
    const log = await openAuditLog({ file: o.file, onFailure: 'block', maxBytes: o.maxBytes, maxFiles: o.maxFiles ?? 10000 });
    process.stdout.write('ready\\n');
    // Spin, not sleep: every child is running when the signal comes, however loaded the machine.
    while (!existsSync(o.go)) {}
    // Large, varied lines: the bigger a write, the likelier a torn or interleaved line would be.
    const padding = 'x'.repeat(1000 + ${id} * 700);
    for (let i = 0; i < o.records; i++) {
      log.append({ type: 'call', session: 'child-${id}', tool: 't${id}', server: 's', upstreamTool: 't',
        args: { i, padding }, decision: { effect: 'allow', rule: 'default' }, outcome: 'ok', ms: i, repairs: [] });
    }
    if (o.exitRightAway) process.exit(0);
    log.close();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`child ${id} exited (${String(code)}) before it was ready`)));
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve(code));
  });
  return { ready, exited };
}

/**
 * Runs children that start appending together: the start signal is given once all of them have
 * opened the log (a fixed start time is missed by a child that starts late on a busy machine,
 * and then the writers do not overlap at all). Resolves with their exit codes.
 */
async function runGroup(ids: number[], options: Omit<ChildOptions, 'go'>): Promise<(number | null)[]> {
  const go = path.join(work, `go-${randomUUID()}`);
  const children = ids.map((id) => runChild(id, { ...options, go }));
  await Promise.all(children.map((child) => child.ready));
  writeFileSync(go, '');
  return Promise.all(children.map((child) => child.exited));
}

function allLines(files: string[]): string[] {
  return files.flatMap((name) => readFileSync(name, 'utf8').split('\n').slice(0, -1));
}

describe('several processes appending to one audit file', () => {
  it('never interleave partial lines, and every chain verifies', async () => {
    const file = path.join(work, 'shared', 'audit.jsonl');
    const codes = await runGroup([0, 1, 2], { file, records: 400 });
    expect(codes).toEqual([0, 0, 0]);
    const lines = allLines([file]);
    expect(lines).toHaveLength(1200);
    for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    // The writers really did overlap (otherwise this test would prove nothing).
    const sessions = lines.map((line) => (JSON.parse(line) as { session: string }).session);
    const switches = sessions.filter((s, i) => i > 0 && s !== sessions[i - 1]).length;
    expect(switches).toBeGreaterThan(2);
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 1200, writers: 3 });
  });

  it('rotate without losing or shuffling records', async () => {
    const file = path.join(work, 'rotating', 'audit.jsonl');
    const codes = await runGroup([0, 1, 2], { file, records: 300, maxBytes: 64 * 1024 });
    expect(codes).toEqual([0, 0, 0]);
    const result = verifyAuditFiles(file);
    expect(result).toMatchObject({ ok: true, records: 900, writers: 3, fromGenesis: true });
    // ~1.8 MB in 64 KiB files: rotations were not skipped wholesale while another writer held the lock.
    if (result.ok) expect(result.files.length).toBeGreaterThan(10);
    expect(readdirSync(path.dirname(file))).not.toContain('audit.jsonl.lock');
  });

  it('drop old files without breaking what remains', async () => {
    const file = path.join(work, 'dropping', 'audit.jsonl');
    const codes = await runGroup([0, 1, 2], { file, records: 300, maxBytes: 64 * 1024, maxFiles: 4 });
    expect(codes).toEqual([0, 0, 0]);
    expect(readdirSync(path.dirname(file)).sort()).toEqual([
      'audit.jsonl',
      'audit.jsonl.1',
      'audit.jsonl.2',
      'audit.jsonl.3',
      'audit.jsonl.4',
    ]);
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, fromGenesis: false });
  });

  it('loses nothing when the process exits right after appending', async () => {
    const file = path.join(work, 'exit', 'audit.jsonl');
    const [code] = await runGroup([0], { file, records: 1000, exitRightAway: true });
    expect(code).toBe(0);
    expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 1000 });
  });
});
