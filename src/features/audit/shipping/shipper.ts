import { hostname } from 'node:os';
import path from 'node:path';
import type { AuditConfig, AuditSinkConfig } from '../../../config/types.js';
import type { Logger } from '../../../core/logger.js';
import { AuditWriteError, type AuditLog } from '../auditWriter.js';
import { parseRecord } from './format.js';
import { plural } from '../../../lib/plural.js';
import { Spool } from './spool.js';
import type { SinkTransport } from './transport.js';

/** After a failed send, the next try waits these long (the last repeats). */
const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 5000] as const;

/** The spool folder of a sink: in `audit.spool`, by default beside the audit file (`audit summary FILE` finds it). */
export function spoolDirOf(audit: AuditConfig, sink: string): string {
  return path.join(audit.spoolDir, sink);
}

export interface Shipper {
  /** Record lines the writer just wrote: spooled for every sink, then sent. Returns how many sinks kept them. */
  accept(lines: string): number;
  /** The newest record line any sink's spool holds: where a trail without a file goes on from. */
  lastLine(): string | undefined;
  /** `log` with the sinks' state folded in: `block` refuses calls while a required sink cannot take records. */
  wrap(log: AuditLog): AuditLog;
  /** Records waiting per sink. */
  pending(): { readonly sink: string; readonly records: number }[];
  /** Sends what waits for up to `ms`, then stops; what is left waits in the spool for the next start. */
  drain(ms: number): Promise<void>;
  /**
   * Follows changed `audit` settings while serving (a managed edit): a sink not open yet is
   * opened and gets the records from then on, one no longer configured is closed (what it had
   * not sent waits in its spool), and `onFailure` applies to the next record.
   */
  retune(config: AuditConfig): Promise<void>;
}

/**
 * The network sinks of `audit.sinks`: each with its spool and its connection, sending in the
 * background in spool order, retrying with backoff while the sink is unreachable.
 */
export async function openShipper(
  initial: AuditConfig,
  logger: Logger,
  product: { readonly version: string },
): Promise<Shipper> {
  const host = hostname();
  let config = initial;
  const open = (sink: AuditSinkConfig) => openSink(sink, config, logger, { ...product, host });
  let sinks = await Promise.all((config.sinks ?? []).map(open));
  let closed = false;
  return {
    accept(lines) {
      const count = countLines(lines);
      let kept = 0;
      for (const sink of sinks) if (sink.accept(lines, count)) kept++;
      return kept;
    },
    lastLine: () => newestLine(sinks),
    wrap: (log) =>
      refusingWhileStuck(log, () => (config.onFailure === 'block' ? stuckRefusal(sinks) : undefined)),
    pending: () => sinks.map((sink) => ({ sink: sink.config.name, records: sink.spool.pending.records })),
    async retune(next) {
      config = next;
      sinks = await retuned(sinks, next.sinks ?? [], open, logger);
    },
    async drain(ms) {
      if (closed) return;
      closed = true;
      await drained(sinks, ms, logger);
    },
  };
}

/** The newest record line any sink's spool holds. */
function newestLine(sinks: readonly OpenSink[]): string | undefined {
  let newest: { line: string; seq: number } | undefined;
  for (const sink of sinks) {
    const line = sink.spool.lastLine();
    if (line === undefined) continue;
    const seq = parseRecord(line).fields['seq'];
    if (typeof seq === 'number' && (newest === undefined || seq > newest.seq)) newest = { line, seq };
  }
  return newest?.line;
}

/** Why calls are refused: a required sink that cannot take records now, or undefined. */
function stuckRefusal(sinks: readonly OpenSink[]): AuditWriteError | undefined {
  const stuck = sinks.find((sink) => sink.config.required && sink.problem !== undefined);
  if (stuck === undefined) return undefined;
  return new AuditWriteError(`sink ${stuck.config.name} (spool ${stuck.spool.dir})`, 'block', stuck.problem);
}

