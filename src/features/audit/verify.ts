import { isHash } from '../../lib/hash.js';
import { lineHashes, type ChainHead } from './chain.js';
import { auditFileSet, LineTooLongError, readLinesSync, type FileLine } from './files.js';
import { GENESIS_HASH } from '../../core/events.js';
import { plural } from '../../lib/plural.js';
import type { CheckpointCheck, CheckpointReport } from './verifyCheckpoints.js';

export type VerifyResult =
  | {
      readonly ok: true;
      /** Records checked. */
      readonly records: number;
      /** Distinct `writer` ids (gateways that appended). */
      readonly writers: number;
      /** The files read, oldest first. */
      readonly files: string[];
      /**
       * Whether the first record starts the chain (`prev` is the genesis hash), so the whole
       * history is here and every link was checked. False when the oldest file continues from
       * records no longer present: rotated away (beyond `maxFiles`) or removed by hand.
       */
      readonly fromGenesis: boolean;
      /** `seq` of the first record read. */
      readonly firstSeq: number | null;
      /**
       * Writers whose first record here links to a record that is not here (accepted only when
       * `fromGenesis` is false: it was rotated away). One is expected for a log whose older files
       * were dropped, one more per gateway that was running then and still wrote afterwards;
       * more than that deserves a look, since removing the record a gateway's chain started
       * from would show up only here.
       */
      readonly unanchored: number;
      /** Hash of the last record: note it elsewhere to detect later truncation of the log. */
      readonly lastHash: string | null;
      /**
       * Crash gaps, as `file:line: what`: a record cut short by a killed or crashed gateway (or
       * a full disk), followed by the writer's recovery record, or left at the very end.
       */
      readonly warnings: string[];
      /** What the signed checkpoints prove, when a key was given. */
      readonly checkpoints?: CheckpointReport;
    }
  | {
      readonly ok: false;
      readonly file: string;
      /** 1-based line of the first bad record; 0 for a problem with the file set itself. */
      readonly line: number;
      /** The bad record's `seq` when it could be read. */
      readonly seq: number | null;
      readonly problem: string;
    };

/**
 * Checks an audit log's hash chains and reports the first bad record.
 *
 * `files`: the base file (`audit.jsonl`), whose rotated files `audit.jsonl.N` ... `.1` are found
 * and read first, oldest first; or an explicit list, oldest first.
 *
 * Empty lines are skipped. Each record must parse, carry `seq`, `ts`, `writer`, `prev`, `type`
 * and, as its last member, a `hash` equal to the SHA-256 of the line's text before that member
 * (catches edits, down to a changed space), in bytes that are valid UTF-8 as a writer writes
 * them (the text hashed is decoded, and an invalid byte would decode like another). Per writer, each
 * record must follow the writer's previous one: `seq` one more, `prev` its hash (catches
 * removed, inserted, repeated and swapped records). A writer's first record must start a chain
 * (`prev` genesis, `seq` 0) or link to a record read before it, with `seq` one more than that
 * record's (see auditWriter.ts for why chains are per writer).
 *
 * When the oldest file does not start at genesis (older files were rotated away), a writer's
 * first record may link to a record that is not here: its earlier records, or the record it
 * started from, were in a dropped file. That is accepted and counted in `unanchored`, not
 * failed: a gateway idle while its earlier records rotated away is normal, and a tamper alarm
 * that fires on normal logs teaches people to ignore it.
 *
 * A record cut short (a write torn by a kill, a crash or a full disk) is told from tampering by
 * what follows it (docs/reference/audit-records.md, "Crash or tampering"). A cut line is one that does not parse
 * and is a beginning of a record line (`{"seq":`...). It is a crash gap, reported in `warnings`,
 * when the next record is the writer's recovery: an `audit_gap` record with `torn: true` whose
 * `prev` and `seq` follow the last whole record before the cut line, with the `seq` the cut
 * record had begun to write when that much of it is there. A cut line at the very end of the
 * log, with nothing after it, is a warning too: the gateway stopped mid-write and has not
 * written since, and nothing after it exists to hide. Anything else that does not parse, and a
 * cut line followed by anything but its recovery, is tampering.
 *
 * What a hash chain without a secret cannot catch: records cut from the end (compare
 * `lastHash` with one noted elsewhere), and a log rewritten whole with recomputed hashes.
 * A log that a gateway is writing to may end in a line still being copied in, which is reported
 * as a cut last line.
 */
