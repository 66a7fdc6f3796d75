#!/usr/bin/env node
// What a sandbox costs: the bench fixture server behind the built gateway, started plain and
// with `sandbox: true` (bubblewrap on Linux, through @anthropic-ai/sandbox-runtime), in turns:
//
//   start-up   spawning the gateway until its first tools/list has the server's tools
//   per call   p50 of sequential tools/call echo, after a warm-up
//
// One run of each by default; the ratio is sandboxed / plain. Needs bubblewrap and socat.
//
//   node bench/sandbox.mjs [--rounds N] [--calls N] [--cli FILE] [--out FILE]
//
// Exit codes: 0 ran, 1 something failed, 2 bad usage.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { recordPrices } from './lib/prices.mjs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { deadline, RpcChild } from './lib/client.mjs';
import { median, quantile } from './lib/stats.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH);
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const NODE = process.execPath;

function usage(message) {
  process.stderr.write(
    `bench: ${message}\nusage: node bench/sandbox.mjs [--rounds N] [--calls N] [--cli FILE] [--out FILE]\n`,
  );
  process.exit(2);
}

let flags;
try {
  flags = parseArgs({
    options: {
      rounds: { type: 'string', default: '1' },
      calls: { type: 'string', default: '300' },
      cli: { type: 'string', default: path.join(ROOT, 'dist/cli.js') },
      out: { type: 'string' },
    },
  }).values;
} catch (error) {
  usage(error.message);
}
const positive = (name) => {
  const n = Number(flags[name]);
  if (!Number.isInteger(n) || n < 1) usage(`--${name} wants a positive integer, got ${flags[name]}`);
  return n;
};
const ROUNDS = positive('rounds');
const CALLS = positive('calls');
const CLI = path.resolve(flags.cli);
const WARM_UP = 30;
const TIMEOUT_MS = 60_000;
const HANDSHAKE = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'bench', version: '1' },
});

const work = mkdtempSync(path.join(tmpdir(), 'warden-bench-sandbox-'));
const env = { PATH: process.env.PATH ?? '', HOME: work, XDG_STATE_HOME: path.join(work, 'state') };

function writeConfig(name, sandbox) {
  const file = path.join(work, `${name}.json`);
  const server = { command: NODE, args: [FIXTURE], ...(sandbox && { sandbox: true }) };
  writeFileSync(file, JSON.stringify({ gateway: { startupTimeout: '60s' }, servers: { s: server } }));
  return file;
}

const configs = { plain: writeConfig('plain', false), sandboxed: writeConfig('sandboxed', true) };

/** One gateway run: its start-up, then the p50 of `CALLS` sequential calls. */
async function run(config) {
  const started = performance.now();
  const child = new RpcChild({ label: 'gateway', command: NODE, args: [CLI, '--config', config], env });
  try {
    await deadline(child.request('initialize', HANDSHAKE), TIMEOUT_MS, 'initialize');
    child.notify('notifications/initialized');
    const listed = await deadline(child.request('tools/list'), TIMEOUT_MS, 'tools/list');
    const startMs = performance.now() - started;
    if (!listed.tools.some((tool) => tool.name === 's__echo')) throw new Error('the server did not start');
    const times = [];
    for (let i = 0; i < WARM_UP + CALLS; i++) {
      const t = performance.now();
      const result = await deadline(
        child.request('tools/call', JSON.stringify({ name: 's__echo', arguments: { text: 'x' } })),
        TIMEOUT_MS,
        'tools/call',
      );
      if (result.isError) throw new Error(`call failed: ${JSON.stringify(result)}`);
      if (i >= WARM_UP) times.push(performance.now() - t);
    }
    return { startMs, callP50Ms: quantile(times, 0.5) };
  } finally {
    await child.close();
  }
}

const results = { plain: [], sandboxed: [] };
try {
  for (let round = 0; round < ROUNDS; round++)
    for (const name of round % 2 === 0 ? ['plain', 'sandboxed'] : ['sandboxed', 'plain'])
      results[name].push(await run(configs[name]));
} catch (error) {
  process.stderr.write(`bench: ${error.message}\n`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (process.exitCode !== 1) {
  const summary = Object.fromEntries(
    Object.entries(results).map(([name, runs]) => [
      name,
      { startMs: median(runs.map((r) => r.startMs)), callP50Ms: median(runs.map((r) => r.callP50Ms)) },
    ]),
  );
  const ratio = {
    startUp: summary.sandboxed.startMs / summary.plain.startMs,
    perCall: summary.sandboxed.callP50Ms / summary.plain.callP50Ms,
  };
  recordPrices('sandbox', [
    { what: 'sandboxed start-up ÷ unsandboxed', value: ratio.startUp, unit: '×' },
    { what: 'sandboxed call p50 ÷ unsandboxed', value: ratio.perCall, unit: '×' },
  ]);
  const ms = (v) => `${v.toFixed(v < 10 ? 2 : 0)} ms`;
  process.stdout.write(
    [
      `machine: ${cpus().length} cores, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ${ROUNDS} round(s), ${CALLS} calls each`,
      `              start-up   per-call p50`,
      `plain         ${ms(summary.plain.startMs).padEnd(10)} ${ms(summary.plain.callP50Ms)}`,
      `sandboxed     ${ms(summary.sandboxed.startMs).padEnd(10)} ${ms(summary.sandboxed.callP50Ms)}`,
      `ratio         ${ratio.startUp.toFixed(2)}×      ${ratio.perCall.toFixed(2)}×`,
      '',
    ].join('\n'),
  );
  if (flags.out !== undefined)
    writeFileSync(
      flags.out,
      `${JSON.stringify({ rounds: ROUNDS, calls: CALLS, summary, ratio }, null, 2)}\n`,
    );
}
