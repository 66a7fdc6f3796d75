import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Session ids that say which replica made them, sealed with a key the replicas share.
 *
 * An id is `<replica>.<random>.<seal>` (base64url), the seal an HMAC-SHA256 of the rest. A
 * replica that receives an id it does not hold can tell at once whether a gateway with the
 * same key made it (another replica, or itself before a restart): then the session is gone from
 * here and the host gets 404 "session not found" and initializes again, instead of a request
 * that waits on state that is not here. An id without a valid seal was made up, and gets the same
 * 404 (nothing else to tell an attacker). Sticky routing on `Mcp-Session-Id` at the load balancer
 * keeps a session on its replica; the seal is what makes a miss fast and certain.
 */
export interface SessionIds {
  /** A new sealed id for a session on this replica. */
  mint(): string;
  /** What an id from a request is: ours, another replica's (same key), or not sealed by the key. */
  judge(id: string): 'this-replica' | 'other-replica' | 'unsealed';
}

/** Bytes of the HMAC kept in an id: 128 bits cannot be guessed. */
const SEAL_BYTES = 16;

/**
 * Ids sealed with `key` (any text of 32 characters or more; absent: a random key, so ids are
 * only recognised by this process). `replica` names this process; default random.
 */
export function createSessionIds(options: { key?: string; replica?: string } = {}): SessionIds {
  const key = options.key ?? randomBytes(32).toString('hex');
  const replica = options.replica ?? randomBytes(6).toString('base64url');
  const seal = (body: string) =>
    createHmac('sha256', key).update(body).digest().subarray(0, SEAL_BYTES).toString('base64url');
  return {
    mint() {
      const body = `${replica}.${randomBytes(16).toString('base64url')}`;
      return `${body}.${seal(body)}`;
    },
    judge(id) {
      const parts = id.split('.');
      if (parts.length !== 3) return 'unsealed';
      const body = `${parts[0]}.${parts[1]}`;
      const given = Buffer.from(parts[2]!, 'base64url');
      const expected = Buffer.from(seal(body), 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'unsealed';
      return parts[0] === replica ? 'this-replica' : 'other-replica';
    },
  };
}