export function verifyAuditFiles(
  files: string[] | string,
  checkpoints?: CheckpointCheck,
  options: { readonly maxLineBytes?: number } = {},
): VerifyResult {
  const list = filesToVerify(files);
  if (!Array.isArray(list)) return list;
  const state: Verification = {
    checkpoints,
    writers: new Map(),
    known: new Map(),
    records: 0,
    fromGenesis: false,
    unanchored: 0,
    firstSeq: null,
    lastHash: null,
    lastRecord: undefined,
    cut: undefined,
    warnings: [],
  };
  for (const file of list) {
    try {
      for (const line of readLinesSync(file, options)) {
        const failure = checkLine(state, file, line);
        if (failure !== undefined) return failure;
      }
    } catch (error) {
      if (error instanceof LineTooLongError) return fail(file, error.line, null, error.message);
      return fail(file, 0, null, `cannot read: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return finishVerification(state, list);
}

type VerifyFailure = Extract<VerifyResult, { ok: false }>;

/** What the check has read so far. */
interface Verification {
  readonly checkpoints: CheckpointCheck | undefined;
  readonly writers: Map<string, ChainHead>;
  /** Hash → seq and writer of every record read so far: where a writer's first record may link. */
  readonly known: Map<string, { readonly seq: number; readonly writer: string }>;
  records: number;
  fromGenesis: boolean;
  unanchored: number;
  firstSeq: number | null;
  lastHash: string | null;
  /** The last record read, any writer: a cut line's recovery must follow it. */
  lastRecord: ChainHead | undefined;
  /** A cut line waiting for the next record to say whether it was a crash. */
  cut: { file: string; line: number; seq: number | null; after: ChainHead | undefined } | undefined;
  readonly warnings: string[];
}

const CUT_PROBLEM =
  "not valid JSON: a garbled or cut record, and the next record is not the writer's recovery " +
  '(an audit_gap record with torn: true chained to the record before the cut line): ' +
  'not a crash, the log was changed';

/** The files to read, oldest first, or why the file set itself fails. */
function filesToVerify(files: string[] | string): string[] | VerifyFailure {
  if (typeof files !== 'string') return files;
  const set = auditFileSet(files);
  if (set.files.length === 0) return fail(files, 0, null, 'no such file');
  const missing = set.missing[0];
  if (missing !== undefined) {
    return fail(missing, 0, null, `rotated file is missing: ${set.missing.join(', ')} (removed?)`);
  }
  return set.files;
}

/** Checks one line of `file`; the failure, or undefined when it passes. */
function checkLine(
  state: Verification,
  file: string,
  { text, number, terminated, utf8 }: FileLine,
): VerifyFailure | undefined {
  // An empty line holds nothing to check (a writer may leave one; see auditWriter.ts), and
  // removing a record's text leaves a gap in its chain that is reported below.
  if (text === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined) {
    if (state.cut !== undefined) return fail(state.cut.file, state.cut.line, null, CUT_PROBLEM);
    if (!isCutRecord(text)) {
      return fail(file, number, null, 'not valid JSON, and not the beginning of a record: a garbled line');
    }
    state.cut = { file, line: number, seq: cutSeq(text), after: state.lastRecord };
    return undefined;
  }
  if (!terminated) {
    // A whole record whose newline was not written: nothing is lost, but say so.
    state.warnings.push(
      `${file}:${number}: the last record has no newline (the write was cut right before it)`,
    );
  }
  const shape = checkShape(parsed);
  if (typeof shape === 'string') return fail(file, number, seqField(parsed), shape);
  const { seq, hash, writer } = shape;
  const record = parsed as Record<string, unknown>;
  const recovery = checkRecovery(state, record, shape, `${file}:${number}`);
  if (recovery !== undefined) return recovery;
  // The hash is of the decoded text, in which every invalid byte sequence reads as U+FFFD: a
  // writer writes only UTF-8, so invalid bytes in a record were put there afterwards.
  if (!utf8)
    return fail(file, number, seq, "not valid UTF-8: the record's bytes were changed after it was written");
  const hashes = lineHashes(text);
  if (hashes === undefined || hashes.claimed !== hash) {
    return fail(file, number, seq, 'the record does not end with its "hash" member: it was rewritten');
  }
  if (hashes.actual !== hash) {
    return fail(file, number, seq, 'hash mismatch: the record was changed after it was written');
  }
  if (state.records === 0) {
    state.fromGenesis = shape.prev === GENESIS_HASH;
    state.firstSeq = seq;
  }
  const link = linkOf(state, shape);
  if (typeof link === 'string') return fail(file, number, seq, link);
  const signed = state.checkpoints?.record(record, { file, line: number, ...(link && { link }) }, text);
  if (signed !== undefined) return fail(file, number, seq, signed);
  state.writers.set(writer, { seq, hash });
  state.known.set(hash, { seq, writer });
  state.lastHash = hash;
  state.lastRecord = { seq, hash };
  state.records++;
  return undefined;
}

/**
 * With a cut line pending, whether this record is the writer's recovery from it (a crash gap,
 * warned about) or not (tampering, the failure returned).
 */
function checkRecovery(
  state: Verification,
  record: Record<string, unknown>,
  { seq, prev }: RecordShape,
  where: string,
): VerifyFailure | undefined {
  const { cut } = state;
  if (cut === undefined) return undefined;
  const after = cut.after ?? { seq: -1, hash: GENESIS_HASH };
  const recovers =
    record.type === 'audit_gap' &&
    record.torn === true &&
    prev === after.hash &&
    seq === after.seq + 1 &&
    (cut.seq === null || cut.seq === seq);
  if (!recovers) return fail(cut.file, cut.line, null, CUT_PROBLEM);
  state.warnings.push(
    `${cut.file}:${cut.line}: crash gap: a record cut short (the gateway was killed or crashed, ` +
      `or the disk filled, while writing it); the writer recovered at ${where}`,
  );
  state.cut = undefined;
  return undefined;
}

/**
 * Whether a record continues its writer's chain: the record its writer's first record links
 * to (undefined when there is none to name), or what is wrong with the link.
 */
function linkOf(
  state: Verification,
  { seq, prev, writer }: RecordShape,
): { readonly seq: number; readonly writer: string } | undefined | string {
  const last = state.writers.get(writer);
  if (last !== undefined) {
    if (seq !== last.seq + 1) {
      const why =
        seq > last.seq + 1
          ? `${plural(seq - last.seq - 1, 'record')} of this writer ${seq - last.seq - 1 === 1 ? 'is' : 'are'} missing`
          : 'records are out of order or repeated';
      return `seq ${seq} follows seq ${last.seq} of writer ${writer}: ${why}`;
    }
    if (prev !== last.hash) {
      return (
        `prev is not the hash of writer ${writer}'s previous record (seq ${last.seq}): ` +
        'a record was removed, replaced or reordered'
      );
    }
    return undefined;
  }
  if (prev === GENESIS_HASH) {
    return seq === 0 ? undefined : `the record starts a chain but its seq is ${seq}, not 0`;
  }
  const link = state.known.get(prev);
  if (link !== undefined) {
    return seq === link.seq + 1
      ? link
      : `seq ${seq} does not follow seq ${link.seq} of the record it links to`;
  }
  if (state.fromGenesis)
    return 'prev links to no earlier record: the records before it were removed, or it was moved';
  state.unanchored++;
  return undefined;
}

