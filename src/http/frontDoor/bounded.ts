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
