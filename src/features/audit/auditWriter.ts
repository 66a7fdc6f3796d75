/*
 * Longer than most modules because the writer's guarantees (one write per turn, the hash chain
 * across processes and rotation, torn-write recovery, write-ahead, block or continue) hold only
 * together.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  closeSync,
  constants,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { WardenError } from '../../core/errors.js';
import { chainHeadOf, recordJson, SEAL_SUFFIX_BYTES, sealSuffix, type ChainHead } from './chain.js';
import { sha256HexOfBytes } from '../../lib/hash.js';
import { IsoClock } from './isoClock.js';
import { RecordFields } from './recordFields.js';
import { GENESIS_HASH, type AuditEvent, type AuditGapEvent } from '../../core/events.js';
import type { Redactor } from './redact.js';
import { checkpointMessage, type CheckpointSigner } from './checkpoint.js';

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

/** How long a rotation lock may exist before it is taken as left behind by a killed process. */
const STALE_LOCK_MS = 10_000;

/** How far back from the end of a file to look for the last record when starting a chain. */
const MAX_TAIL_SCAN = 64 * 1024 * 1024;

/**
 * While writing fails, the log tries again on its own after these delays (the last repeats), so
 * it recovers within about two seconds of the disk becoming writable even when nothing is
 * appended meanwhile: `block` mode refuses calls while unhealthy, so without a timer nothing
 * would ever try again until some lifecycle event happened to be written.
 */
const RETRY_DELAYS_MS = [250, 500, 1000, 2000] as const;

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

export type AuditStatus =
  /** Writing failed after working (or failed at open); `lastError` says why. */
  | { readonly kind: 'failed'; readonly error: AuditWriteError }
  /** Writing works again; `lost` records were dropped meanwhile (an `audit_gap` record says so). */
  | { readonly kind: 'recovered'; readonly lost: number }
  /** Rotation failed; records keep going into the current file, beyond `maxBytes`. */
  | { readonly kind: 'rotate_failed'; readonly error: AuditWriteError };

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
 * The audit file cannot be written. A `DENIED` WardenError, so in `block` mode the pipeline can
 * let it through to the host as an `isError` result with this message.
 */
export class AuditWriteError extends WardenError {
  readonly file: string;
  /** The errno code (`ENOSPC`, `EACCES`, `EISDIR`, ...), `SHORT_WRITE` or `CLOSED`. */
  readonly reason: string;
  readonly detail: string;

  constructor(file: string, onFailure: 'block' | 'continue', cause: unknown) {
    const reason =
      cause instanceof Error && typeof (cause as NodeJS.ErrnoException).code === 'string'
        ? String((cause as NodeJS.ErrnoException).code)
        : 'UNKNOWN';
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      'DENIED',
      onFailure === 'block'
        ? `Calls are refused: the audit log "${file}" cannot be written (${detail}) and audit.onFailure is "block".`
        : `The audit log "${file}" cannot be written (${detail}); calls continue unaudited (audit.onFailure is "continue").`,
      { cause },
    );
    this.file = file;
    this.reason = reason;
    this.detail = detail;
  }
}

function codedError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
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

class FileAuditLog implements AuditLog {
  readonly file: string;
  readonly writer: string;
  #options: AuditLogOptions & { maxFiles: number };
  #fd: number | undefined;
  #ino = 0;
  #dev = 0;
  #size = 0;
  #regular = true;
  /** The file does not end with a newline (a torn write): start the next line with one. */
  #needsNewline = false;
  /** Whether the end of the file was checked for a torn line (done once, at the first open). */
  #checkedTail = false;
  /** The descriptor was opened read-write (else write-only: the file's permissions). */
  #readable = false;
  /** This writer's last record; undefined until the first append looks at the file. */
  #head: ChainHead | undefined;
  #healthy = true;
  #lastError: AuditWriteError | undefined;
  #lost = 0;
  #lostSince: string | undefined;
  #closed = false;
  readonly #fields: RecordFields;
  readonly #writerJson: string;
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
  #retryTimer: NodeJS.Timeout | undefined;
  #retries = 0;
  #checkpointTimer: NodeJS.Timeout | undefined;
  /** Records this writer wrote since its last checkpoint (a checkpoint of nothing new is skipped). */
  #sinceCheckpoint = 0;
  /** A checkpoint is queued and not yet written. */
  #checkpointQueued = false;
  /** `"session":...` for the writer's own records, or empty. */
  readonly #sessionMember: string;

