// Reading other processes' CPU time and memory from /proc (Linux only; the bench's figures
// for the middle process come from here, so a missing /proc is an error, not a zero).

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

let clockTicks;

/** Kernel clock ticks per second, the unit of utime/stime in /proc/<pid>/stat. */
function ticksPerSecond() {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100; // what every Linux the bench is likely to meet uses
    }
  }
  return clockTicks;
}

/** Fields of /proc/<pid>/stat after the command name, which may itself hold spaces or parentheses. */
function statFields(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

const HAS_SCHEDSTAT = existsSync('/proc/self/schedstat');

/**
 * CPU time of the whole process (every thread: GC and libuv workers count), in microseconds.
 * Summed from each thread's /proc/<pid>/task/<tid>/schedstat (nanoseconds), because the
 * utime+stime of /proc/<pid>/stat count in 10 ms ticks: the byte pipe spends well under a
 * tick per thousand calls, so a tick-based figure for it would be mostly rounding. Falls back
 * to utime+stime where the kernel has no schedstat. Threads that end between two readings
 * would drop out of the sum; Node's threads live as long as the process.
 */
export function cpuMicros(pid) {
  if (HAS_SCHEDSTAT) {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8');
      ns += Number(text.slice(0, text.indexOf(' ')));
    }
    return ns / 1000;
  }
  const f = statFields(pid);
  // Fields 14 (utime) and 15 (stime) of proc(5); index 0 here is field 3.
  return ((Number(f[11]) + Number(f[12])) * 1e6) / ticksPerSecond();
}

/**
 * Minor page faults of the whole process so far (`minflt` of /proc/<pid>/stat): pages the kernel
 * had to map in, e.g. when V8 grows its heap again into memory it had given back. A count, so
 * the machine's load does not move it the way it moves CPU time.
 */
export function minorFaults(pid) {
  return Number(statFields(pid)[7]); // field 10 of proc(5); index 0 here is field 3
}

/** Where `cpuMicros` reads from, for the report. */
export const CPU_SOURCE = HAS_SCHEDSTAT ? '/proc/<pid>/task/*/schedstat' : '/proc/<pid>/stat utime+stime';

/** Peak resident set size (VmHWM) in bytes. */
export function peakRssBytes(pid) {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/**
 * Pids whose parent is `pid`. Scans /proc because /proc/<pid>/task/<tid>/children needs a
 * kernel option many machines lack. Called once per measured instance, never on the hot path.
 */
export function childPids(pid) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(statFields(entry)[1]) === pid) found.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return found;
}