/** The result once every line passed: a cut last line warned about, the checkpoints' verdict. */
function finishVerification(state: Verification, list: string[]): VerifyResult {
  const { cut, checkpoints } = state;
  if (cut !== undefined) {
    state.warnings.push(
      `${cut.file}:${cut.line}: the last record was cut short and nothing was written after it ` +
        '(the gateway was killed or crashed, or the disk filled, while writing it, and it has not written since)',
    );
  }
  let report: CheckpointReport | undefined;
  if (checkpoints !== undefined) {
    const end = checkpoints.finish();
    if ('problem' in end) {
      return fail(end.file ?? list[list.length - 1] ?? '', end.line ?? 0, end.seq ?? null, end.problem);
    }
    report = end;
  }
  return {
    ok: true,
    ...(report && { checkpoints: report }),
    records: state.records,
    writers: state.writers.size,
    files: list,
    fromGenesis: state.fromGenesis,
    firstSeq: state.firstSeq,
    unanchored: state.unanchored,
    lastHash: state.lastHash,
    warnings: state.warnings,
  };
}

/** Every record line starts so: `seq` is the writer's first member. */
const RECORD_START = '{"seq":';

/** Whether an unparsable line is the beginning of a record line (what a torn write leaves). */
function isCutRecord(text: string): boolean {
  return text.length >= RECORD_START.length ? text.startsWith(RECORD_START) : RECORD_START.startsWith(text);
}