  constructor(options: AuditLogOptions & { file: string; maxFiles: number }) {
    this.#options = options;
    this.file = options.file;
    this.writer = options.writer ?? randomBytes(6).toString('hex');
    // A writer id given by the caller may hold any character: written as JSON, like any value.
    this.#writerJson = JSON.stringify(this.writer);
    this.#writerMembers = `"host":${JSON.stringify(options.host ?? hostname())},"writer":${this.#writerJson}`;
    this.#fields = new RecordFields(options.redactor);
    this.#sessionMember =
      options.session === undefined ? '' : `,"session":${JSON.stringify(options.session)}`;
    const checkpoints = options.checkpoints;
    if (checkpoints !== undefined) {
      this.#checkpointTimer = setInterval(() => this.checkpoint(), checkpoints.intervalMs);
      this.#checkpointTimer.unref();
    }
  }

  retune(settings: { readonly onFailure: 'block' | 'continue'; readonly fsync: boolean }): void {
    this.#options = { ...this.#options, onFailure: settings.onFailure, fsync: settings.fsync };
  }

  checkpoint(): void {
    if (this.#options.checkpoints === undefined || this.#closed || this.#checkpointQueued) return;
    if (this.#sinceCheckpoint === 0 && !this.#queue.some((record) => record.checkpoint !== true)) return;
    this.#checkpointQueued = true;
    this.#queue.push({ ts: this.#now(), members: '', waiter: undefined, checkpoint: true });
    this.#scheduleWrite();
  }

  /** The members of a checkpoint record sealed after `head` at `ts`. */
  #checkpointMembers(head: ChainHead, ts: string): string {
    const signer = this.#options.checkpoints!.signer;
    const seq = head.seq + 1;
    const sig = signer.sign(
      checkpointMessage({ writer: this.writer, seq, ts, prev: head.hash, records: seq }),
    );
    return `"type":"checkpoint","records":${seq},"key":"${signer.keyId}","sig":"${sig}"${this.#sessionMember}`;
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  get lastError(): AuditWriteError | undefined {
    return this.#lastError;
  }

  get lost(): number {
    return this.#lost;
  }

  /** First open, from `openAuditLog`: a failure is recorded, not thrown. */
  open(): void {
    if (this.#options.output !== undefined) return;
    try {
      this.#ensureFile();
    } catch (error) {
      this.#markFailed(error);
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
    if (this.#closed) return this.#fail(codedError('CLOSED', 'the audit log was closed'), ts, 1);
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
    clearInterval(this.#checkpointTimer);
    this.checkpoint();
    this.flush();
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    if (this.#fd !== undefined) {
      try {
        fdatasyncSync(this.#fd);
      } catch {
        // Best effort: the records are already in the kernel's hands.
      }
      this.#closeFd();
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

  readonly #clock = new IsoClock();
  /** When the file was last changed before this writer opened it: a torn record's time, at worst. */
  #mtime: string | undefined;

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
    let recoveredFrom = 0;
    /** Waiters of the records written so far, settled once the whole write is known. */
    const done: Waiter[] = [];
    let written = 0;
    try {
      this.#ensureFile();
      if (this.#head === undefined) {
        const start = this.#findChainStart();
        this.#head = start.head;
        if (start.torn) {
          this.#tornBefore = true;
          this.#tornSince = start.tornTs ?? this.#mtime;
        }
      }
      let head = this.#head;
      const limit = this.#options.maxBytes;
      let lines: BatchLine[] = [];
      const batch = this.#batch;
      batch.clear();
      const write = () => {
        try {
          this.#writeLines(batch);
        } catch (error) {
          // Lines wholly in the file before a short write count as written: the chain moves on
          // to the last of them, so the gap record that follows links to what is really there.
          if (error instanceof ShortWrite)
            for (const line of lines) if (line.end <= error.textBytes) commit(line);
          throw error;
        }
        for (const line of lines) commit(line);
        if (this.#options.onWritten !== undefined) this.#shipped(batch.text());
        lines = [];
        batch.clear();
      };
      const commit = (line: BatchLine) => {
        this.#head = line.head;
        if (line.checkpoint === true) {
          this.#sinceCheckpoint = 0;
          this.#checkpointQueued = false;
          return;
        }
        this.#sinceCheckpoint++;
        if (line.gap === undefined) {
          written++;
          if (line.waiter !== undefined) done.push(line.waiter);
          return;
        }
        recoveredFrom += line.gap;
        this.#lost -= line.gap;
        this.#lostSince = undefined;
        this.#tornBefore = false;
        this.#tornSince = undefined;
      };
      const add = (
        ts: string,
        members: string,
        waiter: Waiter | undefined,
        gap: number | undefined,
        checkpoint: true | undefined,
      ) => {
        const mark = batch.bytes;
        head = this.#seal(batch, head, ts, members);
        // Lines that fit go into the current file; rotation happens before the one that does not.
        if (limit !== undefined && mark > 0 && this.#size + batch.bytes > limit) {
          batch.moveTail(mark, () => write());
        }
        // One shape for every line of a batch, so reading them back stays monomorphic.
        lines.push({ end: batch.bytes, head, gap, waiter, checkpoint });
      };
      if (this.#lost > 0 || this.#tornBefore) {
        // A predecessor's cut record counts as lost too: it is in the file, but unreadable.
        const cut = this.#tornBefore && this.#lost === 0 ? 1 : 0;
        const gap: AuditGapEvent = {
          type: 'audit_gap',
          lost: this.#lost + cut,
          since: this.#lostSince ?? this.#tornSince ?? firstTs,
          error: this.#lastError?.detail ?? TORN_ERROR,
          ...(this.#tornBefore && { torn: true }),
        };
        add(
          firstTs,
          recordJson({ ...gap }).slice(1, -1) + this.#sessionMember,
          undefined,
          this.#lost,
          undefined,
        );
        write();
      }
      for (const { ts, members, waiter, checkpoint } of queue) {
        if (checkpoint === true) add(ts, this.#checkpointMembers(head, ts), undefined, undefined, checkpoint);
        else add(ts, members, waiter, undefined, undefined);
      }
      if (batch.bytes > 0) write();
    } catch (error) {
      // A checkpoint not written is not a lost record: the next one covers the same records.
      this.#checkpointQueued = false;
      const records = queue.filter((record) => record.checkpoint !== true).length;
      const failure = this.#fail(error, firstTs, records - written);
      this.#settle(queue, done, failure);
      return failure;
    }
    if (this.#options.fsync === true && this.#fd !== undefined) {
      try {
        fdatasyncSync(this.#fd);
      } catch (error) {
        // The records are in the file, but not known to be on disk: a failure, not a loss.
        const failure = this.#fail(error, firstTs, 0);
        this.#settle(queue, [], failure);
        return failure;
      }
    }
    this.#settle(queue, done, undefined);
    if (!this.#healthy) {
      this.#healthy = true;
      this.#retries = 0;
      clearTimeout(this.#retryTimer);
      this.#retryTimer = undefined;
      this.#notify({ kind: 'recovered', lost: recoveredFrom });
    }
    return undefined;
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

  /**
   * Appends to `batch` the line of a record whose fields are `members` (JSON object members, see
   * RecordFields) as the record after `head` in this writer's chain; returns the new head.
   */
  #seal(batch: LineBatch, head: ChainHead, ts: string, members: string): ChainHead {
    const seq = head.seq + 1;
    // Chain fields around the caller's, `seq` and `ts` first for people reading the file.
    const fields = members === '' ? '' : `${members},`;
    const hash = batch.sealOpen(
      `{"seq":${seq},"ts":"${ts}",${fields}${this.#writerMembers},"prev":"${head.hash}"`,
    );
    return { seq, hash };
  }

  /** The lines of the write being assembled (one buffer, reused from write to write). */
  readonly #batch = new LineBatch();

  /**
   * Appends whole lines with one write(2), rotating first when they would take the file past
   * `maxBytes`; throws on any failure (`ShortWrite` when only part of `text` went in).
   */
  #writeLines(batch: LineBatch): void {
    const output = this.#options.output;
    if (output !== undefined) return output.write(batch.text());
    const bytes = batch.bytes;
    // Rotate first: a fresh file needs no newline in front of the lines.
    this.#maybeRotate(bytes);
    const newline = this.#needsNewline ? 1 : 0;
    const length = bytes + newline;
    const fd = this.#fd;
    if (fd === undefined) throw codedError('EBADF', 'the audit file is not open');
    // One write(2) of whole lines: the atomicity argument at the top of this file. The lines
    // are already UTF-8 in the batch's buffer (they were hashed there), with a byte kept free
    // in front of them for the newline a torn line before them needs.
    const written = batch.writeTo(fd, newline === 1);
    if (written !== length) {
      this.#size += written;
      if (written >= newline) this.#needsNewline = false;
      const textBytes = Math.max(0, written - newline);
      // Part of a line is in the file: the next line must start on a new one, and the first
      // record after it is the recovery record that tells verify this was a crash, not an edit.
      if (textBytes > 0 && !batch.isLineEnd(textBytes)) {
        this.#needsNewline = true;
        this.#tornBefore = true;
      }
      throw new ShortWrite(written, length, textBytes);
    }
    this.#needsNewline = false;
    this.#size += length;
  }

  /** Opens `file` if needed, and reopens it when it was moved or removed since. */
  #ensureFile(): void {
    if (this.#options.output !== undefined) return;
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (this.#fd !== undefined) {
      if (stat !== undefined && stat.ino === this.#ino && stat.dev === this.#dev) {
        this.#size = stat.size;
        return;
      }
      this.#closeFd();
    }
    // Read-write, so the chain start and the torn-line check read the very file this writer
    // appends to (see #findChainStart); write-only if the file's permissions allow no more.
    let fd: number;
    try {
      fd = openSync(this.file, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT, 0o600);
      this.#readable = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EACCES') throw error;
      fd = openSync(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600);
      this.#readable = false;
    }
    try {
      const opened = fstatSync(fd);
      this.#ino = opened.ino;
      this.#dev = opened.dev;
      this.#size = opened.size;
      this.#mtime = opened.mtime.toISOString();
      this.#regular = opened.isFile();
      // A torn last line (another writer's short write on a full disk, before we started) would
      // swallow our first record. Checked once only: a reader can see another writer's line
      // half copied (the size grows page by page during one write), and a wrong guess costs an
      // empty line, which verify skips.
      if (!this.#checkedTail) {
        this.#checkedTail = true;
        if (this.#regular && this.#readable && opened.size > 0 && !endsWithNewline(fd, opened.size)) {
          this.#needsNewline = true;
        }
      }
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    this.#fd = fd;
  }

  /**
   * Where this writer's chain starts: the last record of the file it appends to, or of `file.1`
   * if that file is empty. Read through the append descriptor itself, not by name: between this
   * writer's check of the name and its write, another writer may rotate, and a first record
   * appended to the old file must not link to a record in the newer one (verify requires the
   * record a chain starts from to come earlier). A file is rotated only when it is not empty,
   * so an empty one is the newest and `file.1` precedes it.
   */
  #findChainStart(): { head: ChainHead; torn: boolean; tornTs?: string } {
    const output = this.#options.output;
    if (output !== undefined) {
      let head: ChainHead | undefined;
      try {
        head = output.lastLine === undefined ? undefined : chainHeadOf(JSON.parse(output.lastLine));
      } catch {
        // Not a record: a new chain.
      }
      return { head: head ?? { seq: -1, hash: GENESIS_HASH }, torn: false };
    }
    const fd = this.#fd;
    const current = fd !== undefined && this.#readable ? lastRecordInFd(fd) : lastRecordIn(this.file);
    // A cut line is at the end only if this writer will append right after it (#needsNewline):
    // read by name, a file may have been rotated meanwhile.
    const torn = current.torn !== undefined && this.#needsNewline;
    const tornInfo = torn
      ? { torn, ...(current.torn?.ts !== undefined && { tornTs: current.torn.ts }) }
      : { torn };
    if (current.head !== undefined) return { head: current.head, ...tornInfo };
    if (current.empty) {
      const rotated = lastRecordIn(`${this.file}.1`);
      if (rotated.head !== undefined) return { head: rotated.head, torn: false };
    }
    return { head: { seq: -1, hash: GENESIS_HASH }, ...tornInfo };
  }

  #maybeRotate(nextBytes: number): void {
    const { maxBytes } = this.#options;
    if (maxBytes === undefined || !this.#regular) return;
    if (this.#size === 0 || this.#size + nextBytes <= maxBytes) return;
    try {
      this.#rotate();
    } catch (error) {
      const wrapped = new AuditWriteError(this.file, this.#options.onFailure, error);
      this.#lastError = wrapped;
      this.#notify({ kind: 'rotate_failed', error: wrapped });
      // Keep writing to whatever is open (reopening if the rename went through).
      this.#ensureFile();
    }
  }

  #rotate(): void {
    const lock = `${this.file}.lock`;
    const lockFd = takeLock(lock);
    if (lockFd === undefined) return; // another writer is rotating; this record goes in as is
    try {
      const stat = statSync(this.file, { throwIfNoEntry: false });
      if (stat === undefined || stat.ino !== this.#ino || stat.dev !== this.#dev) {
        this.#closeFd(); // someone rotated between our check and the lock: follow them
      } else {
        shiftRotated(this.file, this.#options.maxFiles);
        renameSync(this.file, `${this.file}.1`);
        this.#closeFd();
        if (this.#options.fsync === true) syncDirectory(path.dirname(this.file));
      }
      this.#ensureFile();
    } finally {
      closeSync(lockFd);
      try {
        unlinkSync(lock);
      } catch {
        // Already gone (judged stale by another writer): nothing to release.
      }
    }
  }

  #closeFd(): void {
    if (this.#fd === undefined) return;
    try {
      closeSync(this.#fd);
    } catch {
      // The descriptor is unusable either way; a fresh open follows.
    }
    this.#fd = undefined;
  }

  /** Records a failure that cost `lost` records; returns it for the caller to throw or not. */
  #fail(error: unknown, ts: string, lost: number): AuditWriteError {
    if (lost > 0) {
      this.#lost += lost;
      this.#lostSince ??= ts;
    }
    return this.#markFailed(error);
  }

  #markFailed(error: unknown): AuditWriteError {
    const wrapped = new AuditWriteError(this.file, this.#options.onFailure, error);
    this.#lastError = wrapped;
    // Reopen on the next record: the descriptor may be what is broken (a removed mount, EBADF).
    this.#closeFd();
    if (this.#healthy) {
      this.#healthy = false;
      this.#notify({ kind: 'failed', error: wrapped });
    }
    this.#scheduleRetry();
    return wrapped;
  }

  /** Tries writing again after a bounded delay while unhealthy; never keeps the process alive. */
  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    const delay = RETRY_DELAYS_MS[Math.min(this.#retries, RETRY_DELAYS_MS.length - 1)]!;
    this.#retries++;
    this.#retryTimer = setTimeout(this.#retry, delay);
    this.#retryTimer.unref();
  }

  readonly #retry = (): void => {
    this.#retryTimer = undefined;
    if (this.#closed || this.#healthy) return;
    // Whatever is queued goes too; with nothing queued, the gap record is the probe.
    this.#writeQueue();
  };

  #notify(status: AuditStatus): void {
    try {
      this.#options.onStatus?.(status);
    } catch {
      // A failing listener must not turn a handled audit failure into an unhandled one.
    }
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

/** A write(2) that wrote only part of its data (a full disk, or a signal mid-write). */
class ShortWrite extends Error {
  readonly code = 'SHORT_WRITE';
  /** Bytes of the records' text that went in (a leading newline not counted). */
  readonly textBytes: number;

  constructor(written: number, length: number, textBytes: number) {
    super(`SHORT_WRITE: wrote ${written} of ${length} bytes (disk full?)`);
    this.textBytes = textBytes;
  }
}

/** A batch buffer grown past this for one large write is not kept for the next. */
const BATCH_KEPT_BYTES = 1024 * 1024;

/**
 * The lines of one write(2), assembled as UTF-8 in one buffer: each record's text is encoded
 * once, hashed where it lies and written from there, where the text of a batch used to be
 * encoded for the hash, counted for its length and encoded again for the write (measured: about
 * half of the sealing and writing cost of a record). The first byte is kept for a newline.
 */
class LineBatch {
  #buffer = Buffer.allocUnsafe(64 * 1024);
  /** Bytes of lines, after the reserved first byte. */
  bytes = 0;

  clear(): void {
    this.bytes = 0;
    if (this.#buffer.length > BATCH_KEPT_BYTES) this.#buffer = Buffer.allocUnsafe(64 * 1024);
  }

  /** Appends `open` + the hash member + `"}` + newline; returns the hash (see `sealOpenRecord`). */
  sealOpen(open: string): string {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.#reserve(open.length * 3 + SEAL_SUFFIX_BYTES);
    const start = 1 + this.bytes;
    const end = start + this.#buffer.write(open, start, 'utf8');
    const hash = sha256HexOfBytes(this.#buffer.subarray(start, end));
    const sealed = end + this.#buffer.write(sealSuffix(hash), end, 'latin1');
    this.bytes = sealed - 1;
    return hash;
  }

  /**
   * Writes the lines before `mark` with `write` (which clears the batch), then keeps the lines
   * from `mark` on as the batch's only ones.
   */
  moveTail(mark: number, write: () => void): void {
    const tail = Buffer.from(this.#buffer.subarray(1 + mark, 1 + this.bytes));
    this.bytes = mark;
    write();
    this.#reserve(tail.length);
    tail.copy(this.#buffer, 1);
    this.bytes = tail.length;
  }

  /**
   * Writes the lines to `fd` with one write(2), a newline in front of them when asked; returns
   * the bytes written. From the buffer itself, at an offset: no view of it is made per write.
   */
  writeTo(fd: number, newline: boolean): number {
    if (newline) this.#buffer[0] = 0x0a;
    return writeSync(fd, this.#buffer, newline ? 0 : 1, this.bytes + (newline ? 1 : 0), null);
  }

  /** The lines as text (for the shippers and an output other than the file). */
  text(): string {
    return this.#buffer.toString('utf8', 1, 1 + this.bytes);
  }

  /** Whether the first `bytes` bytes of the lines end at the end of a line. */
  isLineEnd(bytes: number): boolean {
    return this.#buffer[bytes] === 0x0a;
  }

  #reserve(more: number): void {
    const needed = 1 + this.bytes + more;
    if (needed <= this.#buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(needed, this.#buffer.length * 2));
    this.#buffer.copy(grown, 0, 0, 1 + this.bytes);
    this.#buffer = grown;
  }
}

function takeLock(lock: string): number | undefined {
  try {
    return openSync(lock, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stat = statSync(lock, { throwIfNoEntry: false });
  if (stat !== undefined && Date.now() - stat.mtimeMs <= STALE_LOCK_MS) return undefined;
  try {
    unlinkSync(lock);
  } catch {
    // Another writer removed it first; race for it below like everyone else.
  }
  try {
    return openSync(lock, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  }
}

/**
 * Makes room for `file.1`: `file.N` becomes `file.N+1`, newest last so nothing is overwritten,
 * and `file.N` for N ≥ maxFiles is deleted (the oldest, and leftovers of a larger maxFiles).
 * Only the files that exist are touched: the lock is held meanwhile, so this must be quick.
 */
function shiftRotated(file: string, maxFiles: number): void {
  const dir = path.dirname(file);
  const name = path.basename(file);
  const numbers: number[] = [];
  for (const entry of readdirSync(dir)) {
    if (!entry.startsWith(`${name}.`)) continue;
    const suffix = entry.slice(name.length + 1);
    if (/^[1-9][0-9]{0,8}$/.test(suffix)) numbers.push(Number(suffix));
  }
  numbers.sort((a, b) => b - a);
  for (const n of numbers) {
    const from = `${file}.${n}`;
    if (n >= maxFiles) unlinkIfExists(from);
    else renameIfExists(from, `${file}.${n + 1}`);
  }
}

function renameIfExists(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function unlinkIfExists(file: string): void {
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function syncDirectory(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not supported everywhere (some filesystems refuse fsync on directories).
  }
}

/**
 * The last record of `file` (see `lastRecordInFd`). `empty`: the file is missing or has no bytes.
 */
function lastRecordIn(file: string): TailScan {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { empty: statSync(file, { throwIfNoEntry: false }) === undefined };
  }
  try {
    return lastRecordInFd(fd);
  } finally {
    closeSync(fd);
  }
}

interface TailScan {
  readonly head?: ChainHead;
  readonly empty: boolean;
  /** The file ends with a line cut short; `ts` is the cut record's time when it got that far. */
  readonly torn?: { readonly ts?: string };
}

function endsWithNewline(fd: number, size: number): boolean {
  const byte = Buffer.alloc(1);
  try {
    readSync(fd, byte, 0, 1, size - 1);
  } catch {
    return true; // cannot tell: assume whole lines
  }
  return byte[0] === 0x0a;
}

/**
 * The last record of an open file, read backwards in chunks with positioned reads (the offset
 * is untouched). Only `seq` and `hash` are needed to continue the chain, so the record's own
 * hash is not checked here (verify does that). Complete lines that do not parse are skipped. A
 * last line without a newline is a torn write (reported in `torn`) unless it parses as a whole
 * record: a write cut right before its newline lost nothing.
 */
function lastRecordInFd(fd: number): TailScan {
  const stat = fstatSync(fd);
  if (!stat.isFile()) return { empty: true };
  const size = stat.size;
  if (size === 0) return { empty: true };
  const chunkSize = 64 * 1024;
  let pos = size;
  // Bytes from `pos` up to the earliest newline seen so far (or everything read, before one).
  let carry = Buffer.alloc(0);
  let seenNewline = false;
  let torn: { ts?: string } | undefined;
  const tryLine = (line: Buffer): ChainHead | undefined => {
    try {
      return chainHeadOf(JSON.parse(line.toString('utf8')));
    } catch {
      return undefined;
    }
  };
  /** The piece after the last newline: a whole record, nothing, or a torn one. */
  const tail = (piece: Buffer): ChainHead | undefined => {
    if (piece.length === 0) return undefined;
    const head = tryLine(piece);
    if (head === undefined) torn = { ...tornTime(piece) };
    return head;
  };
  while (pos > 0 && size - pos < MAX_TAIL_SCAN) {
    const n = Math.min(chunkSize, pos);
    pos -= n;
    const chunk = Buffer.alloc(n);
    readSync(fd, chunk, 0, n, pos);
    const buffer = Buffer.concat([chunk, carry]);
    let end = buffer.length;
    for (
      let i = buffer.lastIndexOf(0x0a, end - 1);
      i !== -1;
      i = i > 0 ? buffer.lastIndexOf(0x0a, i - 1) : -1
    ) {
      const head = seenNewline ? tryLine(buffer.subarray(i + 1, end)) : tail(buffer.subarray(i + 1, end));
      if (head !== undefined) return { head, empty: false, ...(torn && { torn }) };
      seenNewline = true;
      end = i;
    }
    carry = buffer.subarray(0, end);
  }
  if (pos === 0) {
    const head = seenNewline ? tryLine(carry) : tail(carry);
    if (head !== undefined) return { head, empty: false, ...(torn && { torn }) };
  }
  return { empty: false, ...(torn && { torn }) };
}

/** The `ts` of a cut record line, when the cut came after it (it is the line's second member). */
function tornTime(piece: Buffer): { ts?: string } {
  const match = /^\{"seq":\d+,"ts":"([0-9T:.Z-]{10,40})"/.exec(piece.subarray(0, 80).toString('latin1'));
  return match?.[1] === undefined ? {} : { ts: match[1] };
}
