/**
 * A connection's requests in flight, by id: a `Map` in behaviour, built so that the garbage of
 * finished requests is collected young.
 *
 * Why not a `Map`: a Map that many entries pass through (one set and one delete per request)
 * is rebuilt every few dozen of them, and V8 leaves each table it replaces pointing at the
 * entries it held then and at the table that replaced it. Once a full collection has moved one
 * such table into the old generation, every later table and every request they ever held is
 * reachable from it during the young collections: in the gateway, about half of what each call
 * allocated survived them and was promoted, until the next full collection (measured with
 * `--trace-gc-nvp`: 3 MB promoted per young collection, 80 KB with this table). Here ids that
 * are 32-bit integers (ours are sequential; so are most hosts') live in slots of one array,
 * found by their low bits, and their slots are emptied when they finish; an entry whose slot
 * another id needs, and any other id (a string, a large or fractional number), waits in a
 * `Map` instead, which only the long-lived and the unusual ones pass through.
 */
export class RequestTable<T> {
  /** Slot `key & (slots.length - 1)` holds the entry with that key, when it is in the array. */
  private values: (T | undefined)[];
  private keys: number[];
  private readonly overflow = new Map<string | number, T>();
  private inSlots = 0;

  constructor(initialSlots = 64) {
    this.values = new Array<T | undefined>(initialSlots).fill(undefined);
    this.keys = new Array<number>(initialSlots).fill(0);
  }

  get size(): number {
    return this.inSlots + this.overflow.size;
  }

  get(key: string | number): T | undefined {
    if (isSlotted(key)) {
      const i = key & (this.values.length - 1);
      const value = this.values[i];
      if (value !== undefined && this.keys[i] === key) return value;
    }
    return this.overflow.size === 0 ? undefined : this.overflow.get(key);
  }

  /** Adds `value` under `key`, replacing an entry with the same key. */
  set(key: string | number, value: T): void {
    if (this.overflow.size > 0 && this.overflow.has(key)) {
      this.overflow.set(key, value);
      return;
    }
    if (!isSlotted(key)) {
      this.overflow.set(key, value);
      return;
    }
    // Kept at most half full, so that the ids in flight at once rarely share a slot.
    if (2 * (this.inSlots + 1) > this.values.length) this.grow();
    const i = key & (this.values.length - 1);
    const occupant = this.values[i];
    if (occupant === undefined) this.inSlots++;
    else if (this.keys[i] !== key) {
      // The entry there has been in flight while many others came and went: it moves aside.
      this.overflow.set(this.keys[i]!, occupant);
    }
    this.values[i] = value;
    this.keys[i] = key;
  }

  delete(key: string | number): boolean {
    if (isSlotted(key)) {
      const i = key & (this.values.length - 1);
      if (this.values[i] !== undefined && this.keys[i] === key) {
        this.values[i] = undefined;
        this.inSlots--;
        return true;
      }
    }
    return this.overflow.size > 0 && this.overflow.delete(key);
  }

  /** Every entry, as an array made now (entries may be deleted while the caller walks it). */
  entries(): T[] {
    const all: T[] = [];
    for (const value of this.values) if (value !== undefined) all.push(value);
    for (const value of this.overflow.values()) all.push(value);
    return all;
  }

  private grow(): void {
    const { values, keys } = this;
    this.values = new Array<T | undefined>(values.length * 2).fill(undefined);
    this.keys = new Array<number>(values.length * 2).fill(0);
    this.inSlots = 0;
    for (let j = 0; j < values.length; j++) {
      const value = values[j];
      if (value === undefined) continue;
      const key = keys[j]!;
      const i = key & (this.values.length - 1);
      if (this.values[i] === undefined) {
        this.values[i] = value;
        this.keys[i] = key;
        this.inSlots++;
      } else this.overflow.set(key, value);
    }
    // The old array may already be in the old generation: emptied, it holds nothing young.
    values.fill(undefined);
  }
}

/** Whether `key` is kept in a slot: a 32-bit integer. */
function isSlotted(key: string | number): key is number {
  return typeof key === 'number' && (key | 0) === key;
}