/** `log`, whose writes throw and whose health fails while `refusal` names a reason. */
function refusingWhileStuck(log: AuditLog, refusal: () => AuditWriteError | undefined): AuditLog {
  return {
    append(event) {
      log.append(event);
      const error = refusal();
      if (error !== undefined) throw error;
    },
    async writeAhead(event) {
      await log.writeAhead(event);
      const error = refusal();
      if (error !== undefined) throw error;
    },
    flush: () => log.flush(),
    checkpoint: () => log.checkpoint(),
    get healthy() {
      return log.healthy && refusal() === undefined;
    },
    get lastError() {
      return refusal() ?? log.lastError;
    },
    get lost() {
      return log.lost;
    },
    writer: log.writer,
    file: log.file,
    close: () => log.close(),
    retune: (settings) => log.retune(settings),
  };
}

/** The sinks `wanted` names: those open already are kept, the others opened; the rest are closed. */
async function retuned(
  sinks: readonly OpenSink[],
  wanted: readonly AuditSinkConfig[],
  open: (config: AuditSinkConfig) => Promise<OpenSink>,
  logger: Logger,
): Promise<OpenSink[]> {
  const same = (a: AuditSinkConfig, b: AuditSinkConfig) => JSON.stringify(a) === JSON.stringify(b);
  const kept = sinks.filter((sink) => wanted.some((w) => same(w, sink.config)));
  for (const sink of sinks)
    if (!kept.includes(sink)) {
      logger.info(`audit sink ${sink.config.name} is no longer configured; closed`);
      sink.close();
    }
  const added = await Promise.all(wanted.filter((w) => !kept.some((sink) => same(w, sink.config))).map(open));
  for (const sink of added) logger.info(`audit sink ${sink.config.name} opened`);
  return [...kept, ...added];
}

/** Sends what waits for up to `ms`, then closes every sink, saying what is left in its spool. */
async function drained(sinks: readonly OpenSink[], ms: number, logger: Logger): Promise<void> {
  await Promise.race([
    Promise.all(sinks.map((sink) => sink.idle())),
    new Promise((resolve) => setTimeout(resolve, ms).unref()),
  ]);
  for (const sink of sinks) {
    const { records } = sink.spool.pending;
    if (records > 0)
      logger.warn(
        `audit sink ${sink.config.name}: ${plural(records, 'record')} not yet sent wait in ${sink.spool.dir}; they are sent when the gateway next starts`,
      );
    sink.close();
  }
}

function countLines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

interface OpenSink {
  readonly config: AuditSinkConfig;
  readonly spool: Spool;
  /** Why the sink cannot take records now (spool full or unwritable), or undefined. */
  readonly problem: Error | undefined;
  /** Spools the lines; false when they could not be kept for this sink. */
  accept(lines: string, count: number): boolean;
  /** Resolves when nothing waits (or the sink is closed). */
  idle(): Promise<void>;
  close(): void;
}

type DroppedRange = { first: RecordMark; last: RecordMark };

async function openSink(
  config: AuditSinkConfig,
  audit: AuditConfig,
  logger: Logger,
  product: { readonly version: string; readonly host: string },
): Promise<OpenSink> {
  const spool = new Spool(spoolDirOf(audit, config.name), config.spoolMaxBytes);
  const transport =
    config.type === 'syslog'
      ? (await import('./syslog.js')).createSyslogTransport(config, product)
      : await (await import('./otlp.js')).createOtlpTransport(config, product);
  const sink = new ShippingSink({ config, audit, logger, host: product.host, spool, transport });
  sink.start();
  return sink;
}

interface ShippingSinkParts {
  readonly config: AuditSinkConfig;
  readonly audit: AuditConfig;
  readonly logger: Logger;
  readonly host: string;
  readonly spool: Spool;
  readonly transport: SinkTransport;
}

/**
 * One sink: its spool and its connection. Records are spooled first and sent in spool order in
 * the background; a record that cannot be spooled is counted, and the sink hears of the loss
 * (an audit_gap record) before the next record it keeps, in this run or the next.
 */
