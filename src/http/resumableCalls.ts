import { sha256Hex } from '../lib/hash.js';
import type { SharedStore } from '../lib/store/sharedStore.js';

/**
 * The calls of 2025-11-25 sessions that another replica can take over when the one running
 * them dies, recorded in the store the replicas share.
 *
 * Each event the gateway writes on a call's SSE stream carries an id naming the replica that
 * runs the call, the call's request id and a position, so a host whose stream broke reconnects
 * (GET with `Last-Event-ID`, in the same session) and any replica can tell which call it asks
 * about. A call waiting for the gateway's own confirmation is recorded before the host sees the
 * question (the request as the host sent it, the question's id, whose session it is, until
 * when), so a survivor can run it once the user's answer comes: nothing had gone upstream. The
 * right to run it is claimed in the store, once: by the replica that asked when the answer
 * reaches it, or by one survivor; the other is told who took it.
 */
export interface ResumableCalls {
  /** This replica's tag, as in its session ids and the ids of its requests to hosts. */
  readonly replica: string;
  /** This replica's audit session, the name its records and messages give it. */
  readonly auditSession: string;
  /** How long a confirmation waits for the user: a record lives as long, and a minute more. */
  readonly waitMs: number;
  /** Records the call `request` of `session`, waiting for the answer to question `question`. */
  record(session: string, entry: PendingCall): Promise<void>;
  /**
   * Records anew, under this replica, a call it has just claimed from one that died, and gives
   * up its claim: the call waits here for the host's answer as it waited there, so that should
   * this replica die too, a third can take it over (this one claims it again before running
   * it). The host's answer, when one was kept, stays beside the record. Rejects when this
   * replica no longer holds the claim.
   */
  hold(session: string, entry: PendingCall): Promise<void>;
  /**
   * Claims the call `requestId` of `session` for this replica: its record and the host's answer
   * when one was kept for it, or who claimed it first, or undefined when none was recorded.
   * `from` is the replica the host last heard from about the call: a call since held by another
   * replica (which took it over) is that one's, and is not claimed here.
   */
  claim(session: string, requestId: RequestId, from: string): Promise<Claim>;
  /**
   * Keeps the host's answer to question `question` of `session`, whose replica is gone, for the
   * replica that takes the call over; resolves to the one that already did, or that holds the
   * call waiting after taking it over, if any (the answer is sent on to it).
   */
  keepAnswer(session: string, question: string, answer: unknown): Promise<ReplicaName | undefined>;
  /** Claims the call `requestId` of `session` for its host, which cancelled it: no one takes it over. */
  cancel(session: string, requestId: RequestId): Promise<void>;
}

type RequestId = string | number;

/** What is recorded of a call waiting for its confirmation. */
export interface PendingCall {
  /** The host's request as it sent it (method, params, id). */
  readonly request: { readonly id: RequestId; readonly method: string; readonly params?: unknown };
  /** The id of the question the host was asked (tagged with the asking replica). */
  readonly question: string;
  /** A digest of the principal whose session it is. */
  readonly owner: string;
  /** The asking replica's audit session. */
  readonly askedBy: string;
  /** When the confirmation's wait ends (ms since the epoch). */
  readonly expiresAt: number;
}

/** A replica as the others know it: its tag (its channel) and its audit session. */
export interface ReplicaName {
  readonly replica: string;
  readonly auditSession: string;
}

export type Claim =
  { readonly mine: PendingCall; readonly answer?: unknown } | { readonly takenBy: ReplicaName } | undefined;

/** Who claims a call its host cancelled (no replica's tag is `-`). */
export const HOST_CANCELLED: ReplicaName = Object.freeze({ replica: '-', auditSession: 'host' });

const nameText = (name: ReplicaName): string => `${name.replica} ${name.auditSession}`;
function nameOf(text: unknown): ReplicaName | undefined {
  if (typeof text !== 'string') return undefined;
  const [replica, auditSession] = text.split(' ');
  if (replica === HOST_CANCELLED.replica) return HOST_CANCELLED;
  return replica === undefined || auditSession === undefined ? undefined : { replica, auditSession };
}

/**
 * The keys of one call's record: the record, who claimed it, the answer kept, and the replica
 * that holds it waiting after taking it over (where a host's answer is sent on).
 */
function keysOf(
  session: string,
  requestId: RequestId,
): { call: string; by: string; answer: string; holder: string } {
  const base = `resume:${sha256Hex(`${session}\u0000${JSON.stringify(requestId)}`)}`;
  return { call: `${base}:call`, by: `${base}:by`, answer: `${base}:answer`, holder: `${base}:holder` };
}
const questionKey = (session: string, question: string): string =>
  `resume-question:${sha256Hex(`${session}\u0000${question}`)}`;

/** After its wait, a record is kept this much longer, so a late claim learns who took the call. */
const AFTER_WAIT_MS = 60_000;

