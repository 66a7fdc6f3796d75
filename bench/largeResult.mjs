#!/usr/bin/env node
// A large tool result through warden-full, measured closely enough to compare two builds on a
// shared 2-core machine. bench/run.mjs times 9 large results per configuration and round, which
// on a busy machine moves its 1 MiB ratio by more than the target's margin between two runs.
// Here:
//
//   - `direct` (the fixture alone), `pipe` (bench/pipe.mjs in between), `full` and `full2` (two
//     gateways with warden-full's config on this build: full2/full is the noise estimate) and,
//     with `--base-cli FILE`, `base` (warden-full's config on another build) all run at once;
//   - each block every instance makes `--calls` sequential calls in an order rotated per block,
//     so a neighbour's burst lands on all of them alike; a block's figure is the median of its
//     calls, and every ratio is taken within a block, reported as the median over blocks with
//     its quartiles;
//   - beside the time, each gateway's own CPU per call (every thread, GC included).
//
//   node bench/largeResult.mjs [--kib N] [--blocks N] [--calls N] [--base-cli FILE] [--cli FILE]
//                              [--out FILE] [--cpu-prof DIR] [--callgrind CALLS]
//
// --cpu-prof DIR runs the gateways under `node --cpu-prof` (summarise with
// `node bench/cpuprofile-top.mjs DIR/full/*.cpuprofile`). --callgrind CALLS counts the gateway's
// instructions per call over CALLS sequential calls instead of timing (the gateways one after the
// other): what the machine's load cannot move; --callgrind-dir DIR keeps the dumps there (the
// measured calls are `DIR/NAME.callgrind.1`, for callgrind_annotate).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { underCallgrind, dumpCounts, zeroCounts } from './lib/callgrind.mjs';
import { deadline, RpcChild } from './lib/client.mjs';
import { median, quantile, rotate } from './lib/stats.mjs';
import { BENCH_POLICY } from './lib/configs.mjs';
import { cpuMicros } from './lib/proc.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const PIPE = path.join(BENCH, 'pipe.mjs');
const NODE = process.execPath;

const { values: flags } = parseArgs({
  options: {
    kib: { type: 'string', default: '1024' },
    blocks: { type: 'string', default: '12' },
    calls: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '20' },
    cli: { type: 'string' },
    'base-cli': { type: 'string' },
    'cpu-prof': { type: 'string' },
    callgrind: { type: 'string' },
    'callgrind-dir': { type: 'string' },
    out: { type: 'string' },
  },
});
const KIB = Number(flags.kib);
const BLOCKS = Number(flags.blocks);
const CALLS = Number(flags.calls);
const WARMUP = Number(flags.warmup);
const TIMEOUT_MS = 300_000;
const CLI = path.resolve(flags.cli ?? path.join(BENCH, '..', 'dist/cli.js'));
const BASE_CLI = flags['base-cli'] === undefined ? undefined : path.resolve(flags['base-cli']);
const CPU_PROF = flags['cpu-prof'] === undefined ? undefined : path.resolve(flags['cpu-prof']);

const INITIALIZE_PARAMS = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'warden-bench', version: '1.0.0' },
});

const work = mkdtempSync(path.join(tmpdir(), 'warden-large-result-'));
const policyFile = path.join(work, 'policy.json');
writeFileSync(policyFile, JSON.stringify(BENCH_POLICY));
const fixture = { command: NODE, args: [FIXTURE, '--tools', '0'] };

/** warden-full's config (bench/run.mjs): every repair on, the policy, audit to its own file. */
function fullConfig(name) {
  const file = path.join(work, `${name}.json`);
  const config = {
    servers: { bench: fixture },
    policies: [policyFile],
    audit: { file: path.join(work, `${name}-audit.jsonl`) },
  };
  writeFileSync(file, JSON.stringify(config));
  return file;
}

const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill();
  rmSync(work, { recursive: true, force: true });
});

