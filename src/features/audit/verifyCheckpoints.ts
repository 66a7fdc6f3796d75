import type { KeyObject } from 'node:crypto';
import { isHash } from '../../lib/hash.js';
import { plural } from '../../lib/plural.js';
import { GENESIS_HASH } from '../../core/events.js';
import { checkpointMembersText, checkpointSignatureValid, type CheckpointFields } from './checkpoint.js';
import { sealSuffix } from './chain.js';
import { openRecordText, sessionMemberText, writerMembersText } from './lineBatch.js';

/*
 * What `audit verify --key` adds to the hash chain check. The chain says the records agree with
 * each other; a checkpoint signed with the gateway's key says the chain head it names is the one
 * the gateway wrote, so every record the chain reaches back to is as written (a rewrite with fresh
 * hashes changes the head). Records after the last checkpoint are not covered and fail the check:
 * cutting the end off a trail leaves exactly that, or leaves an earlier checkpoint last, which only
 * a checkpoint kept elsewhere (the anchor) can tell. A checkpoint vouches only for the chain it
 * signs: records of a chain that no checkpoint reaches fail too, wherever they sit.
 *
 * A signature names no trail, so a chain copied whole, checkpoints and all, from another trail
 * signed with the same key is signed as well as the trail's own. A chain from genesis is where
 * such a copy shows: a gateway starts one only on an empty trail, so after the trail's first
 * record a chain from genesis is genuine only when gateways started on the empty trail together,
 * which puts its first record before any checkpoint and within `GENESIS_RACE_MS` of the trail's
 * first (a record's `ts` is as signed as its text once a checkpoint covers it). A copied chain
 * that continues from a record not in the trail looks like a gateway's chain whose earlier
 * records were rotated away: those are named in the summary, not failed.
 */

/**
 * How far apart (by `ts`) the first records of two chains from genesis may be: gateways started
 * together on an empty trail each find it empty, and write their first record within moments of
 * each other; a minute leaves room for a loaded machine.
 */
const GENESIS_RACE_MS = 60_000;

/** The members a gateway writes into a checkpoint record; any other was added afterwards. */
const CHECKPOINT_MEMBERS = new Set([
  'seq',
  'ts',
  'type',
  'records',
  'key',
  'sig',
  'session',
  'host',
  'writer',
  'prev',
  'hash',
]);

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
  /** A problem with this record's checkpoint, or undefined; `text` is the record's line. */
  record(record: Record<string, unknown>, place: RecordPlace, text: string): string | undefined;
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
  /** How the chain begins here: from genesis, from a record read before it, or from one not in the trail. */
  readonly start: 'genesis' | 'link' | 'absent';
  /** Where its first record is. */
  readonly at: { readonly file: string; readonly line: number };
  /** `host` of its records (every record of a writer names the same). */
  readonly host: unknown;
  /** The type of its last record, and of the one before it. */
  lastType: unknown;
  beforeLastType: unknown;
  /** Where its last record is. */
  last: { readonly file: string; readonly line: number };
  /** Whether it wrote a `gateway_start`: a gateway's chain, which ends with `gateway_stop` and a checkpoint. */
  gateway: boolean;
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
  /** The trail's first record, when it starts a chain from genesis: its writer and `ts`. */
  origin: { readonly writer: string; readonly ts: number } | undefined;
  /** Chains from genesis that no gateway could have started here: copied from another trail. */
  readonly copied: string[];
  /** Where the first of them begins. */
  copiedAt: { readonly file: string; readonly line: number; readonly seq: number } | undefined;
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
    origin: undefined,
    copied: [],
    copiedAt: undefined,
  };
  return {
    record: (record, place, text) => checkRecord(state, record, place, text),
    finish: () => finishCheck(state),
  };
}

/** The coverage of `writer`'s chain, begun at this record when it is the writer's first. */
function coverageOf(state: CheckState, record: Record<string, unknown>, place: RecordPlace): WriterCoverage {
  const writer = String(record['writer']);
  let coverage = state.writers.get(writer);
  if (coverage === undefined) {
    const seq = Number(record['seq']);
    const start = place.link !== undefined ? 'link' : record['prev'] === GENESIS_HASH ? 'genesis' : 'absent';
    coverage = {
      order: state.writers.size,
      firstSeq: seq,
      firstAt: state.read,
      link: place.link,
      signedSeq: -1,
      unsigned: [],
      start,
      at: { file: place.file, line: place.line },
      host: record['host'],
      lastType: undefined,
      beforeLastType: undefined,
      last: { file: place.file, line: place.line },
      gateway: false,
    };
    state.writers.set(writer, coverage);
    if (start === 'genesis') checkGenesis(state, writer, Date.parse(String(record['ts'])), { ...place, seq });
  }
  return coverage;
}

/**
 * A chain from genesis after the trail's first record: genuine only when gateways started on the
 * empty trail together (before any checkpoint, within `GENESIS_RACE_MS` of the trail's first
 * record); any other was copied in from another trail.
 */
function checkGenesis(
  state: CheckState,
  writer: string,
  ts: number,
  place: { readonly file: string; readonly line: number; readonly seq: number },
): void {
  const { origin } = state;
  if (state.read === 1) {
    state.origin = { writer, ts };
    return;
  }
  const apart = origin === undefined ? NaN : Math.abs(ts - origin.ts);
  if (origin !== undefined && state.count === 0 && apart <= GENESIS_RACE_MS) return;
  const why =
    origin === undefined
      ? 'the trail does not begin at genesis'
      : state.count > 0
        ? 'after a checkpoint'
        : Number.isNaN(apart)
          ? 'with an unreadable ts'
          : `${Math.round(apart / 1000)} s from the trail's first record`;
  state.copied.push(`writer ${writer} from ${place.file}:${place.line} (${why})`);
  state.copiedAt ??= place;
}

