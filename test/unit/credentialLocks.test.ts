import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fileLocks } from '../../src/lib/credentials/lock.js';

describe('fileLocks', () => {
  it('runs work on one name one at a time, and leaves no lock behind', async () => {
    const folder = path.join(mkdtempSync(path.join(os.tmpdir(), 'warden-locks-')), 'locks');
    const exclusive = fileLocks(folder);
    const order: string[] = [];
    const work = (who: string) =>
      exclusive('oauth:tokens:x', async () => {
        order.push(`${who} in`);
        await new Promise((resolve) => setImmediate(resolve));
        order.push(`${who} out`);
      });
    await Promise.all([work('a'), work('b')]);
    // Whichever takes the lock first (the file system decides), the other waits for it to leave.
    const first = order[0]!.split(' ')[0]!;
    const second = first === 'a' ? 'b' : 'a';
    expect(order).toEqual([`${first} in`, `${first} out`, `${second} in`, `${second} out`]);
    expect(readdirSync(folder)).toEqual([]);
  });

  it('takes over a lock left by a process that died holding it', async () => {
    const folder = path.join(mkdtempSync(path.join(os.tmpdir(), 'warden-locks-')), 'locks');
    const exclusive = fileLocks(folder);
    // Learn the lock's file name, then leave one behind naming a process that has exited.
    let name = '';
    await exclusive('oauth:tokens:y', () => {
      name = readdirSync(folder).find((f) => f.endsWith('.lock'))!;
      return Promise.resolve();
    });
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, name), String(dead));
    await expect(exclusive('oauth:tokens:y', () => Promise.resolve('ran'))).resolves.toBe('ran');
  });

  it('lets only one of two takers that found the same stale lock take it over, however late the other acts', async () => {
    const folder = path.join(mkdtempSync(path.join(os.tmpdir(), 'warden-locks-')), 'locks');
    let name = '';
    await fileLocks(folder)('oauth:tokens:z', () => {
      name = readdirSync(folder).find((f) => f.endsWith('.lock'))!;
      return Promise.resolve();
    });
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(path.join(folder, name), String(dead));
    // Each taker (its own locks, as a separate process has) stops once it has judged the lock
    // stale, until let go: both judge the same stale lock, then the second acts only once the
    // first is inside its work, holding the lock it made in the stale one's place.
    // Held by taker, not by arrival: which of the two judges first is up to the file system, and
    // letting go of "the first to arrive" could let the second taker in first.
    const held: (() => void)[] = [];
    let judgedCount = 0;
    let bothJudged!: () => void;
    const judged = new Promise<void>((resolve) => (bothJudged = resolve));
    const hold = (who: number) => () =>
      new Promise<void>((go) => {
        held[who] = go;
        if (++judgedCount === 2) bothJudged();
      });
    const signal = () => {
      let fire!: () => void;
      return { fired: new Promise<void>((resolve) => (fire = resolve)), fire: () => fire() };
    };
    const [firstInside, secondInside, secondWaits, leave] = [signal(), signal(), signal(), signal()];
    let inside = 0;
    let most = 0;
    const work = (who: number) => async () => {
      most = Math.max(most, ++inside);
      if (who === 0) {
        firstInside.fire();
        await leave.fired;
      } else secondInside.fire();
      inside--;
      return who;
    };
    const runs = [
      fileLocks(folder, { judgedStale: hold(0) })('oauth:tokens:z', work(0)),
      fileLocks(folder, { judgedStale: hold(1), waiting: secondWaits.fire })('oauth:tokens:z', work(1)),
    ];
    await judged;
    held[0]!();
    await firstInside.fired;
    held[1]!();
    // The second finds the first's live lock where the stale one was and waits, rather than
    // removing it and going in too.
    await Promise.race([secondWaits.fired, secondInside.fired]);
    expect(inside).toBe(1);
    leave.fire();
    expect(await Promise.all(runs)).toEqual([0, 1]);
    expect(most).toBe(1);
    expect(readdirSync(folder)).toEqual([]);
  });
});
