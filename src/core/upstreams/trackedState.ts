/**
 * A state with when it last changed, telling `changed` of every change: an upstream's, whose
 * changes the live view of the servers (`mcp-warden server list`) is written from.
 */
export class TrackedState<S extends string> {
  #value: S;
  #since = Date.now();

  constructor(
    initial: S,
    private readonly changed: () => void,
  ) {
    this.#value = initial;
  }

  get value(): S {
    return this.#value;
  }

  /** When `value` last changed (ms since the epoch). */
  get since(): number {
    return this.#since;
  }

  set(next: S): void {
    if (next === this.#value) return;
    this.#value = next;
    this.#since = Date.now();
    this.changed();
  }
}
