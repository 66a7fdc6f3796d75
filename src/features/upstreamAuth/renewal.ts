/**
 * When a token is renewed, and whether a request waits for it. A token is renewed in the last
 * stretch of its life (a minute, or half of a lifetime shorter than two minutes), but while it
 * is still good the request that notices goes on with it and the renewal runs beside it: no call
 * waits on the authorization server for a token that would still have been taken. Only a token
 * at the very end of its life (five seconds, or a tenth of a short lifetime) holds the request
 * until the new one comes, since the server might refuse it by the time the request reaches it.
 */
export type Renewal = 'keep' | 'beside' | 'first';

export interface TokenLife {
  /** When the token expires, epoch milliseconds. */
  readonly expiresAt: number;
  /** How long it lived from when it was obtained, milliseconds. */
  readonly lifetime: number;
  /** How early before expiry renewal starts; default 60 s (capped at half the lifetime). */
  readonly aheadMs?: number;
}

const DEFAULT_AHEAD_MS = 60_000;
const LAST_MOMENTS_MS = 5_000;

/** What to do with a token of `life` at `now`. */
export function renewalOf(life: TokenLife, now: number): Renewal {
  const left = life.expiresAt - now;
  if (left > Math.min(life.aheadMs ?? DEFAULT_AHEAD_MS, life.lifetime / 2)) return 'keep';
  return left > Math.min(LAST_MOMENTS_MS, life.lifetime / 10) ? 'beside' : 'first';
}
