// Counting a process's instructions with callgrind, which the machine's load cannot move: the
// process is started under valgrind, its counters zeroed after its warm-up and dumped after
// the measured work.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * The command and arguments that run `command args` under callgrind, dumping to `file`. With
 * `instrumentLater`, callgrind counts nothing until `startInstrumenting`: a long warm-up then runs
 * several times faster than when counted and zeroed.
 */
export function underCallgrind(file, command, args, { instrumentLater = false } = {}) {
  return {
    command: 'valgrind',
    args: [
      '--tool=callgrind',
      `--callgrind-out-file=${file}`,
      ...(instrumentLater ? ['--instr-atstart=no'] : []),
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
  const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(`${file}.${part}`, 'utf8'));
  if (totals === null) throw new Error(`no totals in the callgrind dump ${file}.${part}`);
  return Number(totals[1]);
}
