import { isHash } from '../../lib/hash.js';
import { lineHashes, type ChainHead } from './chain.js';
import { auditFileSet, readLinesSync } from './files.js';
import { GENESIS_HASH } from '../../core/events.js';
import { plural } from '../../lib/plural.js';

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
 * What a hash chain without a secret cannot catch: records cut from the end (compare
 * `lastHash` with one noted elsewhere), and a log rewritten whole with recomputed hashes.
 * A log that a gateway is writing to may end in a line still being copied in; verify reports
 * it as torn, so verify a log nobody is appending to.
 */
export function verifyAuditFiles(files: string[] | string): VerifyResult {
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
  /** Hash → seq of every record read so far: where a writer's first record may link. */
  const known = new Map<string, number>();
  let records = 0;
  let fromGenesis = false;
  let unanchored = 0;
  let firstSeq: number | null = null;
  let lastHash: string | null = null;

  for (const file of list) {
    try {
      for (const { text, number, terminated } of readLinesSync(file)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const seqOf = seqField(parsed);
        if (!terminated) {
          return fail(file, number, seqOf, 'the last line has no newline: a torn or cut record');
        }
        // An empty line holds nothing to check (a writer may leave one; see auditWriter.ts), and
        // removing a record's text leaves a gap in its chain that is reported below.
        if (text === '') continue;
        if (parsed === undefined) return fail(file, number, null, 'not valid JSON: a garbled or cut record');
        const shape = checkShape(parsed);
        if (typeof shape === 'string') return fail(file, number, seqOf, shape);
        const { seq, prev, hash, writer } = shape;
        const hashes = lineHashes(text);
        if (hashes === undefined || hashes.claimed !== hash) {
          return fail(file, number, seq, 'the record does not end with its "hash" member: it was rewritten');
        }
        if (hashes.actual !== hash) {
          return fail(file, number, seq, 'hash mismatch: the record was changed after it was written');
        }
        const last = writers.get(writer);
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
          const linked = known.get(prev);
          if (linked !== undefined) {
            if (seq !== linked + 1) {
              return fail(
                file,
                number,
                seq,
                `seq ${seq} does not follow seq ${linked} of the record it links to`,
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
        writers.set(writer, { seq, hash });
        known.set(hash, seq);
        lastHash = hash;
        records++;
      }
    } catch (error) {
      return fail(file, 0, null, `cannot read: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return {
    ok: true,
    records,
    writers: writers.size,
    files: list,
    fromGenesis,
    firstSeq,
    unanchored,
    lastHash,
  };
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
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) return 'not an audit record: bad seq';
  if (typeof ts !== 'string') return 'not an audit record: bad ts';
  if (typeof writer !== 'string' || writer === '') return 'not an audit record: bad writer';
  if (!isHash(prev)) return 'not an audit record: bad prev';
  if (!isHash(hash)) return 'not an audit record: bad hash';
  if (typeof type !== 'string') return 'not an audit record: bad type';
  return { seq, prev, hash, writer };
}

/**
 * One line for `mcp-warden audit verify` (the caller picks the exit code from `result.ok`):
 * `file:line: seq N: problem`, or what was checked and where the chain starts and ends.
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
  return parts.join('; ');
}
