import { describe, expect, it } from 'vitest';
import { CrashLoopDetector, restartDelay } from '../../src/core/upstreams/backoff.js';

const config = { initialDelayMs: 500, maxDelayMs: 30_000, maxRestarts: 3, windowMs: 60_000 };

describe('restartDelay', () => {
  it.each([
    [0, 500],
    [1, 1000],
    [2, 2000],
    [5, 16_000],
    [6, 30_000],
    [100, 30_000],
  ])('attempt %i waits %i ms', (attempt, ms) => {
    expect(restartDelay(attempt, config)).toBe(ms);
  });
});

describe('CrashLoopDetector', () => {
  it('trips on the failure after maxRestarts inside the window', () => {
    const d = new CrashLoopDetector(config);
    expect([d.record(0), d.record(1000), d.record(2000)]).toEqual([false, false, false]);
    expect(d.record(3000)).toBe(true);
  });

  it('forgets failures older than the window', () => {
    const d = new CrashLoopDetector(config);
    d.record(0);
    d.record(1000);
    d.record(2000);
    expect(d.record(70_000)).toBe(false);
    expect(d.recent).toBe(1);
  });

  it('starts afresh after reset', () => {
    const d = new CrashLoopDetector(config);
    for (let i = 0; i < 3; i++) d.record(i);
    d.reset();
    expect(d.record(10)).toBe(false);
  });
});
