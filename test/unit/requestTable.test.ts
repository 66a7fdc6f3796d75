import { describe, expect, it } from 'vitest';
import { RequestTable } from '../../src/core/rpc/requestTable.js';

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** Compares every key ever used, and the entries, with a Map given the same operations. */
function expectSame(
  table: RequestTable<{ key: string | number }>,
  model: Map<string | number, unknown>,
  keys: Set<string | number>,
) {
  for (const key of keys) expect(table.get(key)).toBe(model.get(key));
  expect(table.size).toBe(model.size);
  expect(new Set(table.entries())).toEqual(new Set(model.values()));
}

describe('RequestTable', () => {
  it('behaves as a Map for sequential ids, long-lived ones, strings and odd numbers', () => {
    const next = random(7);
    const table = new RequestTable<{ key: string | number }>(4);
    const model = new Map<string | number, { key: string | number }>();
    const keys = new Set<string | number>();
    const live: (string | number)[] = [];
    let id = 0;
    for (let step = 0; step < 20_000; step++) {
      const roll = next();
      if (roll < 0.45 || live.length === 0) {
        // Mostly sequential integers; now and then a string, a negative, a fraction, a huge one,
        // or an id reused while the first is still in flight.
        const kind = next();
        const key =
          kind < 0.85
            ? id++
            : kind < 0.9
              ? `s${id++}`
              : kind < 0.93
                ? -id++
                : kind < 0.95
                  ? id++ + 0.5
                  : kind < 0.97
                    ? 2 ** 40 + id++
                    : live[Math.floor(next() * live.length)]!;
        const value = { key };
        table.set(key, value);
        if (!model.has(key)) live.push(key);
        model.set(key, value);
        keys.add(key);
      } else {
        // Finish a recent one mostly, an old one sometimes (which then lives across many ids).
        const at = next() < 0.9 ? live.length - 1 - Math.floor(next() * Math.min(40, live.length)) : 0;
        const [key] = live.splice(at, 1);
        expect(table.delete(key!)).toBe(model.delete(key!));
        expect(table.delete(key!)).toBe(false);
      }
      if (step % 997 === 0) expectSame(table, model, keys);
    }
    expectSame(table, model, keys);
  });

  it('keeps an entry that stays in flight while thousands of later ids pass its slot', () => {
    const table = new RequestTable<string>(8);
    table.set(1, 'long-lived');
    for (let id = 2; id < 5000; id++) {
      table.set(id, `call ${id}`);
      expect(table.get(id)).toBe(`call ${id}`);
      table.delete(id);
    }
    expect(table.get(1)).toBe('long-lived');
    expect(table.size).toBe(1);
    expect(table.delete(1)).toBe(true);
    expect(table.size).toBe(0);
  });
});
