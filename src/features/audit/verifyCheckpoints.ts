import type { KeyObject } from 'node:crypto';
import { isHash } from '../../lib/hash.js';
import { plural } from '../../lib/plural.js';
import { checkpointSignatureValid, type CheckpointFields } from './checkpoint.js';

/*
 * What `audit verify --key` adds to the hash chain check. The chain says the records agree with
 * each other; a checkpoint signed with the gateway's key says the chain head it names is the one
 * the gateway wrote, so every record the chain reaches back to is as written (a rewrite with fresh
 * hashes changes the head). Records after the last checkpoint are not covered and fail the check:
 * cutting the end off a trail leaves exactly that, or leaves an earlier checkpoint last, which only
 * a checkpoint kept elsewhere (the anchor) can tell. A checkpoint vouches only for the chain it
 * signs: records of a chain that no checkpoint reaches fail too, wherever they sit.
 */

/** A checkpoint as read from the trail or from an anchor: the signed fields and the signature. */
export interface SignedCheckpoint extends CheckpointFields {
  readonly key: string;
  readonly sig: string;
}

export interface CheckpointReport {
  /** Valid checkpoints seen. */
  readonly count: number;
  readonly last: { readonly writer: string; readonly seq: number; readonly ts: string };
  /** Whether the anchor was given and found. */
  readonly anchored: boolean;
  /** One line for the verify output. */
  readonly summary: string;
}

/** Where a record sits in the trail, and what its chain continues. */
export interface RecordPlace {
  readonly file: string;
  /** 1-based line. */
  readonly line: number;
  /**
   * For a writer's first record that continues a record read before it (a gateway starting on
   * an existing trail): that record's writer and `seq`. A checkpoint of this writer then vouches
   * for the other writer's records up to that one too.
   */
  readonly link?: { readonly writer: string; readonly seq: number };
}

/** Why the checkpoints do not cover the trail, at the first record concerned when there is one. */
export interface CheckpointFailure {
  readonly file?: string;
  readonly line?: number;
  readonly seq?: number;
  readonly problem: string;
}

/** Fed each record that passed the chain check, in order; `finish` after the last one. */
export interface CheckpointCheck {
  /** A problem with this record's checkpoint, or undefined. */
  record(record: Record<string, unknown>, place: RecordPlace): string | undefined;
  /** What was proven, or why the trail fails. */
  finish(): CheckpointReport | CheckpointFailure;
}

/** The signed fields of a parsed checkpoint record, or undefined when it is not one. */
export function signedCheckpointOf(record: Record<string, unknown>): SignedCheckpoint | undefined {
  const { type, writer, seq, ts, prev, records, key, sig } = record;
  if (type !== 'checkpoint') return undefined;
  if (typeof writer !== 'string' || typeof ts !== 'string' || !isHash(prev)) return undefined;
  if (typeof seq !== 'number' || typeof records !== 'number') return undefined;
  if (typeof key !== 'string' || typeof sig !== 'string') return undefined;
  return { writer, seq, ts, prev, records, key, sig };
}

/**
 * Reads an anchor: a checkpoint record as the gateway wrote it (one JSON line, or a JSON file), or
 * an OCSF event that carries it in `raw_data`. When several lines are given, the last
 * checkpoint among them is the anchor. Returns what is wrong as a string.
 */
export function parseAnchor(text: string): SignedCheckpoint | string {
  const candidates = [text, ...text.split('\n').reverse()];
  for (const candidate of candidates) {
    const trimmed = candidate.trim();
    if (!trimmed.startsWith('{')) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      continue;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) continue;
    let record = parsed as Record<string, unknown>;
    const raw = record['raw_data'];
    if (typeof raw === 'string') {
      try {
        record = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        continue;
      }
    }
    const checkpoint = signedCheckpointOf(record);
    if (checkpoint !== undefined) return checkpoint;
  }
  return 'the anchor holds no checkpoint record (a JSON object with "type":"checkpoint", or an OCSF event whose raw_data is one)';
}

/** One writer's chain as the check saw it. */
interface WriterCoverage {
  /** Position of the writer's first record among the writers, in trail order. */
  readonly order: number;
  readonly firstSeq: number;
  /** How many records of the trail had been read at the writer's first, itself included. */
  readonly firstAt: number;
  readonly link: RecordPlace['link'];
  /** `seq` of the writer's last valid checkpoint, -1 before its first. */
  signedSeq: number;
  /** The writer's records after its last checkpoint, in order: not vouched for by its own signature. */
  unsigned: Array<{ readonly seq: number; readonly file: string; readonly line: number }>;
}