function checkRecord(
  state: CheckState,
  record: Record<string, unknown>,
  place: RecordPlace,
  text: string,
): string | undefined {
  state.read++;
  const seq = Number(record['seq']);
  const coverage = coverageOf(state, record, place);
  coverage.beforeLastType = coverage.lastType;
  coverage.lastType = record['type'];
  coverage.last = { file: place.file, line: place.line };
  if (record['type'] === 'gateway_start') coverage.gateway = true;
  const checkpoint = signedCheckpointOf(record);
  if (checkpoint === undefined) {
    if (record['type'] === 'checkpoint') return 'a checkpoint record without its signed fields';
    coverage.unsigned.push({ seq, file: place.file, line: place.line });
    return undefined;
  }
  const problem = checkpointProblem(state, checkpoint) ?? unsignedMembersProblem(record, coverage, text);
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

/**
 * What is wrong with a checkpoint record beyond what its signature covers. A writer's last
 * checkpoint is usually the last record of its chain, so no later `prev` covers its text either,
 * and its own `hash` only agrees with whatever text it is given: a member added (say an `alg` some
 * reader might heed), a `host` rewritten, or the same values spelled otherwise (spaces, order,
 * `\u` escapes, `1.9e1` for 19) would pass unless the text must be exactly the gateway's. Its
 * `session` stays unproven.
 */
function unsignedMembersProblem(
  record: Record<string, unknown>,
  coverage: WriterCoverage,
  text: string,
): string | undefined {
  const extra = Object.keys(record).filter((member) => !CHECKPOINT_MEMBERS.has(member));
  if (extra.length > 0)
    return `checkpoint has members a gateway does not write (${extra.join(', ')}): the record was changed`;
  if (record['host'] !== coverage.host)
    return `checkpoint names host ${JSON.stringify(record['host'])}, its writer's records ${JSON.stringify(coverage.host)}: the record was changed`;
  if (text !== checkpointLine(record))
    return 'checkpoint is not written as a gateway writes one (its members reordered, spaced or spelled otherwise): the record was changed';
  return undefined;
}

/**
 * The line a writer makes of a checkpoint record with these members, built by the writer's own
 * functions: the checkpoint's members (checkpoint.ts), then the writer's session, host and id,
 * between the chain fields (lineBatch.ts), and the seal (chain.ts), without its newline.
 */
function checkpointLine(record: Record<string, unknown>): string {
  const members = checkpointMembersText(
    record['records'],
    record['key'],
    record['sig'],
    sessionMemberText(record['session']),
  );
  const open = openRecordText(
    Number(record['seq']),
    String(record['ts']),
    members,
    writerMembersText(record['host'], record['writer']),
    String(record['prev']),
  );
  return `${open}${sealSuffix(String(record['hash']))}`.slice(0, -1);
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
  const { copied, copiedAt } = state;
  if (copiedAt !== undefined) {
    return {
      ...copiedAt,
      problem:
        `a chain starts from genesis where no gateway could have started one: ${copied.join(', ')}. ` +
        'A gateway starts from genesis only on an empty trail (gateways started together may each do so, ' +
        'before any checkpoint and within a minute of each other), so these records come from another trail: ' +
        `copied in (a trail signed with key ${keyId} passes the signature check), or the trail was started anew ` +
        '(its files or spool removed) and the old records put back beside the new',
    };
  }
  // Chains that continue from a record not in the trail: the first is where the trail begins
  // after rotation; others are gateways whose earlier records rotated away, or chains copied
  // from another trail signed with the same key, which nothing here can tell apart.
  const absent = [...state.writers.entries()]
    .filter(([, coverage]) => coverage.start === 'absent' && coverage.order > 0)
    .map(([writer, coverage]) => `writer ${writer} from ${coverage.at.file}:${coverage.at.line}`);
  // A gateway's chain that ends in a checkpoint without its gateway_stop before it: the gateway is
  // running and idle, or was killed, or its records after that checkpoint were removed; with
  // several writers those can sit anywhere in the file, not only at its end.
  const unstopped = [...state.writers.entries()]
    .filter(([, c]) => c.gateway && c.lastType === 'checkpoint' && c.beforeLastType !== 'gateway_stop')
    .map(([writer, c]) => `writer ${writer} at ${c.last.file}:${c.last.line}`);
  const summary =
    `${plural(count, 'checkpoint')} signed by key ${keyId}; every record up to the last one (seq ${last.seq}, ${last.ts}) is as written` +
    (anchor === undefined
      ? '; records cut from after the last checkpoint would leave no trace (pass the latest checkpoint kept elsewhere as --anchor)'
      : `; the anchor (seq ${anchor.seq}, ${anchor.ts}) is in the trail, so nothing up to it was removed`) +
    (unstopped.length === 0
      ? ''
      : `; ${plural(unstopped.length, 'gateway chain')} (${unstopped.join(', ')}) end${unstopped.length === 1 ? 's' : ''} at a checkpoint ` +
        'without the gateway stopping: running, killed, or the records after that checkpoint were removed, which leaves no trace') +
    (absent.length === 0
      ? ''
      : `; ${plural(absent.length, 'chain')} (${absent.join(', ')}) continue${absent.length === 1 ? 's' : ''} from records not in the trail: ` +
        'earlier records rotated away, or copied in from another trail signed with this key (a key per trail rules that out)');
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
        'at its interval and when it stops), or stopped without signing (killed); removing them would leave no trace, ' +
        'since nothing signed names them',
    };
  }
  return undefined;
}
