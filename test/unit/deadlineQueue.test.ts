import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineQueue, type DeadlineEntry } from '../../src/core/rpc/deadlines.js';

/** An entry that records when it expired. */
function entry(name: string, log: string[]): DeadlineEntry {
  return {
    deadline: 0,
    queued: false,
    prevEntry: undefined,
    nextEntry: undefined,
    expired: (now) => log.push(`${name}@${now}`),
  };
}

describe('DeadlineQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires entries at their deadlines, in order, on one timer', async () => {
    const log: string[] = [];
    const queue = new DeadlineQueue();
    const [a, b, c] = ['a', 'b', 'c'].map((n) => entry(n, log));
    queue.schedule(a!, 100);
    await vi.advanceTimersByTimeAsync(10);
    queue.schedule(b!, 110);
    queue.schedule(c!, 110);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(89);
    expect(log).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(log).toEqual(['a@100']);
    await vi.advanceTimersByTimeAsync(10);
    expect(log).toEqual(['a@100', 'b@110', 'c@110']);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never expires a removed entry, and leaves no timer once empty', async () => {
    const log: string[] = [];
    const queue = new DeadlineQueue();
    const [a, b] = ['a', 'b'].map((n) => entry(n, log));
    queue.schedule(a!, 100);
    queue.schedule(b!, 200);
    queue.remove(a!);
    queue.remove(a!);
    await vi.advanceTimersByTimeAsync(150);
    expect(log).toEqual([]);
    queue.remove(b!);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(100);
    expect(log).toEqual([]);
  });

  it('moves an entry that is scheduled again, earlier or later, and re-arms for an earlier head', async () => {
    const log: string[] = [];
    const queue = new DeadlineQueue();
    const [a, b, c] = ['a', 'b', 'c'].map((n) => entry(n, log));
    queue.schedule(a!, 100);
    queue.schedule(b!, 200);
    queue.schedule(a!, 300); // progress: later
    queue.schedule(c!, 50); // a shorter deadline than the head's
    await vi.advanceTimersByTimeAsync(300);
    expect(log).toEqual(['c@50', 'b@200', 'a@300']);
  });

  it('fires no later than the deadline however the head changed', async () => {
    const log: string[] = [];
    const queue = new DeadlineQueue();
    const entries = Array.from({ length: 5 }, (_, i) => entry(String(i), log));
    entries.forEach((e, i) => queue.schedule(e, 1000 + i * 10));
    queue.remove(entries[0]!);
    queue.remove(entries[1]!);
    await vi.advanceTimersByTimeAsync(1020);
    expect(log).toEqual(['2@1020']);
  });

  it('keeps time with a monotonic clock: a wall clock set back does not delay expiry', async () => {
    const log: string[] = [];
    const queue = new DeadlineQueue();
    queue.schedule(entry('a', log), performance.now() + 100);
    vi.setSystemTime(Date.now() - 60_000);
    await vi.advanceTimersByTimeAsync(100);
    expect(log).toEqual(['a@100']);
  });
});
