// Counting a process's instructions with callgrind, which the machine's load cannot move: the
// process is started under valgrind, its counters zeroed after its warm-up and dumped after
// the measured work.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The command and arguments that run `command args` under callgrind, dumping to `file`. With
 * `instrumentLater`, callgrind counts nothing until `startInstrumenting`: a long warm-up then runs
 * several times faster than when counted and zeroed.
 */
export function underCallgrind(
  file,
  command,
  args,
  { instrumentLater = false, separateThreads = false } = {},
) {
  return {
    command: 'valgrind',
    args: [
      '--tool=callgrind',
      `--callgrind-out-file=${file}`,
      ...(instrumentLater ? ['--instr-atstart=no'] : []),
      ...(separateThreads ? ['--separate-threads=yes'] : []),
      // Simulated caches and branch predictors (`CALLGRIND_SIM=1`): what this VM's missing
      // hardware counters cannot say, why one build's instructions cost more cycles than another's.
      ...(process.env.CALLGRIND_SIM === '1' ? ['--cache-sim=yes', '--branch-sim=yes'] : []),
      command,
      ...args,
    ],
  };
}

/** Starts counting in a process started with `instrumentLater`. */
export function startInstrumenting(pid) {
  execFileSync('callgrind_control', ['-i', 'on', String(pid)], { stdio: 'ignore' });
}

/** Zeroes the counters of the process `pid` runs under callgrind. */
export function zeroCounts(pid) {
  execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
}

/**
 * Dumps the counts since they were zeroed, and returns their total (instructions, every thread).
 * `part` is which dump of the process this is, counted from 1: each one is a numbered file.
 */
export function dumpCounts(pid, file, part = 1) {
  execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  return totalOf(`${file}.${part}`);
}

/** The instruction total of one callgrind dump file. */
function totalOf(dump) {
  const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(dump, 'utf8'));
  if (totals === null) throw new Error(`no totals in the callgrind dump ${dump}`);
  return Number(totals[1]);
}

/**
 * Like dumpCounts, for a process started with `separateThreads`: callgrind writes one file per
 * thread that ran (`FILE.PART-NN`, the main thread's is `-01`). Returns every thread's total and
 * the main thread's, where JavaScript runs; the rest is mostly V8's compiler and GC helpers.
 */
export function dumpThreadCounts(pid, file, part = 1) {
  execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  const prefix = `${path.basename(file)}.${part}-`;
  const dumps = readdirSync(path.dirname(file)).filter((name) => name.startsWith(prefix));
  let all = 0;
  let main = 0;
  for (const name of dumps) {
    const total = totalOf(path.join(path.dirname(file), name));
    all += total;
    if (name === `${prefix}01`) main = total;
  }
  if (dumps.length === 0) throw new Error(`no callgrind dumps ${file}.${part}-*`);
  return { all, main };
}
