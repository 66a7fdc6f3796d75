import { readdir, readFile } from 'node:fs/promises';

/** A process found under another, identified by pid and start time so a reused pid is not mistaken for it. */
export interface Descendant {
  readonly pid: number;
  readonly startTime: string;
}

interface ProcStat {
  readonly ppid: number;
  readonly startTime: string;
}

/** Reads `/proc/PID/stat`: the fields after the command name (which may hold spaces and parentheses). */
async function readStat(pid: number): Promise<ProcStat | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // After ")": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice num_threads itrealvalue starttime ...
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ppid = Number(fields[1]);
  const startTime = fields[19];
  if (!Number.isInteger(ppid) || startTime === undefined) return undefined;
  return { ppid, startTime };
}

/**
 * Every live process descended from `root` (not `root` itself), from /proc; empty where there is
 * no /proc. A snapshot taken before a stop, so that descendants which left the process group
 * (`setsid`) can still be found and stopped: once their parent is gone they are re-parented and
 * no longer traceable to us.
 */
export async function findDescendants(root: number): Promise<Descendant[]> {
  if (process.platform !== 'linux') return [];
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const childrenOf = new Map<number, Descendant[]>();
  await Promise.all(
    entries.map(async (name) => {
      const pid = Number(name);
      if (!Number.isInteger(pid) || pid <= 0) return;
      const stat = await readStat(pid);
      if (stat === undefined) return;
      const siblings = childrenOf.get(stat.ppid);
      const entry = { pid, startTime: stat.startTime };
      if (siblings === undefined) childrenOf.set(stat.ppid, [entry]);
      else siblings.push(entry);
    }),
  );
  const found: Descendant[] = [];
  const queue = [root];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const child of childrenOf.get(next) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** SIGKILLs each descendant that is still the same process (same start time), ignoring those gone. */
export async function killDescendants(descendants: readonly Descendant[]): Promise<void> {
  await Promise.all(
    descendants.map(async ({ pid, startTime }) => {
      const now = await readStat(pid);
      if (now?.startTime !== startTime) return;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ESRCH: it went by itself meanwhile.
      }
    }),
  );
}
