import { describe, expect, it } from 'vitest';
import { IsoClock } from '../../src/features/audit/isoClock.js';

describe('IsoClock', () => {
  it('writes every millisecond as toISOString does, across second, minute, hour, day and year ends', () => {
    const clock = new IsoClock();
    const ends = [
      Date.UTC(2026, 10, 27, 4, 38, 59, 990),
      Date.UTC(2026, 10, 27, 23, 59, 59, 950),
      Date.UTC(2026, 11, 31, 23, 59, 59, 900),
      Date.UTC(2028, 1, 28, 23, 59, 59, 990),
      Date.UTC(1970, 0, 1, 0, 0, 0, 0),
    ];
    for (const start of ends) {
      // Every millisecond of the 0.2 s around each end, in order, as a writer meets them.
      for (let ms = start - 100; ms < start + 100; ms++) {
        if (ms < 0) continue;
        expect(clock.at(ms)).toBe(new Date(ms).toISOString());
      }
    }
  });

  it('matches toISOString for times in any order, repeated, and for the years it does not shorten', () => {
    const clock = new IsoClock();
    const times = [
      0,
      59_999,
      60_000,
      Date.UTC(2026, 10, 27, 4, 38, 5, 7),
      Date.UTC(2026, 10, 27, 4, 38, 5, 7),
      Date.UTC(2026, 10, 27, 4, 38, 45, 70),
      Date.UTC(2026, 10, 27, 4, 37, 45, 700),
      -1,
      -60_001,
      Date.UTC(12000, 0, 1, 0, 0, 1, 5),
      Date.UTC(12000, 0, 1, 0, 0, 2, 5),
      1.5,
      2.75,
      Date.UTC(2026, 10, 27, 4, 38, 5, 8),
    ];
    let seed = 7;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      times.push(Date.UTC(2026, 10, 27) + (seed % 7_200_000));
    }
    for (const ms of times) expect(clock.at(ms)).toBe(new Date(ms).toISOString());
  });

  it('now() is the present time', () => {
    const before = Date.now();
    const text = new IsoClock().now();
    const after = Date.now();
    const ms = Date.parse(text);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
    expect(text).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});
