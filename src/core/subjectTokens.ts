import { inspect } from 'node:util';
import { principalKey, type Principal } from './principal.js';

/** Principals whose latest token is held at once; the one heard from longest ago goes first. */
const MAX_PRINCIPALS = 10_000;

interface Held {
  readonly token: string;
  /** The token's `exp` in milliseconds since the epoch, when it has one. */
  readonly expiresAt: number | undefined;
}

/**
 * The bearer token each principal last authenticated with at the HTTP listener, for the one use
 * that needs it: exchanging it at the identity provider for a token meant for an upstream (RFC
 * 8693). The listener writes each verified request's token here; the upstream OAuth client
 * reads a principal's when it exchanges. Nothing else can reach the tokens: they are in a
 * private field, and the object prints and serializes as a placeholder, so passing it through a
 * logger, an audit record or a telemetry attribute by mistake shows no token.
 */
export class SubjectTokens {
  readonly #held = new Map<string, Held>();
  readonly #now: () => number;
  /** The key of the principal whose token was remembered last (last in `#held`'s order). */
  #latest: string | undefined;

  constructor(options: { readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /** `token` was verified as `principal`'s just now: it is the one exchanged from here on. */
  remember(principal: Principal, token: string): void {
    const key = principalKey(principal);
    // The principal heard from last, with the same token again (a host's calls one after
    // another): it is already held, and already last in the order of use.
    if (key === this.#latest && this.#held.get(key)?.token === token) return;
    this.#latest = key;
    const held = this.#held.get(key);
    // Kept in order of use, so the one dropped when full is the principal heard from longest ago.
    this.#held.delete(key);
    if (held?.token === token) {
      this.#held.set(key, held);
      return;
    }
    if (this.#held.size >= MAX_PRINCIPALS) {
      const oldest = this.#held.keys().next();
      if (oldest.done !== true) this.#held.delete(oldest.value);
    }
    this.#held.set(key, { token, expiresAt: expiryOf(token) });
  }

  /**
   * `principal`'s latest token, when the listener has seen one; `expired` when that token has
   * expired since (the host has not sent a fresh one yet).
   */
  current(principal: Principal): { readonly token: string; readonly expired: boolean } | undefined {
    const held = this.#held.get(principalKey(principal));
    if (held === undefined) return undefined;
    return { token: held.token, expired: held.expiresAt !== undefined && held.expiresAt <= this.#now() };
  }

  toJSON(): string {
    return '[subject tokens]';
  }

  [inspect.custom](): string {
    return '[subject tokens]';
  }
}

/** A JWT's `exp` (already verified by the listener), in milliseconds; undefined for other tokens. */
function expiryOf(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