/** The `seq` a cut record line had begun to write, when its digits are all there. */
function cutSeq(text: string): number | null {
  const match = /^\{"seq":(\d{1,15}),/.exec(text);
  return match?.[1] === undefined ? null : Number(match[1]);
}

function fail(file: string, line: number, seq: number | null, problem: string): VerifyFailure {
  return { ok: false, file, line, seq, problem };
}

function seqField(parsed: unknown): number | null {
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { seq } = parsed as Record<string, unknown>;
  return typeof seq === 'number' && Number.isSafeInteger(seq) ? seq : null;
}

interface RecordShape {
  readonly seq: number;
  readonly prev: string;
  readonly hash: string;
  readonly writer: string;
}

/** The chain fields of a parsed line, or what is wrong with them. */
function checkShape(parsed: unknown): RecordShape | string {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return 'not an audit record: not a JSON object';
  }
  const { seq, ts, writer, prev, hash, type } = parsed as Record<string, unknown>;
  const { sink, lost, firstSeq, lastSeq } = parsed as Record<string, unknown>;
  if (type === 'audit_gap' && typeof sink === 'string' && seq === undefined) {
    return (
      `the gateway told sink ${sink} that ${String(lost)} records (seq ${String(firstSeq)} to ${String(lastSeq)}) ` +
      'were not sent to it (its spool was full or could not be written): this copy of the trail is incomplete; ' +
      'the audit file has them'
    );
  }
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) return 'not an audit record: bad seq';
  if (typeof ts !== 'string') return 'not an audit record: bad ts';
  if (typeof writer !== 'string' || writer === '') return 'not an audit record: bad writer';
  if (!isHash(prev)) return 'not an audit record: bad prev';
  if (!isHash(hash)) return 'not an audit record: bad hash';
  if (typeof type !== 'string') return 'not an audit record: bad type';
  return { seq, prev, hash, writer };
}

/**
 * The text of `mcp-warden audit verify` (the caller picks the exit code from `result.ok`):
 * `file:line: seq N: problem`, or a `warning: file:line: ...` line per crash gap and then one
 * line saying what was checked and where the chain starts and ends.
 */
export function formatVerifyResult(result: VerifyResult): string {
  if (!result.ok) {
    const where = result.line > 0 ? `${result.file}:${result.line}` : result.file;
    const seq = result.seq === null ? '' : ` seq ${result.seq}:`;
    return `${where}:${seq} ${result.problem}`;
  }
  const parts = [
    `ok: ${plural(result.records, 'record')} from ${plural(result.writers, 'writer')} in ${plural(result.files.length, 'file')}`,
  ];
  if (result.records > 0) {
    parts.push(
      result.fromGenesis
        ? 'the chain is complete from its first record'
        : `the chain starts at seq ${String(result.firstSeq)}: earlier records were rotated away or removed` +
            (result.unanchored > 1
              ? ` (${result.unanchored} writers continue from records not present)`
              : ''),
    );
  }
  if (result.lastHash !== null) parts.push(`last hash ${result.lastHash}`);
  if (result.warnings.length > 0)
    parts.push(`${plural(result.warnings.length, 'crash gap')}, see the warnings above`);
  if (result.checkpoints !== undefined) parts.push(result.checkpoints.summary);
  return [...result.warnings.map((warning) => `warning: ${warning}`), parts.join('; ')].join('\n');
}
