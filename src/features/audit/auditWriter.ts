/*
 * The audit writer: records queued and written one write(2) per turn, each sealed into the
 * writer's hash chain. Its parts are in their own files: the file it appends to and rotates
 * (segmentFile.ts), the chain's sealing (lineBatch.ts), its health and retries
 * (writerHealth.ts), and signed checkpoints (checkpointer.ts).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chainHeadOf, recordJson, type ChainHead } from './chain.js';
import { Checkpointer } from './checkpointer.js';
import { IsoClock } from './isoClock.js';
import { LineBatch, sealLine, sessionMemberText, ShortWrite, writerMembersText } from './lineBatch.js';
import { RecordFields } from './recordFields.js';
import { SegmentFile } from './segmentFile.js';
import { codedError, type AuditWriteError } from './writeError.js';
import { WriterHealth, type AuditStatus } from './writerHealth.js';
import { GENESIS_HASH, type AuditEvent, type AuditGapEvent } from '../../core/events.js';
import type { Redactor } from './redact.js';
import type { CheckpointSigner } from './checkpoint.js';

export { AuditWriteError } from './writeError.js';
export type { AuditStatus } from './writerHealth.js';

/*
 * The audit trail is written here with plain synchronous file appends, not through the logger.
 *
 * Why not the logger: its file is a buffered stream, which loses what is buffered on `process.exit`,
 * and "flush before exit" must then be proven on every exit path
 * (stdin closed, SIGTERM, a crash). A record written with `writeSync` is in the kernel once
 * written: it survives any exit of the process (not a power cut; `fsync: true` covers that).
 * It also lets a failed write be seen at once, which `block` mode needs to refuse calls.
 *
 * When records are written (`writes`): `immediate` writes each record inside `append`.
 * `per-tick` (the gateway's) queues the records appended during one turn of the event loop
 * and writes them with one `write(2)` when the turn ends (`process.nextTick`) or when `flush()`
 * is called, whichever comes first. A record is then never more than one turn from the file,
 * and no exit path can lose it: every exit (stdin closed, a signal, a crash) goes through a
 * later turn or through `close()`, which flushes. The gateway flushes before each write to
 * the host, so a call's record is in the file before its answer leaves. Under load this is
 * the difference between one syscall per call and one per burst of calls (measured).
 *
 * Two gateways, one file. Each write is one `write(2)` of whole lines to a file opened with
 * O_APPEND. POSIX makes the seek-to-end and the write one atomic step, and Linux (ext4, xfs,
 * btrfs, tmpfs) serialises writes to one regular file, so lines from several processes never
 * interleave or overwrite each other. Assumed, not guaranteed: a local filesystem (NFS and
 * other network filesystems do not honour O_APPEND atomically) and a write that completes in
 * one call (a short write, e.g. a disk filling up, is detected and reported as a failure).
 *
 * Hash chains with several writers: one global chain would need "read the last line, then
 * append" to be atomic across processes, i.e. a lock held around every record. Node has no
 * flock(2); a lock file costs several syscalls per record and, worse, a gateway killed while
 * holding it stalls every other one (and denies all calls in `block` mode) until the lock is
 * judged stale. So each writer (one per `openAuditLog`, a random `writer` id) keeps its own
 * chain: a record's `prev` is the hash of the same writer's previous record. A writer's first
 * record links to the last record in the file when it starts (any writer's), or to
 * `GENESIS_HASH` in an empty log, and takes that record's `seq` + 1. With one gateway at a time
 * (the usual case) this is a single chain with `seq` 0, 1, 2, ... across restarts; with two at
 * once, the chains fork from a shared record and `verify` checks each (see verify.ts). Records
 * of different writers may appear in either order; their relative order is not a claim the
 * log makes.
 *
 * Rotation is the one step that needs mutual exclusion (two writers renaming at once would
 * shuffle files), and it is rare, so only it takes a lock file (`<file>.lock`, created with
 * O_EXCL); a writer that finds it taken skips rotating for that record. Before each record a
 * writer compares the inode of `file` with its open descriptor and reopens when another
 * writer (or logrotate) has moved the file, so records follow the name.
 */