/** How each instance is started: [command, args], and whether it is a gateway. */
function launch(name, cli) {
  if (name === 'direct') return { command: NODE, args: fixture.args, gateway: false };
  if (name === 'pipe') return { command: NODE, args: [PIPE, NODE, ...fixture.args], gateway: false };
  const prof = CPU_PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.join(CPU_PROF, name)}`];
  return { command: NODE, args: [...prof, cli, '--config', fullConfig(name)], gateway: true };
}

async function start(name, cli, callgrindOut) {
  const spec = launch(name, cli);
  const run = callgrindOut === undefined ? spec : underCallgrind(callgrindOut, spec.command, spec.args);
  const child = new RpcChild({ label: name, command: run.command, args: run.args });
  live.add(child);
  await deadline(child.request('initialize', INITIALIZE_PARAMS), TIMEOUT_MS, `${name} initialize`);
  child.notify('notifications/initialized');
  await deadline(child.request('tools/list'), TIMEOUT_MS, `${name} tools/list`);
  const blob = JSON.stringify({ name: `${spec.gateway ? 'bench__' : ''}blob`, arguments: { kib: KIB } });
  return { name, child, blob, gateway: spec.gateway, samples: [] };
}

/** `n` sequential large calls: their latencies (ms) and the process's CPU (µs) over them. */
async function sequential(inst, n) {
  const lat = [];
  const cpu0 = inst.gateway ? cpuMicros(inst.child.pid) : 0;
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const result = await inst.child.request('tools/call', inst.blob);
    lat.push(performance.now() - t);
    if (result?.content?.[0]?.text?.length !== KIB * 1024) throw new Error(`${inst.name}: wrong blob answer`);
  }
  return { lat, cpu: inst.gateway ? cpuMicros(inst.child.pid) - cpu0 : NaN };
}

/**
 * Instructions per large call (every thread of the gateway, so GC counts) under callgrind, its
 * counters zeroed after the warm-up and dumped after `calls` sequential calls.
 */
async function callgrind(specs, calls) {
  for (const [name, cli] of specs) {
    const file = path.join(flags['callgrind-dir'] ?? work, `${name}.callgrind`);
    const inst = await start(name, cli, file);
    await deadline(sequential(inst, WARMUP), TIMEOUT_MS * 4, `${name} warm-up`);
    zeroCounts(inst.child.pid);
    await deadline(sequential(inst, calls), TIMEOUT_MS * 4, `${name} measured calls`);
    const total = dumpCounts(inst.child.pid, file);
    await inst.child.close(60_000);
    live.delete(inst.child);
    process.stdout.write(
      `${name.padEnd(8)}${(total / calls / 1e6).toFixed(2).padStart(10)} M instructions per call\n`,
    );
  }
}

async function main() {
  const specs = [
    ['direct', undefined],
    ['pipe', undefined],
    ['full', CLI],
    ['full2', CLI],
    ...(BASE_CLI === undefined ? [] : [['base', BASE_CLI]]),
  ];
  if (flags.callgrind !== undefined) {
    process.stdout.write(
      `callgrind: ${flags.callgrind} sequential ${KIB} KiB results after ${WARMUP} per gateway\n`,
    );
    await callgrind(
      specs.filter(([name]) => name === 'full' || name === 'base'),
      Number(flags.callgrind),
    );
    return;
  }
  const loadBefore = loadavg().map((x) => x.toFixed(2));
  const t0 = performance.now();
  const insts = [];
  for (const [name, cli] of specs) insts.push(await start(name, cli));
  for (const inst of insts) await deadline(sequential(inst, WARMUP), TIMEOUT_MS, `${inst.name} warm-up`);
  for (let b = 0; b < BLOCKS; b++)
    for (const inst of rotate(insts, b)) {
      const s = await deadline(sequential(inst, CALLS), TIMEOUT_MS, `${inst.name} block`);
      inst.samples.push({ ms: median(s.lat), cpuMs: s.cpu / CALLS / 1000 });
    }
  const seconds = (performance.now() - t0) / 1000;
  const loadAfter = loadavg().map((x) => x.toFixed(2));
  await Promise.all(insts.map((i) => i.child.close()));

  const out = [];
  out.push(
    `largeResult ${new Date().toISOString()} node ${process.version}; ${BLOCKS} blocks of ${CALLS} sequential ` +
      `${KIB} KiB results per instance, after ${WARMUP} warm-up; ${seconds.toFixed(0)} s; ` +
      `load ${loadBefore.join(' ')} → ${loadAfter.join(' ')}`,
  );
  out.push(`cli ${CLI}${BASE_CLI === undefined ? '' : `; base ${BASE_CLI}`}`);
  out.push('');
  out.push(
    `${'instance'.padEnd(10)}${'ms (median of blocks)'.padStart(24)}${'gateway CPU ms/call'.padStart(22)}`,
  );
  for (const inst of insts)
    out.push(
      `${inst.name.padEnd(10)}${median(inst.samples.map((s) => s.ms))
        .toFixed(2)
        .padStart(24)}` +
        `${
          inst.gateway
            ? median(inst.samples.map((s) => s.cpuMs))
                .toFixed(2)
                .padStart(22)
            : ''
        }`,
    );
  out.push('');
  out.push(
    `${'ratio per block'.padEnd(16)}${'time: median [quartiles]'.padStart(28)}${'CPU: median [quartiles]'.padStart(28)}`,
  );
  const byName = Object.fromEntries(insts.map((i) => [i.name, i]));
  const pairs = [
    ['full', 'direct'],
    ['full2', 'direct'],
    ['full', 'pipe'],
    ['pipe', 'direct'],
    ['full2', 'full'],
    ...(BASE_CLI === undefined
      ? []
      : [
          ['base', 'direct'],
          ['full', 'base'],
        ]),
  ];
  const ratios = {};
  const cell = (r) =>
    `${median(r).toFixed(3)} [${quantile(r, 0.25).toFixed(2)}-${quantile(r, 0.75).toFixed(2)}]`;
  for (const [a, b] of pairs) {
    const ratio = (k) => byName[a].samples.map((s, i) => s[k] / byName[b].samples[i][k]);
    const time = ratio('ms');
    const cpu = byName[a].gateway && byName[b].gateway ? ratio('cpuMs') : undefined;
    ratios[`${a}/${b}`] = { time, cpu };
    out.push(
      `${`${a}/${b}`.padEnd(16)}${cell(time).padStart(28)}${(cpu === undefined ? '' : cell(cpu)).padStart(28)}`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
  if (flags.out !== undefined)
    writeFileSync(
      flags.out,
      `${JSON.stringify({ loadBefore, loadAfter, samples: Object.fromEntries(insts.map((i) => [i.name, i.samples])), ratios }, null, 2)}\n`,
    );
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`largeResult: ${error.stack ?? error}\n`);
    process.exit(1);
  },
);
