/**
 * watchFiles watches the files themselves, not their folder, so that writes to other files in
 * the folder (the audit file beside the policy, usually) do not wake the process. Which inodes
 * are watched is read from the kernel: /proc/self/fdinfo lists each inotify watch's inode.
 */
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchFiles, type FileWatcher } from '../../src/lib/watchFiles.js';

const linux = process.platform === 'linux';

/** The inodes (hex, as the kernel writes them) this process's inotify watches are on. */
function watchedInodes(): string[] {
  const inodes: string[] = [];
  for (const fd of readdirSync('/proc/self/fdinfo')) {
    let text: string;
    try {
      text = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue;
    }
    for (const match of text.matchAll(/^inotify wd:\S+ ino:([0-9a-f]+)/gm)) inodes.push(match[1]!);
  }
  return inodes.sort();
}

const inodeOf = (file: string) => statSync(file).ino.toString(16);

let watcher: FileWatcher | undefined;
afterEach(() => {
  watcher?.close();
  watcher = undefined;
});

function setup() {
  const dir = path.join(tmpdir(), `warden-watch-${process.pid}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir);
  const policy = path.join(dir, 'policy.yaml');
  writeFileSync(policy, 'default: allow\n');
  let changes = 0;
  let waiting: (() => void) | undefined;
  const errors: string[] = [];
  watcher = watchFiles({
    files: [policy],
    what: 'policy changes',
    debounceMs: 20,
    pollMs: 100,
    onChange: () => {
      changes++;
      waiting?.();
    },
    onError: (message) => errors.push(message),
  });
  const nextChange = () => new Promise<void>((resolve) => (waiting = resolve));
  return { dir, policy, changes: () => changes, nextChange, errors };
}

describe.runIf(linux)('watchFiles', () => {
  it('watches the file, not its folder, so writes to a file beside it wake nothing', async () => {
    const { dir, policy, changes, nextChange, errors } = setup();
    expect(watchedInodes()).toEqual([inodeOf(policy)]);
    // A write beside it is no change, and no event reaches the process.
    for (let i = 0; i < 5; i++) appendFileSync(path.join(dir, 'audit.jsonl'), 'x\n');
    // Written in place: the watch on the file reports it.
    const edited = nextChange();
    writeFileSync(policy, 'default: deny\n');
    await edited;
    expect(changes()).toBe(1);
    expect(errors).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('follows a file replaced by renaming over it, and waits in the folder for a deleted one', async () => {
    const { dir, policy, changes, nextChange } = setup();
    const replaced = nextChange();
    writeFileSync(path.join(dir, 'policy.yaml.tmp'), 'default: deny\n');
    renameSync(path.join(dir, 'policy.yaml.tmp'), policy);
    await replaced;
    expect(changes()).toBe(1);
    expect(watchedInodes()).toEqual([inodeOf(policy)]);
    // The new file's own writes are seen: the watch moved to it.
    const edited = nextChange();
    writeFileSync(policy, 'default: allow\n');
    await edited;
    expect(changes()).toBe(2);
    // Deleted: the folder is watched until the file is back, then the file again.
    const deleted = nextChange();
    rmSync(policy);
    await deleted;
    expect(watchedInodes()).toEqual([inodeOf(dir)]);
    const created = nextChange();
    writeFileSync(policy, 'default: deny\n');
    await created;
    expect(changes()).toBe(4);
    expect(watchedInodes()).toEqual([inodeOf(policy)]);
    rmSync(dir, { recursive: true, force: true });
  });
});
