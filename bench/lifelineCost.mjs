#!/usr/bin/env node
// What the lifeline costs at start-up: the time from spawning a small Node program until its
// first byte on stdout, started directly (own process group, as before the lifeline) and through
// the gateway's spawnChild (an `sh` that forks a watcher and execs the program). Interleaved, so
// load on the machine affects both alike. Needs a build (`npm run build`).
//
//   node bench/lifelineCost.mjs [ROUNDS]

import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { spawnChild } from '../dist/core/transports/childProcess.js';

const rounds = Number(process.argv[2] ?? 30);
const program = ['-e', 'process.stdout.write("x")'];
const env = { PATH: process.env.PATH ?? '' };
const cwd = tmpdir();

async function direct() {
  const started = performance.now();
  const child = spawn(process.execPath, program, { detached: true, env, cwd, stdio: 'pipe' });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  const ms = performance.now() - started;
  await new Promise((resolve) => child.once('exit', resolve));
  return ms;
}

async function throughLifeline() {
  const started = performance.now();
  const child = await spawnChild({ command: process.execPath, args: program, env, cwd });
  await new Promise((resolve) => child.process.stdout.once('data', resolve));
  const ms = performance.now() - started;
  await child.exited;
  return ms;
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
const directMs = [];
const lifelineMs = [];
for (let i = 0; i < rounds; i++) {
  directMs.push(await direct());
  lifelineMs.push(await throughLifeline());
}
process.stdout.write(
  `first byte, median of ${rounds}: direct ${median(directMs).toFixed(1)} ms, ` +
    `through the lifeline ${median(lifelineMs).toFixed(1)} ms\n`,
);