class ShippingSink implements OpenSink {
  readonly config: AuditSinkConfig;
  readonly spool: Spool;
  private readonly label: string;
  private problemNow: Error | undefined;
  private dropped = 0;
  /** The first and the last record not kept for this sink since it last kept one. */
  private droppedRange: DroppedRange | undefined;
  private sending = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly parts: ShippingSinkParts) {
    this.config = parts.config;
    this.spool = parts.spool;
    this.label = `audit sink ${parts.config.name}`;
  }

  get problem(): Error | undefined {
    return this.problemNow;
  }

  /** Sends what an earlier run left first, after telling the sink what that run lost. */
  start(): void {
    const waiting = this.spool.pending.records;
    if (waiting > 0)
      this.parts.logger.info(
        `${this.label}: ${plural(waiting, 'record')} from an earlier run wait in ${this.spool.dir}; sending them first`,
      );
    this.tellEarlierGap();
    void this.pump();
  }

  accept(lines: string, count: number): boolean {
    let kept = false;
    try {
      // After records were lost for this sink, the next ones it keeps come after a record
      // saying so, in the same write: the sink itself is told, not only the local log.
      const gap = this.problemNow === undefined ? '' : this.gapLine(this.problemNow);
      kept = this.spool.append(gap + lines, count + (gap === '' ? 0 : 1));
      if (kept) this.keptAgain();
      else this.notKept(lines, count, () => this.spoolFull());
    } catch (error) {
      this.notKept(lines, count, () => ({
        error: error as Error,
        log: `AUDIT: ${this.label}: cannot write its spool ${this.spool.dir}: ${(error as Error).message}`,
      }));
    }
    void this.pump();
    return kept;
  }

  idle(): Promise<void> {
    if (this.spool.pending.records === 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.parts.transport.close();
    this.spool.close();
    this.settleIdle();
  }

  /**
   * An earlier run lost records for this sink and stopped before it could say so: it is said
   * now, after what that run left waiting and before anything of this one.
   */
  private tellEarlierGap(): void {
    const earlier = readSavedGap(this.spool.savedGap());
    if (earlier === undefined) return;
    ({ dropped: this.dropped, droppedRange: this.droppedRange } = earlier);
    this.problemNow = Object.assign(new Error(earlier.error), { code: 'SPOOL_FULL' });
    let told = false;
    try {
      // Past the spool's bound if need be, by this one line: the sink must hear of the loss
      // before any record of this run, and what waits from the earlier run may fill the spool.
      told = this.spool.append(this.gapLine(this.problemNow), 1, { overBound: true });
    } catch {
      // The disk refuses it now: the first records this run keeps carry it instead.
    }
    if (!told) return;
    this.parts.logger.warn(
      `${this.label}: ${plural(this.dropped, 'record')} were not kept for this sink before the gateway last stopped; an audit_gap record tells the sink`,
    );
    this.forgetLoss();
  }

  /** Records were kept again after some were lost: the gap record went with them. */
  private keptAgain(): void {
    if (this.problemNow === undefined) return;
    this.parts.logger.warn(
      `${this.label}: the spool takes records again; ${plural(this.dropped, 'record')} were not kept for this sink meanwhile (an audit_gap record tells the sink)`,
    );
    this.forgetLoss();
  }

  private forgetLoss(): void {
    this.problemNow = undefined;
    this.dropped = 0;
    this.droppedRange = undefined;
    this.spool.saveGap(undefined);
  }

  private spoolFull(): { error: Error; log: string } {
    const { config, audit } = this.parts;
    const error = Object.assign(
      new Error(
        `the spool for ${this.label} is full (${this.spool.pending.bytes} bytes wait, spoolMaxSize is ${config.spoolMaxBytes}); new records are not kept for this sink until it drains`,
      ),
      { code: 'SPOOL_FULL' },
    );
    const where = config.required || audit.file === undefined ? '' : ' (they are in the audit file)';
    return { error, log: `AUDIT: ${error.message}${where}` };
  }

  /** Counts `lines` as lost for this sink; the first loss since it last kept records is logged. */
  private notKept(lines: string, count: number, why: () => { error: Error; log: string }): void {
    this.droppedRange = widened(this.droppedRange, lines);
    this.dropped += count;
    if (this.problemNow === undefined) {
      const { error, log } = why();
      this.problemNow = error;
      this.parts.logger.error(log);
    }
    this.saveGap();
  }

  /** Keeps the count of records lost so far on disk, should the gateway stop before it tells the sink. */
  private saveGap(): void {
    const { dropped: lost, droppedRange: range } = this;
    try {
      this.spool.saveGap(JSON.stringify({ lost, range, error: this.problemNow?.message ?? '' }));
    } catch {
      // A spool folder that cannot be written loses the note too; the local log said why.
    }
  }

  private gapLine(problem: Error): string {
    return gapLine(this.config.name, this.parts.host, this.dropped, this.droppedRange, problem);
  }

  /** Sends what the spool holds, in order, until it is empty or a send fails (then retries later). */
  private async pump(): Promise<void> {
    if (this.sending || this.closed || this.retryTimer !== undefined) return;
    this.sending = true;
    try {
      for (;;) {
        if (this.closed) return;
        const batch = this.spool.peek();
        if (batch.lines.length === 0) break;
        await this.parts.transport.send(batch.lines.map(parseRecord));
        this.spool.ack(batch);
        if (this.failures > 0) {
          this.parts.logger.warn(
            `${this.label}: reachable again; sending the ${plural(this.spool.pending.records + batch.lines.length, 'record')} that waited`,
          );
          this.failures = 0;
        }
      }
    } catch (error) {
      this.retryLater(error as Error);
    } finally {
      this.sending = false;
    }
    this.settleIdle();
  }

  private retryLater(error: Error): void {
    this.failures++;
    const { failures } = this;
    const { records } = this.spool.pending;
    // Said once per outage, then again every tenth try, so the log says how much is pending.
    if (failures === 1 || failures % 10 === 0)
      this.parts.logger.warn(
        `${this.label}: cannot send (${error.message}); ${plural(records, 'record')} wait in ${this.spool.dir} and are sent in order when it is back`,
      );
    const delay = RETRY_DELAYS_MS[Math.min(failures - 1, RETRY_DELAYS_MS.length - 1)]!;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.pump();
    }, delay);
    this.retryTimer.unref();
  }

  private settleIdle(): void {
    if (this.spool.pending.records > 0 && !this.closed) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** A gap an earlier run kept with `Spool.saveGap`, or undefined when there is none (or it is unreadable). */
function readSavedGap(
  text: string | undefined,
):
  | { dropped: number; droppedRange: { first: RecordMark; last: RecordMark } | undefined; error: string }
  | undefined {
  if (text === undefined) return undefined;
  try {
    const saved = JSON.parse(text) as {
      lost?: unknown;
      range?: { first: RecordMark; last: RecordMark };
      error?: unknown;
    };
    if (typeof saved.lost !== 'number' || saved.lost <= 0) return undefined;
    return {
      dropped: saved.lost,
      droppedRange: saved.range,
      error: typeof saved.error === 'string' ? saved.error : 'records were not kept for this sink',
    };
  } catch {
    return undefined;
  }
}

/** Where a record line sits in its writer's chain and in time, read from its first members. */
interface RecordMark {
  readonly seq: number | undefined;
  readonly ts: string | undefined;
}

/** Every record line starts so (the writer puts `seq` and `ts` first). */
const MARK = /^\{"seq":(\d{1,15}),"ts":"([^"]{1,40})"/;

