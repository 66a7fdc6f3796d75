import { afterEach, describe, expect, it, vi } from 'vitest';
import { Sweeper } from '../../src/http/sweeper.js';

describe('Sweeper: one timer for many things that may fall due', () => {
  it('visits what was added each period until it is deleted, then stops its timer when nothing is left', async () => {
    const seen: string[] = [];
    const sweeper = new Sweeper<string>(10, (item) => seen.push(item));
    sweeper.add('a');
    sweeper.add('b');
    await expect.poll(() => seen.filter((s) => s === 'b').length).toBeGreaterThanOrEqual(2);
    sweeper.delete('b');
    const before = seen.length;
    await expect.poll(() => seen.length).toBeGreaterThan(before + 1);
    expect(seen.slice(before + 1)).not.toContain('b');
    sweeper.delete('a');
    const timer = () => (sweeper as unknown as { timer: unknown }).timer;
    await expect.poll(timer).toBeUndefined();
    // Added again, it runs again.
    sweeper.add('c');
    expect(timer()).toBeDefined();
    await expect.poll(() => seen.includes('c')).toBe(true);
    sweeper.delete('c');
  });

  it('lets a visit delete what it visits (a body given up, an idle connection closed)', async () => {
    const visited: number[] = [];
    const sweeper: Sweeper<number> = new Sweeper<number>(5, (item) => {
      visited.push(item);
      sweeper.delete(item);
    });
    for (const n of [1, 2, 3]) sweeper.add(n);
    await expect.poll(() => visited.length).toBe(3);
    expect(visited.sort()).toEqual([1, 2, 3]);
  });

  describe('stop', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('visits nothing more, leaves no timer, and takes nothing added after (its owner has closed)', () => {
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
      const seen: string[] = [];
      const sweeper = new Sweeper<string>(1000, (item) => seen.push(item));
      sweeper.add('a');
      sweeper.add('b');
      vi.advanceTimersByTime(1000);
      expect(seen.sort()).toEqual(['a', 'b']);
      expect(vi.getTimerCount()).toBe(1);
      sweeper.stop();
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(5000);
      expect(seen).toHaveLength(2);
      // Added after it stopped: neither visited nor a timer started for it.
      sweeper.add('c');
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(5000);
      expect(seen).toHaveLength(2);
    });

    it('stops only itself: another sweeper goes on', () => {
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
      const seen: string[] = [];
      const mine = new Sweeper<string>(1000, (item) => seen.push(`mine ${item}`));
      const theirs = new Sweeper<string>(1000, (item) => seen.push(`theirs ${item}`));
      mine.add('a');
      theirs.add('b');
      mine.stop();
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(2000);
      expect(seen).toEqual(['theirs b', 'theirs b']);
      theirs.stop();
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});
