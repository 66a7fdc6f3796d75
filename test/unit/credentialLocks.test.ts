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
});