function markOf(line: string): RecordMark {
  const match = MARK.exec(line);
  return { seq: match === null ? undefined : Number(match[1]), ts: match?.[2] };
}

/** `range` grown by the record lines `lines` (each ending in a newline), which were not kept. */
function widened(range: DroppedRange | undefined, lines: string): DroppedRange {
  const end = lines.lastIndexOf('\n', lines.length - 2);
  const last = markOf(lines.slice(end + 1));
  return { first: range?.first ?? markOf(lines), last };
}

/**
 * The record a sink gets before the first record it keeps after some were not kept for it: how
 * many, which `seq` and time range, and why. It is the sink's alone, outside the hash chain (the
 * file's chain lost nothing), so it has no `seq`, `prev` or `hash`; `audit verify` of the sink's
 * copy names it.
 */
function gapLine(
  sink: string,
  host: string,
  lost: number,
  range: { first: RecordMark; last: RecordMark } | undefined,
  problem: Error,
): string {
  const record = {
    type: 'audit_gap',
    ts: new Date().toISOString(),
    sink,
    lost,
    firstSeq: range?.first.seq,
    lastSeq: range?.last.seq,
    since: range?.first.ts,
    until: range?.last.ts,
    error: problem.message,
    host,
  };
  return `${JSON.stringify(record)}\n`;
}