/** What a gateway killed mid-write left at the end of the file, found when a writer starts. */
const TORN_ERROR =
  'a record was cut short: the previous writer stopped (killed, crashed or out of disk) while writing it';

export interface AuditLogOptions {
  /** The audit file. Its folder is created if missing; the file is created with mode 0600. */
  readonly file: string;
  /**
   * Rotate before a record would take the file beyond this many bytes: `file` becomes
   * `file.1`, `file.1` becomes `file.2`, ... A single larger record still goes into a fresh
   * file whole. Absent: never rotate.
   */
  readonly maxBytes?: number;
  /** Rotated files kept (`file.1` ... `file.<maxFiles>`); older ones are deleted. Default 5. */
  readonly maxFiles?: number;
  /**
   * When a record cannot be written: `block` makes `append` throw `AuditWriteError` (the caller
   * denies the call); `continue` drops the record, marks the log unhealthy and carries on.
   * Either way the log retries on the next record, and the first record written after a
   * failure is an `audit_gap` record counting the records lost.
   */
  readonly onFailure: 'block' | 'continue';
  /** fdatasync after every write: survives a power cut, costs ~20x per write. Default false. */
  readonly fsync?: boolean;
  /**
   * `immediate` (default): `append` writes the record before it returns. `per-tick`: records
   * are queued and written together at the end of the current turn of the event loop or at
   * `flush()`, whichever is first (see the top of auditWriter.ts).
   */
  readonly writes?: 'immediate' | 'per-tick';
  /**
   * Applied to every record before it is hashed: `args` and `structured` with the full rule
   * (keys and patterns), every other field with the pattern rule only. Absent: records are
   * written as given (callers must have redacted them).
   */
  readonly redactor?: Redactor;
  /** The `writer` id; default 12 random hex digits. Must be unique among the file's writers. */
  readonly writer?: string;
  /** Told when writing fails, works again, or rotation fails; for the caller's loud warning. */
  readonly onStatus?: (status: AuditStatus) => void;
  /** Told after each write of queued records, with how long it took (for telemetry's metric). */
  readonly onWrite?: (write: {
    readonly ms: number;
    readonly records: number;
    readonly failed: boolean;
  }) => void;
  /**
   * The machine, written as `host` in every record so a trail gathered from many machines says
   * where each call was made. Default: the OS hostname.
   */
  readonly host?: string;
  /**
   * The session the writer's own records (`audit_gap`, `checkpoint`) belong to; the caller's
   * records carry their own `session`. Absent: those records have none.
   */
  readonly session?: string;
  /**
   * Signed checkpoints: with a signer, the writer appends a `checkpoint` record every
   * `intervalMs` (when records were written since the last one) and when it closes.
   */
  readonly checkpoints?: { readonly signer: CheckpointSigner; readonly intervalMs: number };
  /**
   * Given the text of the whole record lines of each successful write, right after it (the audit
   * shippers copy them to the network sinks). Must not throw; called synchronously.
   */
  readonly onWritten?: (lines: string) => void;
  /**
   * Instead of the file: each write's whole lines go to `write`, which throws when nothing kept
   * them (a trail without a local file, kept by the audit sinks' spools). A throw is a failed
   * write like a full disk: records lost, an `audit_gap` next, `onFailure` applies. `file` then
   * only names the trail in messages, nothing is written there, and the chain goes on from
   * `lastLine`, the newest record kept before (a new chain when there is none).
   */
  readonly output?: { readonly write: (lines: string) => void; readonly lastLine?: string };
}