export function sharedResumableCalls(
  store: SharedStore,
  names: { readonly replica: string; readonly auditSession: string; readonly waitMs: number },
): ResumableCalls {
  return {
    ...names,
    async record(session, entry) {
      const keys = keysOf(session, entry.request.id);
      const ttl = String(Math.max(1, entry.expiresAt - Date.now()) + AFTER_WAIT_MS);
      await store.script(
        RECORD,
        [keys.call, questionKey(session, entry.question)],
        [JSON.stringify(entry), JSON.stringify(entry.request.id), ttl],
      );
    },
    async hold(session, entry) {
      const keys = keysOf(session, entry.request.id);
      const ttl = String(Math.max(1, entry.expiresAt - Date.now()) + AFTER_WAIT_MS);
      const held = await store.script(
        HOLD,
        [keys.call, keys.by, keys.answer, keys.holder, questionKey(session, entry.question)],
        [JSON.stringify(entry), JSON.stringify(entry.request.id), ttl, nameText(names)],
      );
      if (held !== 1) throw new Error('another replica or the host claimed the call first');
    },
    async claim(session, requestId, from) {
      const keys = keysOf(session, requestId);
      const reply = await store.script(
        CLAIM,
        [keys.call, keys.by, keys.answer, keys.holder],
        [nameText(names), from],
      );
      if (!Array.isArray(reply)) return undefined;
      const [kind, value, answer] = reply as [string, string, string | undefined];
      if (kind !== 'mine') {
        const takenBy = nameOf(value);
        return takenBy === undefined ? undefined : { takenBy };
      }
      const mine = JSON.parse(value) as PendingCall;
      return answer === undefined || answer === ''
        ? { mine }
        : { mine, answer: JSON.parse(answer) as unknown };
    },
    async cancel(session, requestId) {
      const keys = keysOf(session, requestId);
      await store.script(
        CLAIM,
        [keys.call, keys.by, keys.answer, keys.holder],
        [nameText(HOST_CANCELLED), ''],
      );
    },
    async keepAnswer(session, question, answer) {
      const requestIdText = await store.get(questionKey(session, question));
      if (requestIdText === undefined) return undefined;
      const keys = keysOf(session, JSON.parse(requestIdText) as RequestId);
      const by = await store.script(
        KEEP_ANSWER,
        [keys.call, keys.by, keys.answer, keys.holder],
        [JSON.stringify(answer)],
      );
      return nameOf(by);
    },
  };
}

/** Writes a call's record and the index from its question to it, for as long as it may wait. */
const RECORD = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1
`;

/**
 * Records a call anew for the replica ARGV[4] that claimed it, and frees the claim, in one step:
 * only while that replica still holds it. The answer kept and the question's index live as long.
 */
const HOLD = `
if redis.call('GET', KEYS[2]) ~= ARGV[4] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('SET', KEYS[4], ARGV[4], 'PX', ARGV[3])
redis.call('SET', KEYS[5], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
return 1
`;

/**
 * Claims a call for ARGV[1] unless another claimed it first: then names that one. The claim
 * and the answer kept for it are read in the same step as the answer is written (KEEP_ANSWER),
 * so an answer is either found here or sent on to whoever claimed, never neither. A call held
 * by a replica that took it over is claimed only by one coming from that replica (ARGV[2], the
 * host's stream named it; empty for the host's own cancellation): of two survivors resuming a
 * stream of the replica that died, the second finds the call held by the first.
 */
const CLAIM = `
local call = redis.call('GET', KEYS[1])
if not call then return false end
local holder = redis.call('GET', KEYS[4])
if holder and ARGV[2] ~= '' and string.sub(holder, 1, #ARGV[2] + 1) ~= ARGV[2] .. ' ' then
  return {'taken', holder}
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 1 then ttl = 1 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ttl) then
  local answer = redis.call('GET', KEYS[3])
  if answer then return {'mine', call, answer} end
  return {'mine', call}
end
return {'taken', redis.call('GET', KEYS[2])}
`;

/**
 * Keeps the host's answer beside a call's record; returns who claimed the call, if anyone has,
 * else the replica holding it after a takeover, if one does (the answer goes on there too).
 */
const KEEP_ANSWER = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 1 then return false end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ttl)
local by = redis.call('GET', KEYS[2])
if by then return by end
return redis.call('GET', KEYS[4])
`;

/**
 * The id of an event on a call's stream: `mcpw1`, the tag of the replica running the call, its
 * audit session, the call's request id (its JSON, base64url) and the event's position; the last
 * event of a stream (its answer) has position `end`.
 */
export interface StreamPosition {
  readonly replica: string;
  readonly auditSession: string;
  readonly requestId: RequestId;
  readonly position: number | 'end';
}

const EVENT_ID =
  /^mcpw1\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{1,400})\.(\d{1,9}|end)$/;

export function eventIdOf(position: StreamPosition): string {
  const id = Buffer.from(JSON.stringify(position.requestId)).toString('base64url');
  return `mcpw1.${position.replica}.${position.auditSession}.${id}.${position.position}`;
}

/** The stream position a `Last-Event-ID` names, or undefined when it is not one of ours. */
export function positionOf(eventId: string): StreamPosition | undefined {
  const match = EVENT_ID.exec(eventId);
  if (match === null) return undefined;
  let requestId: unknown;
  try {
    requestId = JSON.parse(Buffer.from(match[3]!, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof requestId !== 'string' && !Number.isSafeInteger(requestId)) return undefined;
  return {
    replica: match[1]!,
    auditSession: match[2]!,
    requestId: requestId as RequestId,
    position: match[4] === 'end' ? 'end' : Number(match[4]),
  };
}
