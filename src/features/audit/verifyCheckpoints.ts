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
 * a checkpoint kept elsewhere (the anchor) can tell.
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

/** Fed each record that passed the chain check, in order; `finish` after the last one. */
export interface CheckpointCheck {
  /** A problem with this record's checkpoint, or undefined. */
  record(record: Record<string, unknown>): string | undefined;
  /** What was proven, or why the trail fails. */
  finish(): CheckpointReport | string;
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

/** The check for `audit verify --key PUB [--anchor CHECKPOINT]`. */
export function createCheckpointCheck(options: {
  readonly key: KeyObject;
  readonly keyId: string;
  readonly anchor?: SignedCheckpoint;
}): CheckpointCheck {
  const { key, keyId, anchor } = options;
  let count = 0;
  let last: SignedCheckpoint | undefined;
  let after = 0;
  let anchored = false;
  return {
    record(record) {
      const checkpoint = signedCheckpointOf(record);
      if (checkpoint === undefined) {
        if (record['type'] === 'checkpoint') return 'a checkpoint record without its signed fields';
        after++;
        return undefined;
      }
      if (checkpoint.key !== keyId) {
        return `checkpoint signed by key ${checkpoint.key}, not by the given key ${keyId}: re-signed with another key, or the wrong public key was given`;
      }
      if (checkpoint.records !== checkpoint.seq) {
        return `checkpoint counts ${checkpoint.records} records but sits at seq ${checkpoint.seq}`;
      }
      if (!checkpointSignatureValid(checkpoint, checkpoint.sig, key)) {
        return 'checkpoint signature does not match: the checkpoint or the chain head it signs was changed, or it was signed by another key';
      }
      if (
        anchor !== undefined &&
        anchor.writer === checkpoint.writer &&
        anchor.seq === checkpoint.seq &&
        anchor.prev === checkpoint.prev &&
        anchor.sig === checkpoint.sig
      ) {
        anchored = true;
      }
      count++;
      last = checkpoint;
      after = 0;
      return undefined;
    },
    finish() {
      if (
        anchor !== undefined &&
        (anchor.key !== keyId || !checkpointSignatureValid(anchor, anchor.sig, key))
      ) {
        return `the anchor is not a checkpoint signed by the given key ${keyId}`;
      }
      if (last === undefined) {
        return `no checkpoint signed by key ${keyId} in the trail: nothing beyond the hash chain is proven (is audit.checkpoints set?)`;
      }
      if (anchor !== undefined && !anchored) {
        return (
          `the anchor checkpoint (writer ${anchor.writer}, seq ${anchor.seq}, ${anchor.ts}) is not in the trail: ` +
          'records were removed from its end (or the file holding the anchor was rotated away)'
        );
      }
      if (after > 0) {
        return (
          `${plural(after, 'record')} after the last checkpoint (seq ${last.seq}, ${last.ts}) ` +
          `${after === 1 ? 'is' : 'are'} not covered by a signature: the trail was cut after its last checkpoint, ` +
          'or a gateway is still writing it (it signs the next checkpoint at its interval and when it stops)'
        );
      }
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
    },
  };
}
