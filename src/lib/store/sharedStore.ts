/**
 * A key-value store that several gateway processes share (Redis, or a server that speaks its
 * protocol). What replicas must agree on lives there: rate-limit buckets, the one-time use of
 * sealed request states, pending confirmations, sessions. Every operation is bounded in time
 * and fails with a `StoreError` rather than waiting: a caller decides whether to fail closed.
 *
 * Keys are given without the deployment's prefix; the store adds it. Every value is written
 * with a time to live, so nothing outlives what it is for.
 */
export interface SharedStore {
  /** The store's URL without its password, for messages. */
  readonly shown: string;
  /** Writes `value` under `key`, gone after `ttlMs`. */
  put(key: string, value: string, ttlMs: number): Promise<void>;
  /** The value under `key`, or undefined when there is none (or it expired). */
  get(key: string): Promise<string | undefined>;
  /** The value under `key`, removed in the same step: of several callers, one gets it. */
  take(key: string): Promise<string | undefined>;
  /** Removes `key` (nothing when it is not there). */
  delete(key: string): Promise<void>;
  /** Runs a Lua script atomically on `keys` (prefixed here) with `args`; its reply as Redis gives it. */
  script(source: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * Sends `message` to whoever listens on `channel` now (prefixed here) and says how many did:
   * nothing is kept for a listener that comes later.
   */
  publish(channel: string, message: string): Promise<number>;
  /**
   * Calls `listener` with each message published on `channel` from now on, over a connection of
   * its own that is opened again after an outage (messages sent while it is down are missed).
   * Resolves once listening, or fails with a `StoreError` when the store cannot be reached yet;
   * then it keeps trying in the background.
   */
  listen(channel: string, listener: (message: string) => void): Promise<void>;
  close(): Promise<void>;
}

/** A store operation that failed or did not finish in time. */
export class StoreError extends Error {
  override readonly name = 'StoreError';
}