/** What the checkpoint check was given, and what it has seen so far. */
interface CheckState {
  readonly key: KeyObject;
  readonly keyId: string;
  readonly anchor: SignedCheckpoint | undefined;
  /** Valid checkpoints seen, and the last of them. */
  count: number;
  last: SignedCheckpoint | undefined;
  /** Records read, and how many had been read when the last valid checkpoint was. */
  read: number;
  lastCheckpointAt: number;
  anchored: boolean;
  readonly writers: Map<string, WriterCoverage>;
}

/** The check for `audit verify --key PUB [--anchor CHECKPOINT]`. */
export function createCheckpointCheck(options: {
  readonly key: KeyObject;
  readonly keyId: string;
  readonly anchor?: SignedCheckpoint;
}): CheckpointCheck {
  const state: CheckState = {
    key: options.key,
    keyId: options.keyId,
    anchor: options.anchor,
    count: 0,
    last: undefined,
    read: 0,
    lastCheckpointAt: -1,
    anchored: false,
    writers: new Map(),
  };
  return {
    record: (record, place) => checkRecord(state, record, place),
    finish: () => finishCheck(state),
  };
}

/** The coverage of `writer`'s chain, begun at this record when it is the writer's first. */
function coverageOf(state: CheckState, writer: string, seq: number, place: RecordPlace): WriterCoverage {
  let coverage = state.writers.get(writer);
  if (coverage === undefined) {
    coverage = {
      order: state.writers.size,
      firstSeq: seq,
      firstAt: state.read,
      link: place.link,
      signedSeq: -1,
      unsigned: [],
    };
    state.writers.set(writer, coverage);
  }
  return coverage;
}

function checkRecord(
  state: CheckState,
  record: Record<string, unknown>,
  place: RecordPlace,
): string | undefined {
  state.read++;
  const writer = String(record['writer']);
  const seq = Number(record['seq']);
  const coverage = coverageOf(state, writer, seq, place);
  const checkpoint = signedCheckpointOf(record);
  if (checkpoint === undefined) {
    if (record['type'] === 'checkpoint') return 'a checkpoint record without its signed fields';
    coverage.unsigned.push({ seq, file: place.file, line: place.line });
    return undefined;
  }
  const problem = checkpointProblem(state, checkpoint);
  if (problem !== undefined) return problem;
  const { anchor } = state;
  if (
    anchor !== undefined &&
    anchor.writer === checkpoint.writer &&
    anchor.seq === checkpoint.seq &&
    anchor.prev === checkpoint.prev &&
    anchor.sig === checkpoint.sig
  ) {
    state.anchored = true;
  }
  state.count++;
  state.last = checkpoint;
  state.lastCheckpointAt = state.read;
  coverage.signedSeq = checkpoint.seq;
  coverage.unsigned = [];
  return undefined;
}

/** Why a checkpoint of the trail vouches for nothing, or undefined when it is valid. */
function checkpointProblem(state: CheckState, checkpoint: SignedCheckpoint): string | undefined {
  const { keyId } = state;
  if (checkpoint.key !== keyId) {
    return `checkpoint signed by key ${checkpoint.key}, not by the given key ${keyId}: re-signed with another key, or the wrong public key was given`;
  }
  if (checkpoint.records !== checkpoint.seq) {
    return `checkpoint counts ${checkpoint.records} records but sits at seq ${checkpoint.seq}`;
  }
  if (!checkpointSignatureValid(checkpoint, checkpoint.sig, state.key)) {
    return 'checkpoint signature does not match: the checkpoint or the chain head it signs was changed, or it was signed by another key';
  }
  return undefined;
}

