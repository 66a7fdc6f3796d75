import { hostname } from 'node:os';
import path from 'node:path';
import type { AuditConfig, AuditSinkConfig } from '../../../config/types.js';
import type { Logger } from '../../../core/logger.js';
import { AuditWriteError, type AuditLog } from '../auditWriter.js';
import { parseRecord } from './format.js';
import { plural } from '../../../lib/plural.js';
import { Spool } from './spool.js';

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
  let sinks = await Promise.all(
    (config.sinks ?? []).map((sink) => openSink(sink, config, logger, { ...product, host })),
  );
  let closed = false;
  return {
    accept(lines) {
      const count = countLines(lines);
      let kept = 0;
      for (const sink of sinks) if (sink.accept(lines, count)) kept++;
      return kept;
    },
    lastLine() {
      let newest: { line: string; seq: number } | undefined;
      for (const sink of sinks) {
        const line = sink.spool.lastLine();
        if (line === undefined) continue;
        const seq = parseRecord(line).fields['seq'];
        if (typeof seq === 'number' && (newest === undefined || seq > newest.seq)) newest = { line, seq };
      }
      return newest?.line;
    },
    wrap(log) {
      const refusal = (): AuditWriteError | undefined => {
        if (config.onFailure !== 'block') return undefined;
        const stuck = sinks.find((sink) => sink.config.required && sink.problem !== undefined);
        if (stuck === undefined) return undefined;
        return new AuditWriteError(
          `sink ${stuck.config.name} (spool ${stuck.spool.dir})`,
          'block',
          stuck.problem,
        );
      };
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
    },
    pending: () => sinks.map((sink) => ({ sink: sink.config.name, records: sink.spool.pending.records })),
    async retune(next) {
      config = next;
      const same = (a: AuditSinkConfig, b: AuditSinkConfig) => JSON.stringify(a) === JSON.stringify(b);
      const wanted = next.sinks ?? [];
      const kept = sinks.filter((sink) => wanted.some((w) => same(w, sink.config)));
      for (const sink of sinks)
        if (!kept.includes(sink)) {
          logger.info(`audit sink ${sink.config.name} is no longer configured; closed`);
          sink.close();
        }
      const added = await Promise.all(
        wanted
          .filter((w) => !kept.some((sink) => same(w, sink.config)))
          .map((w) => openSink(w, config, logger, { ...product, host })),
      );
      for (const sink of added) logger.info(`audit sink ${sink.config.name} opened`);
      sinks = [...kept, ...added];
    },
    async drain(ms) {
      if (closed) return;
      closed = true;
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
    },
  };
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
  const label = `audit sink ${config.name}`;
  let problem: Error | undefined;
  let dropped = 0;
  /** The first and the last record not kept for this sink since it last kept one. */
  let droppedRange: { first: RecordMark; last: RecordMark } | undefined;
  let sending = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let closed = false;
  let idleWaiters: (() => void)[] = [];
  const waiting = spool.pending.records;
  if (waiting > 0)
    logger.info(
      `${label}: ${plural(waiting, 'record')} from an earlier run wait in ${spool.dir}; sending them first`,
    );
  // An earlier run lost records for this sink and stopped before it could say so: it is said
  // now, after what that run left waiting and before anything of this one.
  const earlier = readSavedGap(spool.savedGap());
  if (earlier !== undefined) {
    ({ dropped, droppedRange } = earlier);
    problem = Object.assign(new Error(earlier.error), { code: 'SPOOL_FULL' });
    const gap = gapLine(config.name, product.host, dropped, droppedRange, problem);
    let told = false;
    try {
      // Past the spool's bound if need be, by this one line: the sink must hear of the loss
      // before any record of this run, and what waits from the earlier run may fill the spool.
      told = spool.append(gap, 1, { overBound: true });
    } catch {
      // The disk refuses it now: the first records this run keeps carry it instead.
    }
    if (told) {
      logger.warn(
        `${label}: ${plural(dropped, 'record')} were not kept for this sink before the gateway last stopped; an audit_gap record tells the sink`,
      );
      problem = undefined;
      dropped = 0;
      droppedRange = undefined;
      spool.saveGap(undefined);
    }
  }

  const settleIdle = () => {
    if (spool.pending.records > 0 && !closed) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  };

  async function pump(): Promise<void> {
    if (sending || closed || retryTimer !== undefined) return;
    sending = true;
    try {
      for (;;) {
        if (closed) return;
        const batch = spool.peek();
        if (batch.lines.length === 0) break;
        await transport.send(batch.lines.map(parseRecord));
        spool.ack(batch);
        if (failures > 0) {
          logger.warn(
            `${label}: reachable again; sending the ${plural(spool.pending.records + batch.lines.length, 'record')} that waited`,
          );
          failures = 0;
        }
      }
    } catch (error) {
      failures++;
      const { records } = spool.pending;
      // Said once per outage, then again every tenth try, so the log says how much is pending.
      if (failures === 1 || failures % 10 === 0)
        logger.warn(
          `${label}: cannot send (${(error as Error).message}); ${plural(records, 'record')} wait in ${spool.dir} and are sent in order when it is back`,
        );
      const delay = RETRY_DELAYS_MS[Math.min(failures - 1, RETRY_DELAYS_MS.length - 1)]!;
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        void pump();
      }, delay);
      retryTimer.unref();
    } finally {
      sending = false;
    }
    settleIdle();
  }

  /** Keeps the count of records lost so far on disk, should the gateway stop before it tells the sink. */
  const saveGap = () => {
    try {
      spool.saveGap(JSON.stringify({ lost: dropped, range: droppedRange, error: problem?.message ?? '' }));
    } catch {
      // A spool folder that cannot be written loses the note too; the local log said why.
    }
  };

  // Whatever an earlier run left is sent first.
  void pump();
  return {
    config,
    spool,
    get problem() {
      return problem;
    },
    accept(lines, count) {
      let kept = false;
      try {
        // After records were lost for this sink, the next ones it keeps come after a record
        // saying so, in the same write: the sink itself is told, not only the local log.
        const gap =
          problem === undefined ? '' : gapLine(config.name, product.host, dropped, droppedRange, problem);
        if (spool.append(gap + lines, count + (gap === '' ? 0 : 1))) {
          kept = true;
          if (problem !== undefined) {
            logger.warn(
              `${label}: the spool takes records again; ${plural(dropped, 'record')} were not kept for this sink meanwhile (an audit_gap record tells the sink)`,
            );
            problem = undefined;
            dropped = 0;
            droppedRange = undefined;
            spool.saveGap(undefined);
          }
        } else {
          droppedRange = widened(droppedRange, lines);
          dropped += count;
          if (problem === undefined) {
            problem = Object.assign(
              new Error(
                `the spool for ${label} is full (${spool.pending.bytes} bytes wait, spoolMaxSize is ${config.spoolMaxBytes}); new records are not kept for this sink until it drains`,
              ),
              { code: 'SPOOL_FULL' },
            );
            logger.error(
              `AUDIT: ${problem.message}${config.required || audit.file === undefined ? '' : ' (they are in the audit file)'}`,
            );
          }
          saveGap();
        }
      } catch (error) {
        droppedRange = widened(droppedRange, lines);
        dropped += count;
        if (problem === undefined) {
          problem = error as Error;
          logger.error(`AUDIT: ${label}: cannot write its spool ${spool.dir}: ${(error as Error).message}`);
        }
        saveGap();
      }
      void pump();
      return kept;
    },
    idle() {
      if (spool.pending.records === 0 || closed) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    close() {
      closed = true;
      clearTimeout(retryTimer);
      transport.close();
      spool.close();
      settleIdle();
    },
  };
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
function widened(
  range: { first: RecordMark; last: RecordMark } | undefined,
  lines: string,
): { first: RecordMark; last: RecordMark } {
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
