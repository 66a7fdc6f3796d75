import type { SharedStore } from '../../lib/store/sharedStore.js';

/** What one attempt at a lease came to: held, or not with how long until it is worth trying again. */
export type LeaseAttempt = { readonly held: true } | { readonly held: false; readonly retryInMs: number };

/**
 * Leases that replicas take in turn: one holder per key at a time, each holder known by a token
 * of its own, every lease gone after its time to live unless its holder renews it.
 */
export interface LeaseStorage {
  /**
   * Takes the lease on `key` for `token` for `ttlMs`, when nobody holds it and no earlier waiter
   * of another replica has claimed the next turn; otherwise claims the next turn for `token`
   * when nobody has (for `claimMs`), and says when the lease or the claim runs out.
   */
  acquire(key: string, token: string, ttlMs: number, claimMs: number): Promise<LeaseAttempt>;
  /**
   * Extends the lease by `ttlMs` if `token` still holds it, or takes it again when nobody holds
   * it (the store lost it, in a restart, or it ran out while the store did not answer: its holder
   * still runs); false when another holds it now.
   */
  renew(key: string, token: string, ttlMs: number): Promise<boolean>;
  /**
   * Gives the lease up if `token` holds it, and its claim on the next turn if it has one, and
   * tells every replica that the turn is free.
   */
  release(key: string, token: string): Promise<void>;
  /** Calls `listener` with each key any replica releases from now on. */
  onReleased(listener: (key: string) => void): Promise<void>;
}

/**
 * KEYS: the lease, the claim on its next turn. ARGV: token, lease ms, claim ms. Replies
 * {1} when taken, or {0, ms until the lease (or another's claim) runs out}. The claim makes the
 * turns fair between replicas: the replica that just released would otherwise win the next
 * turn every time, its own waiter being first to hear that the lease is free.
 */
const ACQUIRE = `
local holder = redis.call('GET', KEYS[1])
local claim = redis.call('GET', KEYS[2])
if not holder then
  if (not claim) or claim == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    if claim then redis.call('DEL', KEYS[2]) end
    return {1}
  end
  return {0, redis.call('PTTL', KEYS[2])}
end
if (not claim) or claim == ARGV[1] then redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3]) end
return {0, redis.call('PTTL', KEYS[1])}
`;

/**
 * KEYS: the lease. ARGV: token, ms. 1 when the token held it and it was extended, or nobody held
 * it and the token has it again; 0 when another token holds it.
 */
const RENEW = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`;

/**
 * KEYS: the lease, the claim on its next turn. ARGV: token. Drops whichever of the two the token
 * has (a waiter that gives up leaves its claim, so the next waiter need not wait for it to run
 * out); 1 when it dropped one.
 */
const RELEASE = `
local dropped = 0
for i = 1, 2 do
  if redis.call('GET', KEYS[i]) == ARGV[1] then dropped = dropped + redis.call('DEL', KEYS[i]) end
end
return math.min(dropped, 1)
`;

/** Where replicas say that a lease is free: the message is the lease's key. */
const RELEASED_CHANNEL = 'lease-released';

/**
 * Leases in the store replicas share. Each step is one script, atomic there; a released lease is
 * announced over publish/subscribe so waiters on other replicas try again at once (a message
 * lost in an outage costs a waiter only its next poll).
 */
export function storeLeases(store: SharedStore): LeaseStorage {
  return {
    async acquire(key, token, ttlMs, claimMs) {
      const reply = (await store.script(
        ACQUIRE,
        [`lease:${key}`, `lease-next:${key}`],
        [token, String(Math.ceil(ttlMs)), String(Math.ceil(claimMs))],
      )) as unknown[];
      if (reply[0] === 1) return { held: true };
      // PTTL is negative for a key that is gone (or has no expiry): worth trying again at once.
      return { held: false, retryInMs: Math.max(0, Number(reply[1])) };
    },
    async renew(key, token, ttlMs) {
      return (await store.script(RENEW, [`lease:${key}`], [token, String(Math.ceil(ttlMs))])) === 1;
    },
    async release(key, token) {
      if ((await store.script(RELEASE, [`lease:${key}`, `lease-next:${key}`], [token])) === 1)
        await store.publish(RELEASED_CHANNEL, key);
    },
    onReleased(listener) {
      return store.listen(RELEASED_CHANNEL, listener);
    },
  };
}