function finishCheck(state: CheckState): CheckpointReport | CheckpointFailure {
  const { anchor, keyId, last, count, anchored } = state;
  if (
    anchor !== undefined &&
    (anchor.key !== keyId || !checkpointSignatureValid(anchor, anchor.sig, state.key))
  ) {
    return { problem: `the anchor is not a checkpoint signed by the given key ${keyId}` };
  }
  if (last === undefined) {
    return {
      problem: `no checkpoint signed by key ${keyId} in the trail: nothing beyond the hash chain is proven (is audit.checkpoints set?)`,
    };
  }
  if (anchor !== undefined && !anchored) {
    return {
      problem:
        `the anchor checkpoint (writer ${anchor.writer}, seq ${anchor.seq}, ${anchor.ts}) is not in the trail: ` +
        'records were removed from its end (or the file holding the anchor was rotated away)',
    };
  }
  const uncovered = uncoveredRecords(state.writers, state.lastCheckpointAt, keyId, last);
  if (uncovered !== undefined) return uncovered;
  const summary =
    `${plural(count, 'checkpoint')} signed by key ${keyId}; every record up to the last one (seq ${last.seq}, ${last.ts}) is as written` +
    (anchor === undefined
      ? ''
      : `; the anchor (seq ${anchor.seq}, ${anchor.ts}) is in the trail, so nothing up to it was removed`);
  return {
    count,
    last: { writer: last.writer, seq: last.seq, ts: last.ts },
    anchored,
    summary,
  };
}

/**
 * The records no checkpoint vouches for, as a failure, or undefined when every record is covered.
 *
 * A checkpoint signs its writer's chain head, so it vouches for that writer's records up to it
 * and, through the record the writer's chain started from, for the other writer's records up to
 * that one (and so on back). Another writer's checkpoint vouches for nothing of a writer it does
 * not reach: a chain made up from genesis and slipped into the trail is chained correctly, and only
 * this tells it from the gateway's records.
 *
 * A writer none of whose records is vouched for, with a checkpoint after them, is reported first:
 * no gateway holding the key wrote them. Records after their writer's last checkpoint (or of a
 * writer that has not signed yet, after the trail's last checkpoint) are not yet anchored: the
 * gateway is still writing, or stopped without signing, or they were appended.
 */
function uncoveredRecords(
  writers: ReadonlyMap<string, WriterCoverage>,
  lastCheckpointAt: number,
  keyId: string,
  last: SignedCheckpoint,
): CheckpointFailure | undefined {
  const coveredTo = new Map<string, number>();
  for (const [writer, coverage] of writers) coveredTo.set(writer, coverage.signedSeq);
  // A chain links only to records read before its first, so later writers hand coverage down to
  // earlier ones: one pass from the last writer to the first reaches every chain it vouches for.
  const byOrder = [...writers.entries()].sort((a, b) => b[1].order - a[1].order);
  for (const [writer, coverage] of byOrder) {
    const to = coveredTo.get(writer) ?? -1;
    if (coverage.link === undefined || to < coverage.firstSeq) continue;
    const { writer: earlier, seq } = coverage.link;
    coveredTo.set(earlier, Math.max(coveredTo.get(earlier) ?? -1, seq));
  }
  const forged: string[] = [];
  const pending: string[] = [];
  let first: CheckpointFailure | undefined;
  let firstPending: CheckpointFailure | undefined;
  for (const [writer, coverage] of writers) {
    const to = coveredTo.get(writer) ?? -1;
    const open = coverage.unsigned.filter((record) => record.seq > to);
    const head = open[0];
    if (head === undefined) continue;
    const where = `${head.file}:${head.line}`;
    const none = to < coverage.firstSeq;
    if (none && coverage.firstAt < lastCheckpointAt) {
      forged.push(`writer ${writer} (${plural(open.length, 'record')} from ${where})`);
      first ??= { file: head.file, line: head.line, seq: head.seq, problem: '' };
    } else {
      pending.push(`writer ${writer} (${plural(open.length, 'record')} from ${where})`);
      firstPending ??= { file: head.file, line: head.line, seq: head.seq, problem: '' };
    }
  }
  if (first !== undefined) {
    return {
      ...first,
      problem:
        `records of ${forged.join(', ')} are covered by no checkpoint signed with key ${keyId}, though ` +
        'checkpoints follow them: no gateway holding the key wrote that chain (records inserted into the trail)' +
        (pending.length > 0 ? `; not yet anchored as well: ${pending.join(', ')}` : ''),
    };
  }
  if (firstPending !== undefined) {
    return {
      ...firstPending,
      problem:
        `not yet anchored: ${pending.join(', ')} after the last checkpoint of ${pending.length === 1 ? 'its' : 'their'} writer ` +
        `(the trail's last: seq ${last.seq}, ${last.ts}) ${pending.length === 1 ? 'is' : 'are'} not covered by a signature: ` +
        'the trail was cut after its last checkpoint, or a gateway is still writing it (it signs the next checkpoint ' +
        'at its interval and when it stops), or stopped without signing (killed)',
    };
  }
  return undefined;
}
