/**
 * `onFailure: block` end to end in the writer and the stage: a call goes on only once its
 * write-ahead record is in the file, the log recovers by itself once the disk is writable again,
 * and a write cut short by a full disk leaves a log that verifies (as a crash gap).
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditWriteError, openAuditLog, type AuditStatus } from '../../src/features/audit/auditWriter.js';
import { createAuditStage } from '../../src/features/audit/stage.js';
import { formatSummary, summarizeAudit } from '../../src/features/audit/summary.js';
import { verifyAuditFiles } from '../../src/features/audit/verify.js';
import type { CallEvent, GatewayStartEvent } from '../../src/core/events.js';
import type { AuditConfig } from '../../src/config/types.js';
import type { Logger } from '../../src/core/logger.js';
import type { RoutedMessage } from '../../src/core/pipeline/types.js';
import { Outcome } from '../../src/core/rpc/outcome.js';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'warden-ahead-'));
  file = path.join(dir, 'audit.jsonl');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const start: GatewayStartEvent = { type: 'gateway_start', session: 's', version: '0.1.0', pid: 1 };

function records(): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { torn: line.length };
      }
    });
}

interface StatusWaiter {
  readonly statuses: AuditStatus[];
  /** For `onStatus`. */
  push(status: AuditStatus): void;
  /** Resolves with the next status of `kind`, failing after `ms` (a deadline, not a sleep). */
  next(kind: AuditStatus['kind'], ms?: number): Promise<AuditStatus>;
}