export interface AuditLog {
  /**
   * Writes one record durably (see the comment at the top of auditWriter.ts): before returning
   * (`writes: immediate`), or by the end of this turn of the event loop (`per-tick`).
   * `continue` mode: never throws. `block` mode: throws `AuditWriteError` when the record could
   * not be written (`immediate`) or the log is closed; with `per-tick`, a failed write is seen
   * at the flush, where it marks the log unhealthy and counts the records lost.
   */
  append(event: AuditEvent): void;
  /**
   * Appends a record that must be in the file before the caller goes on (a write-ahead record:
   * a call is forwarded only once its `call_start` is written). Resolves once the record was
   * written (and, with `fsync`, synced); rejects with `AuditWriteError` when it was not, in
   * either `onFailure` mode. With `per-tick`, the records appended during one turn still share
   * one write(2): the promise settles when that turn's write is done.
   */
  writeAhead(event: AuditEvent): Promise<void>;
  /** Writes every queued record now (`per-tick`); never throws. */
  flush(): void;
  /**
   * Appends a signed checkpoint now, when checkpoints are configured and records were written
   * since the last one; written like any record (at the end of the turn with `per-tick`).
   */
  checkpoint(): void;
  /** False from a failed write until the next successful one. */
  readonly healthy: boolean;
  /** The most recent failure (kept after recovery, for the record). */
  readonly lastError: AuditWriteError | undefined;
  /** Records dropped since the last successful write (counted in the next `audit_gap` record). */
  readonly lost: number;
  /** This log's `writer` id. */
  readonly writer: string;
  /** Absolute path of the current file. */
  readonly file: string;
  /** Closes the file (after an fdatasync). Later appends fail as configured. Idempotent. */
  close(): void;
  /**
   * Changes `onFailure` and `fsync` for the records written from now on (managed settings may
   * tighten them, or let them go back, while serving).
   */
  retune(settings: { readonly onFailure: 'block' | 'continue'; readonly fsync: boolean }): void;
}

/**
 * Opens (creating if needed) an audit log. Never rejects because the file cannot be written:
 * the log is then returned unhealthy, with `lastError` set and `onStatus` told, and behaves as
 * `onFailure` says. Rejects only for invalid options.
 */
export async function openAuditLog(options: AuditLogOptions): Promise<AuditLog> {
  const { maxBytes, maxFiles = 5 } = options;
  if (maxBytes !== undefined && (!Number.isSafeInteger(maxBytes) || maxBytes < 1)) {
    throw new TypeError(`Expected maxBytes to be a positive integer, got ${String(maxBytes)}`);
  }
  if (!Number.isSafeInteger(maxFiles) || maxFiles < 1) {
    throw new TypeError(`Expected maxFiles to be a positive integer, got ${String(maxFiles)}`);
  }
  if (options.onFailure !== 'block' && options.onFailure !== 'continue') {
    throw new TypeError(`Expected onFailure to be "block" or "continue", got ${String(options.onFailure)}`);
  }
  const file = path.resolve(options.file);
  try {
    if (options.output === undefined) await mkdir(path.dirname(file), { recursive: true });
  } catch {
    // Opening the file below fails too and reports it as a write failure.
  }
  const log = new FileAuditLog({ ...options, file, maxFiles });
  log.open();
  return log;
}

/** One write of the queue as it is assembled: the chain head so far and what the write did. */
interface WritePass {
  head: ChainHead;
  /** The lines in the batch not yet written. */
  lines: BatchLine[];
  /** Records of the caller's written so far. */
  written: number;
  /** Records lost earlier that a gap record written in this pass accounts for. */
  recoveredFrom: number;
  /** Waiters of the records written so far, settled once the whole write is known. */
  readonly done: Waiter[];
}

class FileAuditLog implements AuditLog {
  readonly file: string;
  readonly writer: string;
  #options: AuditLogOptions & { maxFiles: number };
  readonly #segment: SegmentFile;
  readonly #health: WriterHealth;
  readonly #checkpointer: Checkpointer | undefined;
  /** This writer's last record; undefined until the first append looks at the file. */
  #head: ChainHead | undefined;
  #closed = false;
  readonly #fields: RecordFields;
  /** `"host":...,"writer":...` : the writer's own members, written into every record. */
  readonly #writerMembers: string;
  /** Records appended and not yet written: their time and the JSON of their fields (members). */
  #queue: QueuedRecord[] = [];
  #flushScheduled = false;
  /**
   * The file ends with a line cut short (a torn write, ours or a killed predecessor's): the next
   * record written is an `audit_gap` with `torn: true`, the recovery `audit verify` looks for.
   */
  #tornBefore = false;
  /** `ts` of the cut record (or of the file's last change) when a predecessor's write was torn. */
  #tornSince: string | undefined;
  /** `"session":...` for the writer's own records, or empty. */
  readonly #sessionMember: string;
  readonly #clock = new IsoClock();
  /** The lines of the write being assembled (one buffer, reused from write to write). */
  readonly #batch = new LineBatch();

