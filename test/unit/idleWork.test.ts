import { describe, expect, it } from 'vitest';
import { IdleWork } from '../../src/lib/idleWork.js';

/** Resolves once every step queued so far has run (a step added last runs last). */
function drained(work: IdleWork): Promise<void> {
  return new Promise((resolve) => work.add(resolve));
}

describe('IdleWork', () => {
  it('runs its steps in order, none of them before the current turn ends', async () => {
    const work = new IdleWork({ maxQueued: 10, sliceMs: 50 });
    const ran: number[] = [];
    work.add(() => ran.push(1));
    work.add(() => ran.push(2));
    expect(ran).toEqual([]);
    await drained(work);
    expect(ran).toEqual([1, 2]);
  });

  it('yields after a slice, so what arrives meanwhile runs between slices', async () => {
    const work = new IdleWork({ maxQueued: 100, sliceMs: 1 });
    const order: string[] = [];
    const busy = (ms: number): void => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    for (let i = 0; i < 5; i++) work.add(() => (busy(3), order.push(`step ${i}`)));
    // An I/O-like callback queued after the work started: it must not wait for all five steps.
    setImmediate(() => setImmediate(() => order.push('message')));
    await drained(work);
    expect(order.indexOf('message')).toBeGreaterThan(0);
    expect(order.indexOf('message')).toBeLessThan(order.length - 1);
  });

  it('drops steps beyond its bound, and keeps going after a step that throws', async () => {
    const work = new IdleWork({ maxQueued: 2, sliceMs: 50 });
    const ran: string[] = [];
    expect(
      work.add(() => {
        throw new Error('boom');
      }),
    ).toBe(true);
    expect(work.add(() => ran.push('second'))).toBe(true);
    expect(work.add(() => ran.push('third'))).toBe(false);
    expect(work.pending).toBe(2);
    await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
    expect(ran).toEqual(['second']);
    expect(work.pending).toBe(0);
    await drained(work);
  });

  it('holds before a step when told to, and goes on when resumed', async () => {
    let may = true;
    let held = 0;
    const work = new IdleWork({ maxQueued: 10, sliceMs: 50, mayRun: () => may, held: () => held++ });
    const ran: number[] = [];
    work.add(() => {
      ran.push(1);
      may = false;
    });
    work.add(() => ran.push(2));
    await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
    expect(ran).toEqual([1]);
    expect(held).toBe(1);
    expect(work.pending).toBe(1);
    may = true;
    work.resume();
    await drained(work);
    expect(ran).toEqual([1, 2]);
  });
});