function statusWaiter(): StatusWaiter {
  const statuses: AuditStatus[] = [];
  let waiters: { kind: string; resolve: (s: AuditStatus) => void }[] = [];
  return {
    statuses,
    push(status) {
      statuses.push(status);
      const ready = waiters.filter((w) => w.kind === status.kind);
      waiters = waiters.filter((w) => w.kind !== status.kind);
      for (const w of ready) w.resolve(status);
    },
    next(kind, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "${kind}" status within ${ms} ms`)), ms);
        waiters.push({
          kind,
          resolve: (s) => {
            clearTimeout(timer);
            resolve(s);
          },
        });
      });
    },
  };
}

describe('writeAhead', () => {
  it('per-tick: resolves once the record is in the file, several in one turn sharing one write', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
    const a = log.writeAhead(start);
    const b = log.writeAhead(start);
    expect(existsSync(file) ? readFileSync(file, 'utf8') : '').toBe(''); // queued, not written yet
    await Promise.all([a, b]);
    expect(records().map((r) => r.type)).toEqual(['gateway_start', 'gateway_start']);
    log.close();
  });

  it.skipIf(!existsSync('/dev/full'))(
    'rejects with AuditWriteError when the record is not written, in both modes',
    async () => {
      for (const onFailure of ['block', 'continue'] as const) {
        const log = await openAuditLog({ file: '/dev/full', onFailure, writes: 'per-tick' });
        await expect(log.writeAhead(start)).rejects.toBeInstanceOf(AuditWriteError);
        expect(log.lost).toBe(1);
        log.close();
      }
    },
  );

  it('rejects after close', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
    log.close();
    await expect(log.writeAhead(start)).rejects.toMatchObject({ reason: 'CLOSED' });
  });
});

describe.skipIf(!existsSync('/dev/full'))('recovery without any further record', () => {
  // The audit path is a symlink to /dev/full (ENOSPC on every write); "the disk has room again"
  // is the symlink replaced by a regular file, which the writer opens on its next attempt.
  it.each(['block', 'continue'] as const)(
    '%s: recovers on its own and records what was lost',
    async (onFailure) => {
      symlinkSync('/dev/full', file);
      const status = statusWaiter();
      const log = await openAuditLog({
        file,
        onFailure,
        writes: 'per-tick',
        onStatus: (s) => status.push(s),
      });
      log.append(start);
      log.append(start);
      log.flush();
      expect(log.healthy).toBe(false);
      expect(log.lost).toBe(2);
      expect(log.lastError?.reason).toBe('ENOSPC');
      unlinkSync(file);
      writeFileSync(file, '');
      // Nothing is appended from here on: only the writer's own retry timer can notice.
      expect(await status.next('recovered')).toEqual({ kind: 'recovered', lost: 2 });
      expect(log.healthy).toBe(true);
      expect(records()).toEqual([
        expect.objectContaining({ type: 'audit_gap', lost: 2, error: expect.stringMatching(/ENOSPC/) }),
      ]);
      log.close();
      expect(verifyAuditFiles(file)).toMatchObject({ ok: true, records: 1 });
    },
  );
});

const config: AuditConfig = {
  file: 'audit.jsonl',
  onFailure: 'block',
  logResults: false,
} as unknown as AuditConfig;
const logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} } as unknown as Logger;

function toolCall(text: string): RoutedMessage {
  return {
    kind: 'tools/call',
    direction: 'upstream',
    exposedName: 'up__echo',
    server: 'up',
    target: 'echo',
    arguments: { text },
    record: {},
  } as unknown as RoutedMessage;
}

describe('the audit stage in block mode', () => {
  it('writes call_start before the call goes on, and the call record with the same number after', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
    const stage = createAuditStage({
      log,
      config: { ...config, onFailure: 'block' },
      session: 'S',
      client: () => undefined,
      logger,
    });
    const seenAtForward: unknown[][] = [];
    const next = async (): Promise<never> => {
      seenAtForward.push(records().map((r) => r.type));
      return Outcome.of({ content: [{ type: 'text', text: 'ok' }] }) as never;
    };
    await stage(toolCall('one'), next);
    await stage(toolCall('two'), next);
    log.flush();
    expect(seenAtForward).toEqual([['call_start'], ['call_start', 'call', 'call_start']]);
    const written = records();
    expect(written).toMatchObject([
      { type: 'call_start', session: 'S', call: 1, tool: 'up__echo', args: { text: 'one' } },
      { type: 'call', call: 1, outcome: 'ok' },
      { type: 'call_start', call: 2, args: { text: 'two' } },
      { type: 'call', call: 2 },
    ]);
    log.close();
    const summary = summarizeAudit(file);
    expect(summary.total.calls).toBe(2);
    expect(summary.unfinished).toBe(0);
  });

  it('names the method in call_start for any request but a tool call, where the line has none', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
    const stage = createAuditStage({ log, config, session: 'S', client: () => undefined, logger });
    const next = async (): Promise<never> => Outcome.of({ messages: [] }) as never;
    await stage(toolCall('one'), next);
    const prompt = { ...toolCall('two'), kind: 'prompts/get', exposedName: 'up__greet', target: 'greet' };
    await stage({ ...prompt, record: { repairs: [] } } as RoutedMessage, next);
    log.close();
    const lines = readFileSync(file, 'utf8').split('\n');
    const starts = lines.filter((line) => line.includes('"type":"call_start"'));
    expect(starts).toHaveLength(2);
    expect(starts[0]).not.toContain('"method"');
    // In the documented order: after the call's number, before what it names.
    expect(starts[1]).toContain('"call":2,"method":"prompts/get","tool":"up__greet","server":"up"');
  });

  it.skipIf(!existsSync('/dev/full'))(
    'refuses the call when its call_start cannot be written: the upstream never sees it',
    async () => {
      symlinkSync('/dev/full', file);
      const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
      const stage = createAuditStage({ log, config, session: 'S', client: () => undefined, logger });
      let forwarded = 0;
      const next = async (): Promise<never> => {
        forwarded++;
        return Outcome.of({ content: [] }) as never;
      };
      await expect(stage(toolCall('x'), next)).rejects.toThrow(
        /Calls are refused: the audit log .* cannot be written \(ENOSPC/,
      );
      expect(forwarded).toBe(0);
      // Writable again: the very next call goes through, after the gap record.
      unlinkSync(file);
      writeFileSync(file, '');
      await stage(toolCall('y'), next);
      expect(forwarded).toBe(1);
      log.close();
      expect(records().map((r) => r.type)).toEqual(['audit_gap', 'call_start', 'call']);
    },
  );

  it('summary reports a call that started and never ended (the gateway stopped during it)', async () => {
    const log = await openAuditLog({ file, onFailure: 'block', writes: 'per-tick' });
    const stage = createAuditStage({ log, config, session: 'S', client: () => undefined, logger });
    await stage(toolCall('finished'), async () => Outcome.of({ content: [] }) as never);
    // The second call is forwarded and never answers: its call_start is all the log will hold.
    void stage(toolCall('running'), () => new Promise<never>(() => {}));
    await new Promise((resolve) => setImmediate(resolve));
    log.close();
    const summary = summarizeAudit(file);
    expect(summary).toMatchObject({ unfinished: 1, total: { calls: 1 } });
    expect(summary.events).not.toHaveProperty('call_start');
    expect(formatSummary(summary)).toContain(
      '1 call(s) started and never recorded as ended (the gateway stopped during them)',
    );
  });

  it('continue mode writes no call_start and numbers nothing', async () => {
    const log = await openAuditLog({ file, onFailure: 'continue', writes: 'per-tick' });
    const stage = createAuditStage({
      log,
      config: { ...config, onFailure: 'continue' },
      session: 'S',
      client: () => undefined,
      logger,
    });
    await stage(toolCall('one'), async () => Outcome.of({ content: [] }) as never);
    log.close();
    const written = records();
    expect(written.map((r) => r.type)).toEqual(['call']);
    expect(written[0]).not.toHaveProperty('call');
  });
});

/** A 64 KiB tmpfs: a real full disk with real short writes. Needs root (mount). */
function smallDisk(): string | undefined {
  if (process.getuid?.() !== 0 || process.platform !== 'linux') return undefined;
  const mount = path.join(dir, 'disk');
  mkdirSync(mount);
  const done = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mount]);
  return done.status === 0 ? mount : undefined;
}

describe('a real full disk (tmpfs, root only)', () => {
  let mount: string | undefined;
  afterEach(() => {
    if (mount !== undefined) spawnSync('umount', [mount]);
  });

  it('a record cut by the full disk, then room again: the whole records before it stay in the chain, and verify reports a crash gap', async (context) => {
    mount = smallDisk();
    if (mount === undefined) return context.skip();
    file = path.join(mount, 'audit.jsonl');
    const status = statusWaiter();
    const log = await openAuditLog({
      file,
      onFailure: 'continue',
      writes: 'per-tick',
      onStatus: (s) => status.push(s),
    });
    const big = (n: number): CallEvent => ({
      type: 'call',
      session: 'S',
      tool: 't',
      server: 's',
      upstreamTool: 't',
      args: { n, data: 'x'.repeat(20_000) },
      decision: { effect: 'allow', rule: null },
      outcome: 'ok',
      ms: 1,
      repairs: [],
    });
    // One turn, one write(2) of five 20 KB records into 64 KiB: three go in whole, one is cut.
    for (let n = 0; n < 5; n++) log.append(big(n));
    log.flush();
    expect(log.healthy).toBe(false);
    expect(log.lost).toBe(2);
    // Room again: the filesystem grows. Nothing is appended: the retry timer notices.
    expect(spawnSync('mount', ['-o', 'remount,size=256k', mount]).status).toBe(0);
    expect(await status.next('recovered')).toEqual({ kind: 'recovered', lost: 2 });
    log.append(big(5));
    log.close();
    const written = records();
    expect(written.map((r) => r.type ?? 'torn')).toEqual([
      'call',
      'call',
      'call',
      'torn',
      'audit_gap',
      'call',
    ]);
    expect(written[4]).toMatchObject({ torn: true, lost: 2, seq: 3 });
    const result = verifyAuditFiles(file);
    expect(result).toMatchObject({
      ok: true,
      records: 5,
      warnings: [expect.stringMatching(/:4: crash gap/)],
    });
  });
});
