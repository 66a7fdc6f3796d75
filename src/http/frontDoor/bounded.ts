import { sha256Hex } from '../../lib/hash.js';
import type { SharedStore } from '../../lib/store/sharedStore.js';

/**
 * A map whose entries expire and whose size is capped: what the front door keeps between two
 * requests (registered hosts, sign-ins under way, codes, refresh tokens). When full, the entry
 * used longest ago goes first, so a flood of registrations or abandoned sign-ins costs memory
 * up to the cap and never more.
 */
export class BoundedMap<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();

  constructor(readonly max: number) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The value, if present and not expired; it becomes the most recently used. */
  get(key: string, now = Date.now()): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (entry.until <= now) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** The value, removed: what may be used once (a code, a sign-in's state, a refresh token). */
  take(key: string, now = Date.now()): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    return entry.until <= now ? undefined : entry.value;
  }

  set(key: string, value: V, until: number): void {
    this.#entries.delete(key);
    while (this.#entries.size >= this.max) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, until });
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }
}

/**
 * What the front door keeps from one request to a later one (a sign-in under way, a code, a
 * refresh token), each used once: in this process, or in the store replicas share, so that a
 * sign-in started through one replica can finish through another.
 */
export interface Kept<V> {
  set(key: string, value: V, until: number): Promise<void>;
  /** The value, removed in the same step (of several replicas asking, one gets it). */
  take(key: string): Promise<V | undefined>;
  delete(key: string): Promise<void>;
}

/** Kept in this process's memory, at most `max` at once. */
export function keptHere<V>(max: number): Kept<V> {
  const map = new BoundedMap<V>(max);
  return {
    set: (key, value, until) => Promise.resolve(map.set(key, value, until)),
    take: (key) => Promise.resolve(map.take(key)),
    delete: (key) => Promise.resolve(map.delete(key)),
  };
}

/**
 * Kept in the shared store under a digest of the key (the key is a secret a browser or host
 * presents: the store never holds it), each entry living as long as it is good for.
 */
export function keptInStore<V>(store: SharedStore, kind: string): Kept<V> {
  const at = (key: string): string => `front-door:${kind}:${sha256Hex(key)}`;
  return {
    set: (key, value, until) => store.put(at(key), JSON.stringify(value), until - Date.now()),
    async take(key) {
      const text = await store.take(at(key));
      return text === undefined ? undefined : (JSON.parse(text) as V);
    },
    delete: (key) => store.delete(at(key)),
  };
}
