import { isHash } from '../../lib/hash.js';
import { lineHashes, type ChainHead } from './chain.js';
import { auditFileSet, readLinesSync } from './files.js';
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
 * (catches edits, down to a changed space). Per writer, each
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
export function verifyAuditFiles(files: string[] | string, checkpoints?: CheckpointCheck): VerifyResult {
  let list: string[];
  if (typeof files === 'string') {
    const set = auditFileSet(files);
    if (set.files.length === 0) return fail(files, 0, null, 'no such file');
    const missing = set.missing[0];
    if (missing !== undefined) {
      return fail(missing, 0, null, `rotated file is missing: ${set.missing.join(', ')} (removed?)`);
    }
    list = set.files;
  } else {
    list = files;
  }

  const writers = new Map<string, ChainHead>();
  /** Hash → seq and writer of every record read so far: where a writer's first record may link. */
  const known = new Map<string, { readonly seq: number; readonly writer: string }>();
  let records = 0;
  let fromGenesis = false;
  let unanchored = 0;
  let firstSeq: number | null = null;
  let lastHash: string | null = null;
  /** The last record read, any writer: a cut line's recovery must follow it. */
  let lastRecord: ChainHead | undefined;
  /** A cut line waiting for the next record to say whether it was a crash. */
  let cut: { file: string; line: number; seq: number | null; after: ChainHead | undefined } | undefined;
  const warnings: string[] = [];
  const cutProblem =
    "not valid JSON: a garbled or cut record, and the next record is not the writer's recovery " +
    '(an audit_gap record with torn: true chained to the record before the cut line): ' +
    'not a crash, the log was changed';

  for (const file of list) {
    try {
      for (const { text, number, terminated } of readLinesSync(file)) {
        // An empty line holds nothing to check (a writer may leave one; see auditWriter.ts), and
        // removing a record's text leaves a gap in its chain that is reported below.
        if (text === '') continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const seqOf = seqField(parsed);
        if (parsed === undefined) {
          if (cut !== undefined) return fail(cut.file, cut.line, null, cutProblem);
          if (!isCutRecord(text)) {
            return fail(
              file,
              number,
              null,
              'not valid JSON, and not the beginning of a record: a garbled line',
            );
          }
          cut = { file, line: number, seq: cutSeq(text), after: lastRecord };
          continue;
        }
        if (!terminated) {
          // A whole record whose newline was not written: nothing is lost, but say so.
          warnings.push(
            `${file}:${number}: the last record has no newline (the write was cut right before it)`,
          );
        }
        const shape = checkShape(parsed);
        if (typeof shape === 'string') return fail(file, number, seqOf, shape);
        const { seq, prev, hash, writer } = shape;
        if (cut !== undefined) {
          const after = cut.after ?? { seq: -1, hash: GENESIS_HASH };
          const record = parsed as Record<string, unknown>;
          const recovers =
            record.type === 'audit_gap' &&
            record.torn === true &&
            prev === after.hash &&
            seq === after.seq + 1 &&
            (cut.seq === null || cut.seq === seq);
          if (!recovers) return fail(cut.file, cut.line, null, cutProblem);
          warnings.push(
            `${cut.file}:${cut.line}: crash gap: a record cut short (the gateway was killed or crashed, ` +
              `or the disk filled, while writing it); the writer recovered at ${file}:${number}`,
          );
          cut = undefined;
        }
        const hashes = lineHashes(text);
        if (hashes === undefined || hashes.claimed !== hash) {
          return fail(file, number, seq, 'the record does not end with its "hash" member: it was rewritten');
        }
        if (hashes.actual !== hash) {
          return fail(file, number, seq, 'hash mismatch: the record was changed after it was written');
        }
        const last = writers.get(writer);
        let link: { readonly seq: number; readonly writer: string } | undefined;
        if (records === 0) {
          fromGenesis = prev === GENESIS_HASH;
          firstSeq = seq;
        }
        if (last !== undefined) {
          if (seq !== last.seq + 1) {
            const why =
              seq > last.seq + 1
                ? `${plural(seq - last.seq - 1, 'record')} of this writer ${seq - last.seq - 1 === 1 ? 'is' : 'are'} missing`
                : 'records are out of order or repeated';
            return fail(file, number, seq, `seq ${seq} follows seq ${last.seq} of writer ${writer}: ${why}`);
          }
          if (prev !== last.hash) {
            return fail(
              file,
              number,
              seq,
              `prev is not the hash of writer ${writer}'s previous record (seq ${last.seq}): ` +
                'a record was removed, replaced or reordered',
            );
          }
        } else if (prev === GENESIS_HASH) {
          if (seq !== 0)
            return fail(file, number, seq, `the record starts a chain but its seq is ${seq}, not 0`);
        } else {
          link = known.get(prev);
          if (link !== undefined) {
            if (seq !== link.seq + 1) {
              return fail(
                file,
                number,
                seq,
                `seq ${seq} does not follow seq ${link.seq} of the record it links to`,
              );
            }
          } else if (!fromGenesis) {
            unanchored++;
          } else {
            return fail(
              file,
              number,
              seq,
              'prev links to no earlier record: the records before it were removed, or it was moved',
            );
          }
        }
        const signed = checkpoints?.record(parsed as Record<string, unknown>, {
          file,
          line: number,
          ...(link && { link }),
        });
        if (signed !== undefined) return fail(file, number, seq, signed);
        writers.set(writer, { seq, hash });
        known.set(hash, { seq, writer });
        lastHash = hash;
        lastRecord = { seq, hash };
        records++;
      }
    } catch (error) {
      return fail(file, 0, null, `cannot read: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (cut !== undefined) {
    warnings.push(
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
    records,
    writers: writers.size,
    files: list,
    fromGenesis,
    firstSeq,
    unanchored,
    lastHash,
    warnings,
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

function fail(file: string, line: number, seq: number | null, problem: string): VerifyResult {
  return { ok: false, file, line, seq, problem };
}

function seqField(parsed: unknown): number | null {
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { seq } = parsed as Record<string, unknown>;
  return typeof seq === 'number' && Number.isSafeInteger(seq) ? seq : null;
}

/** The chain fields of a parsed line, or what is wrong with them. */
function checkShape(parsed: unknown): { seq: number; prev: string; hash: string; writer: string } | string {
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
