#!/usr/bin/env node
// The "byte pipe": the floor of putting one extra Node process between a host and a server.
// It starts the command it is given and copies bytes both ways, nothing else: no framing, no
// parsing. Whatever the gateway costs beyond this is the gateway's own doing.
//
//   node bench/pipe.mjs COMMAND [ARGS...]

import { spawn } from 'node:child_process';

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  process.stderr.write('usage: node bench/pipe.mjs COMMAND [ARGS...]\n');
  process.exit(2);
}

const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
// Closing our stdin ends the child's stdin (pipe() forwards the end), and the child's exit ends us.
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
child.on('error', (error) => {
  process.stderr.write(`bench pipe: cannot start ${command}: ${error.message}\n`);
  process.exit(1);
});
// A reader or writer that went away is the end of the pipe, not a crash.
child.stdin.on('error', () => {});
process.stdout.on('error', () => child.kill());