  constructor(options: AuditLogOptions & { file: string; maxFiles: number }) {
    this.#options = options;
    this.file = options.file;
    this.writer = options.writer ?? randomBytes(6).toString('hex');
    // A writer id given by the caller may hold any character: written as JSON, like any value.
    this.#writerMembers = writerMembersText(options.host ?? hostname(), this.writer);
    this.#fields = new RecordFields(options.redactor);
    this.#sessionMember = sessionMemberText(options.session);
    this.#health = new WriterHealth({
      file: this.file,
      onFailure: () => this.#options.onFailure,
      onStatus: options.onStatus,
      closeFile: () => this.#segment.close(),
      isClosed: () => this.#closed,
      retry: () => this.#writeQueue(),
    });
    this.#segment = new SegmentFile(this.file, () => this.#options, {
      rotateFailed: (error) => this.#health.rotateFailed(error),
      torn: () => {
        this.#tornBefore = true;
      },
    });
    const checkpoints = options.checkpoints;
    if (checkpoints !== undefined) {
      this.#checkpointer = new Checkpointer({
        ...checkpoints,
        writer: this.writer,
        sessionMember: this.#sessionMember,
        tick: () => this.checkpoint(),
      });
    }
  }

  retune(settings: { readonly onFailure: 'block' | 'continue'; readonly fsync: boolean }): void {
    this.#options = { ...this.#options, onFailure: settings.onFailure, fsync: settings.fsync };
  }

  checkpoint(): void {
    const checkpointer = this.#checkpointer;
    if (checkpointer === undefined || this.#closed) return;
    if (!checkpointer.wanted(this.#queue.some((record) => record.checkpoint !== true))) return;
    this.#queue.push({ ts: this.#now(), members: '', waiter: undefined, checkpoint: true });
    this.#scheduleWrite();
  }

  get healthy(): boolean {
    return this.#health.healthy;
  }

  get lastError(): AuditWriteError | undefined {
    return this.#health.lastError;
  }

  get lost(): number {
    return this.#health.lost;
  }

  /** First open, from `openAuditLog`: a failure is recorded, not thrown. */
  open(): void {
    if (this.#options.output !== undefined) return;
    try {
      this.#segment.ensure();
    } catch (error) {
      this.#health.markFailed(error);
    }
  }

  append(event: AuditEvent): void {
    const error = this.#enqueue(event, undefined);
    if (error !== undefined && this.#options.onFailure === 'block') throw error;
  }

  writeAhead(event: AuditEvent): Promise<void> {
    return new Promise((resolve, reject) => {
      const error = this.#enqueue(event, { resolve, reject });
      if (error !== undefined) reject(error);
    });
  }

  /**
   * Queues a record (written now with `immediate`, at the end of the turn with `per-tick`);
   * returns the failure of an immediate write or of a closed log. `waiter` is settled when the
   * record is written or known not to be, except when the failure is returned.
   */
  #enqueue(event: AuditEvent, waiter: Waiter | undefined): AuditWriteError | undefined {
    const ts = this.#now();
    if (this.#closed) return this.#health.fail(codedError('CLOSED', 'the audit log was closed'), ts, 1);
    // Serialised now, so the record is what the caller had at this moment, whenever it is written.
    this.#queue.push({ ts, members: this.#fields.members(event), waiter });
    return this.#scheduleWrite();
  }

  /** Writes the queue now (`immediate`) or at the end of this turn (`per-tick`). */
  #scheduleWrite(): AuditWriteError | undefined {
    if (this.#options.writes === 'per-tick') {
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        process.nextTick(this.#scheduledFlush);
      }
      return undefined;
    }
    const error = this.#writeQueue();
    // The caller gets the error itself; the waiter (already rejected) is not told twice.
    return error;
  }

  flush(): void {
    if (this.#queue.length > 0) this.#writeQueue();
  }

  readonly #scheduledFlush = (): void => {
    this.#flushScheduled = false;
    this.flush();
  };

  close(): void {
    if (this.#closed) return;
    this.#checkpointer?.stop();
    this.checkpoint();
    this.flush();
    this.#closed = true;
    this.#health.stop();
    if (this.#segment.isOpen) {
      try {
        this.#segment.datasync();
      } catch {
        // Best effort: the records are already in the kernel's hands.
      }
      this.#segment.close();
    }
  }

  /** Hands written lines to `onWritten`, which must not turn a written record into a failure. */
  #shipped(text: string): void {
    try {
      this.#options.onWritten?.(text);
    } catch {
      // The record is in the file; the shipper reports its own trouble.
    }
  }

  /** The time as ISO 8601, made once per millisecond (records come in bursts). */
  #now(): string {
    return this.#clock.now();
  }

  /** Writes what is queued, timed for `onWrite` when the caller asked to be told. */
  #writeQueue(): AuditWriteError | undefined {
    const told = this.#options.onWrite;
    if (told === undefined) return this.#writeQueueNow();
    const records = this.#queue.length;
    const started = performance.now();
    const error = this.#writeQueueNow();
    told({ ms: performance.now() - started, records, failed: error !== undefined });
    return error;
  }

  /**
   * Writes every queued record (after an `audit_gap` record when earlier ones were lost, or when
   * the file ends with a torn line) and returns the failure, if any, after recording it: records
   * not written count as lost. With an empty queue, only the gap record is written (the retry
   * timer's probe).
   */
  #writeQueueNow(): AuditWriteError | undefined {
    const queue = this.#queue;
    this.#queue = [];
    const firstTs = queue[0]?.ts ?? this.#now();
    let pass: WritePass | undefined;
    try {
      pass = this.#startPass();
      if (this.#health.lost > 0 || this.#tornBefore) this.#addGap(pass, firstTs);
      for (const { ts, members, waiter, checkpoint } of queue) {
        if (checkpoint === true)
          this.#add(pass, ts, this.#checkpointer!.members(pass.head, ts), undefined, undefined, checkpoint);
        else this.#add(pass, ts, members, waiter, undefined, undefined);
      }
      if (this.#batch.bytes > 0) this.#write(pass);
    } catch (error) {
      // A checkpoint not written is not a lost record: the next one covers the same records.
      this.#checkpointer?.dropped();
      const records = queue.filter((record) => record.checkpoint !== true).length;
      const failure = this.#health.fail(error, firstTs, records - (pass?.written ?? 0));
      this.#settle(queue, pass?.done ?? [], failure);
      return failure;
    }
    if (this.#options.fsync === true && this.#segment.isOpen) {
      try {
        this.#segment.datasync();
      } catch (error) {
        // The records are in the file, but not known to be on disk: a failure, not a loss.
        const failure = this.#health.fail(error, firstTs, 0);
        this.#settle(queue, [], failure);
        return failure;
      }
    }
    this.#settle(queue, pass.done, undefined);
    this.#health.succeeded(pass.recoveredFrom);
    return undefined;
  }

  /** Opens the file if needed, finds where the chain goes on, and starts an empty batch. */
  #startPass(): WritePass {
    if (this.#options.output === undefined) this.#segment.ensure();
    if (this.#head === undefined) {
      const start = this.#findChainStart();
      this.#head = start.head;
      if (start.torn) {
        this.#tornBefore = true;
        this.#tornSince = start.tornTs ?? this.#segment.mtime;
      }
    }
    this.#batch.clear();
    return { head: this.#head, lines: [], written: 0, recoveredFrom: 0, done: [] };
  }

  /** The `audit_gap` record counting the records lost (and a predecessor's cut one), written at once. */
  #addGap(pass: WritePass, firstTs: string): void {
    const lost = this.#health.lost;
    // A predecessor's cut record counts as lost too: it is in the file, but unreadable.
    const cut = this.#tornBefore && lost === 0 ? 1 : 0;
    const gap: AuditGapEvent = {
      type: 'audit_gap',
      lost: lost + cut,
      since: this.#health.lostSince ?? this.#tornSince ?? firstTs,
      error: this.#health.lastError?.detail ?? TORN_ERROR,
      ...(this.#tornBefore && { torn: true }),
    };
    this.#add(
      pass,
      firstTs,
      recordJson({ ...gap }).slice(1, -1) + this.#sessionMember,
      undefined,
      lost,
      undefined,
    );
    this.#write(pass);
  }

  /** Seals a record into the batch; lines that would take the file past `maxBytes` go in the next write. */
  #add(
    pass: WritePass,
    ts: string,
    members: string,
    waiter: Waiter | undefined,
    gap: number | undefined,
    checkpoint: true | undefined,
  ): void {
    const batch = this.#batch;
    const limit = this.#options.maxBytes;
    const mark = batch.bytes;
    pass.head = sealLine(batch, pass.head, ts, members, this.#writerMembers);
    // Lines that fit go into the current file; rotation happens before the one that does not.
    if (limit !== undefined && mark > 0 && this.#segment.size + batch.bytes > limit) {
      batch.moveTail(mark, () => this.#write(pass));
    }
    // One shape for every line of a batch, so reading them back stays monomorphic.
    pass.lines.push({ end: batch.bytes, head: pass.head, gap, waiter, checkpoint });
  }

  /** Writes the batch's lines and commits them to the chain; throws on any failure. */
  #write(pass: WritePass): void {
    const batch = this.#batch;
    try {
      this.#writeLines(batch);
    } catch (error) {
      // Lines wholly in the file before a short write count as written: the chain moves on
      // to the last of them, so the gap record that follows links to what is really there.
      if (error instanceof ShortWrite)
        for (const line of pass.lines) if (line.end <= error.textBytes) this.#commit(pass, line);
      throw error;
    }
    for (const line of pass.lines) this.#commit(pass, line);
    if (this.#options.onWritten !== undefined) this.#shipped(batch.text());
    pass.lines = [];
    batch.clear();
  }

  /** A line is in the file: the chain, the counts and the waiters move on. */
  #commit(pass: WritePass, line: BatchLine): void {
    this.#head = line.head;
    if (line.checkpoint === true) {
      this.#checkpointer?.written();
      return;
    }
    this.#checkpointer?.counted();
    if (line.gap === undefined) {
      pass.written++;
      if (line.waiter !== undefined) pass.done.push(line.waiter);
      return;
    }
    pass.recoveredFrom += line.gap;
    this.#health.gapWritten(line.gap);
    this.#tornBefore = false;
    this.#tornSince = undefined;
  }

  /**
   * Resolves the waiters of the records written (`done`), rejects the others with `failure`.
   * A record whose write was not followed by a requested fsync is not durable: rejected too.
   */
  #settle(
    queue: readonly QueuedRecord[],
    done: readonly Waiter[],
    failure: AuditWriteError | undefined,
  ): void {
    for (const { waiter } of queue) {
      if (waiter === undefined) continue;
      if (failure === undefined || (done.includes(waiter) && this.#options.fsync !== true)) waiter.resolve();
      else waiter.reject(failure);
    }
  }

  /** Whole lines to the output, or to the file with one write(2) (see segmentFile.ts). */
  #writeLines(batch: LineBatch): void {
    const output = this.#options.output;
    if (output !== undefined) return output.write(batch.text());
    this.#segment.write(batch);
  }

  /** Where this writer's chain starts: the newest record kept by the output, or the file's last. */
  #findChainStart(): { head: ChainHead; torn: boolean; tornTs?: string } {
    const output = this.#options.output;
    if (output === undefined) return this.#segment.chainStart();
    let head: ChainHead | undefined;
    try {
      head = output.lastLine === undefined ? undefined : chainHeadOf(JSON.parse(output.lastLine));
    } catch {
      // Not a record: a new chain.
    }
    return { head: head ?? { seq: -1, hash: GENESIS_HASH }, torn: false };
  }
}

interface Waiter {
  resolve(): void;
  reject(error: AuditWriteError): void;
}

interface QueuedRecord {
  readonly ts: string;
  readonly members: string;
  /** Set for `writeAhead`: told whether the record made it into the file. */
  readonly waiter: Waiter | undefined;
  /** A checkpoint: its members are made when it is sealed, from the chain head at that point. */
  readonly checkpoint?: true;
}

/** A line of one write(2): where it ends in the written text, and the chain after it. */
interface BatchLine {
  readonly end: number;
  readonly head: ChainHead;
  /** For the `audit_gap` record: the records it accounts for (0 for a predecessor's torn one). */
  readonly gap: number | undefined;
  readonly waiter: Waiter | undefined;
  readonly checkpoint: true | undefined;
}
