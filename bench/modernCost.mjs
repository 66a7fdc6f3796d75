#!/usr/bin/env node
// A modern host's call against a legacy host's, measured closely enough to tell a 5% difference
// from noise on a shared 2-core machine. bench/run.mjs's `--modern` figures come from one
// throughput phase per round (2,000 calls per block, 10 blocks), and its CPU per call at 32 in
// flight moves with how the calls happen to batch: the fixture, whose work is identical in both,
// read 1.23× in one run. Here:
//
//   - three gateways run side by side over the same build and config (warden-bare's): `legacy`
//     and `legacy2`, spoken to the legacy way, and `modern`, spoken to as a 2026-07-28 host.
//     legacy2/legacy is the noise estimate: the same thing measured twice in the same run;
//   - with `--base-cli FILE` three more run the same way on another build (`base-…`), so that
//     a change is measured old against new in one run;
//   - each round has many short blocks, and every instance takes its turn in each block in an
//     order rotated per block, so a neighbour's burst lands on all of them alike;
//   - CPU is the gateway process's own (every thread, GC included, from /proc schedstat), taken
//     around each instance's turn: the bench client's work (a modern request is larger to write,
//     its answer larger to parse) is never charged to it;
//   - CPU per call is measured twice: over sequential calls (one request per read and one answer
//     per write, so it is the per-call work alone) and at 32 in flight (where batching counts);
//     beside the latter, the fixture's CPU per call (identical work everywhere) and the gateway's
//     read and write system calls per call, which show how the calls batched;
//   - every figure is a ratio within one block, and the report gives the median of those ratios
//     with their quartiles, so the spread is shown beside the figure.
//
//   node bench/modernCost.mjs [--blocks N] [--seq N] [--conc N] [--base-cli FILE] [--cli FILE]
//                             [--only legacy,modern] [--out FILE] [--callgrind CALLS]
//
// --callgrind CALLS counts instructions instead of timing (see `callgrind` below): slow (about
// a minute per 10,000 calls per gateway) but the same on a busy machine as on an idle one.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { underCallgrind, dumpCounts, zeroCounts } from './lib/callgrind.mjs';
import { deadline, RpcChild } from './lib/client.mjs';
import { median, quantile, rotate } from './lib/stats.mjs';
import { BARE_GATEWAY, BARE_LIMITS } from './lib/configs.mjs';
import { childPids, cpuMicros } from './lib/proc.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH);
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const NODE = process.execPath;

const { values: flags } = parseArgs({
  options: {
    blocks: { type: 'string', default: '40' },
    seq: { type: 'string', default: '400' },
    conc: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '3000' },
    cli: { type: 'string' },
    'base-cli': { type: 'string' },
    only: { type: 'string' },
    callgrind: { type: 'string' },
    out: { type: 'string' },
  },
});
const BLOCKS = Number(flags.blocks);
const SEQ = Number(flags.seq);
const CONC = Number(flags.conc);
const WARMUP = Number(flags.warmup);
const IN_FLIGHT = 32;
const TIMEOUT_MS = 300_000;
const CLI = path.resolve(flags.cli ?? path.join(ROOT, 'dist/cli.js'));
const BASE_CLI = flags['base-cli'] === undefined ? undefined : path.resolve(flags['base-cli']);

const ECHO_TEXT = 'hello from the warden bench';
/** The per-request envelope of MCP 2026-07-28, as bench/run.mjs's modern host sends it. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'mcp-warden-bench', version: '1' },
};
const INITIALIZE_PARAMS = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'warden-bench', version: '1.0.0' },
});

const work = mkdtempSync(path.join(tmpdir(), 'warden-modern-cost-'));
const configFile = path.join(work, 'bare.json');
writeFileSync(
  configFile,
  JSON.stringify({
    gateway: BARE_GATEWAY,
    servers: { bench: { command: NODE, args: [FIXTURE, '--tools', '0'], ...BARE_LIMITS } },
  }),
);

const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill();
  rmSync(work, { recursive: true, force: true });
});

async function start(name, cli, modern, callgrindOut) {
  const args = [cli, '--config', configFile];
  const child =
    callgrindOut === undefined
      ? new RpcChild({ label: name, command: NODE, args })
      : new RpcChild({ label: name, ...underCallgrind(callgrindOut, NODE, args) });
  live.add(child);
  if (!modern) {
    await deadline(child.request('initialize', INITIALIZE_PARAMS), TIMEOUT_MS, `${name} initialize`);
    child.notify('notifications/initialized');
  }
  const list = await deadline(
    child.request('tools/list', modern ? JSON.stringify({ _meta: MODERN_META }) : undefined),
    TIMEOUT_MS,
    `${name} tools/list`,
  );
  if (!Array.isArray(list?.tools)) throw new Error(`${name}: no tools/list answer`);
  const echo = JSON.stringify({
    name: 'bench__echo',
    arguments: { text: ECHO_TEXT },
    ...(modern && { _meta: MODERN_META }),
  });
  const fixtures = childPids(child.pid);
  if (callgrindOut === undefined && fixtures.length !== 1)
    throw new Error(`${name}: expected one upstream process, found ${fixtures.length}`);
  return { name, child, echo, modern, fixture: fixtures[0], samples: [] };
}

function check(inst, result) {
  if (result?.content?.[0]?.text !== ECHO_TEXT)
    throw new Error(`${inst.name}: wrong echo answer ${JSON.stringify(result)}`);
  if (inst.modern && result.resultType !== 'complete') throw new Error(`${inst.name}: no resultType`);
}

/** `n` sequential calls: latencies (µs) and the gateway's CPU (µs) over them. */
async function sequential(inst, n) {
  const lat = new Float64Array(n);
  const cpu0 = cpuMicros(inst.child.pid);
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    check(inst, await inst.child.request('tools/call', inst.echo));
    lat[i] = (performance.now() - t) * 1000;
  }
  return { cpu: cpuMicros(inst.child.pid) - cpu0, lat };
}

/** `n` calls with 32 in flight: wall time (ms) and the gateway's CPU (µs) over them. */
async function concurrent(inst, n) {
  let sent = 0;
  const worker = async () => {
    while (sent < n) {
      sent++;
      check(inst, await inst.child.request('tools/call', inst.echo));
    }
  };
  const cpu0 = cpuMicros(inst.child.pid);
  const fixture0 = cpuMicros(inst.fixture);
  const io0 = syscalls(inst.child.pid);
  const t = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return {
    ms: performance.now() - t,
    cpu: cpuMicros(inst.child.pid) - cpu0,
    fixture: cpuMicros(inst.fixture) - fixture0,
    syscalls: syscalls(inst.child.pid) - io0,
  };
}

/**
 * Read and write system calls the gateway has made (/proc/<pid>/io): per call, they show how
 * requests and answers batched, which moves CPU per call at 32 in flight whatever the work.
 */
function syscalls(pid) {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/^syscr: (\d+)$/m.exec(io)[1]) + Number(/^syscw: (\d+)$/m.exec(io)[1]);
}

/**
 * Instructions per call (every thread of the gateway, so GC counts), counted by callgrind over
 * `calls` calls at 32 in flight after the warm-up: what the machine's load cannot move. The
 * gateways run one after the other; each is started under valgrind, its counters zeroed after
 * the warm-up and dumped after the measured calls.
 */
async function callgrind(specs, calls) {
  const out = [];
  for (const [name, cli, modern] of specs) {
    const file = path.join(work, `${name}.callgrind`);
    const inst = await start(name, cli, modern, file);
    await deadline(concurrent(inst, WARMUP), TIMEOUT_MS * 4, `${name} warm-up`);
    zeroCounts(inst.child.pid);
    await deadline(concurrent(inst, calls), TIMEOUT_MS * 4, `${name} measured calls`);
    const total = dumpCounts(inst.child.pid, file);
    await inst.child.close(60_000);
    live.delete(inst.child);
    out.push([name, total / calls]);
    process.stdout.write(
      `${name.padEnd(16)}${(total / calls).toFixed(0).padStart(10)} instructions per call\n`,
    );
  }
  return out;
}

async function main() {
  const kinds = [
    ['legacy', false],
    ['legacy2', false],
    ['modern', true],
  ].filter(([name]) => flags.only === undefined || flags.only.split(',').includes(name));
  const specs = kinds.map(([name, modern]) => [name, CLI, modern]);
  if (BASE_CLI !== undefined)
    specs.push(...kinds.map(([name, modern]) => [`base-${name}`, BASE_CLI, modern]));
  if (flags.callgrind !== undefined) {
    process.stdout.write(
      `callgrind: ${flags.callgrind} calls at ${IN_FLIGHT} in flight after ${WARMUP} per gateway (all threads)\n`,
    );
    await callgrind(
      specs.filter(([name]) => !name.endsWith('legacy2')),
      Number(flags.callgrind),
    );
    return;
  }
  const loadBefore = loadavg().map((x) => x.toFixed(2));
  const t0 = performance.now();
  const insts = [];
  for (const [name, cli, modern] of specs) insts.push(await start(name, cli, modern));
  for (const inst of insts) {
    await deadline(sequential(inst, WARMUP), TIMEOUT_MS, `${inst.name} warm-up`);
    await deadline(concurrent(inst, WARMUP), TIMEOUT_MS, `${inst.name} warm-up`);
  }
  for (let b = 0; b < BLOCKS; b++) {
    for (const inst of rotate(insts, b)) {
      const s = await deadline(sequential(inst, SEQ), TIMEOUT_MS, `${inst.name} sequential`);
      const c = await deadline(concurrent(inst, CONC), TIMEOUT_MS, `${inst.name} concurrent`);
      inst.samples.push({
        seqCpu: s.cpu / SEQ,
        p50: median(s.lat),
        concCpu: c.cpu / CONC,
        fixtureCpu: c.fixture / CONC,
        syscallsPerCall: c.syscalls / CONC,
        callsPerSec: CONC / (c.ms / 1000),
      });
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const loadAfter = loadavg().map((x) => x.toFixed(2));
  await Promise.all(insts.map((i) => i.child.close()));

  const metrics = [
    ['seqCpu', 'cpu µs/call seq'],
    ['p50', 'p50 µs'],
    ['concCpu', 'cpu µs/call @32'],
    ['fixtureCpu', 'fixture cpu @32'],
    ['syscallsPerCall', 'syscalls/call @32'],
    ['callsPerSec', 'calls/s @32'],
  ];
  const out = [];
  out.push(
    `modernCost ${new Date().toISOString()} node ${process.version}; ${BLOCKS} blocks of ${SEQ} sequential + ` +
      `${CONC} at ${IN_FLIGHT} in flight per instance, after ${WARMUP}+${WARMUP} warm-up; ${seconds.toFixed(0)} s; ` +
      `load ${loadBefore.join(' ')} → ${loadAfter.join(' ')}`,
  );
  out.push(`cli ${CLI}${BASE_CLI === undefined ? '' : `; base ${BASE_CLI}`}`);
  out.push('');
  out.push('Medians over blocks');
  out.push(['instance'.padEnd(16), ...metrics.map(([, h]) => h.padStart(16))].join(''));
  for (const inst of insts)
    out.push(
      [
        inst.name.padEnd(16),
        ...metrics.map(([k]) =>
          median(inst.samples.map((s) => s[k]))
            .toFixed(k === 'callsPerSec' ? 0 : 2)
            .padStart(16),
        ),
      ].join(''),
    );
  out.push('');
  out.push('Ratios per block: median [quartiles]');
  out.push(['ratio'.padEnd(26), ...metrics.map(([, h]) => h.padStart(22))].join(''));
  const byName = Object.fromEntries(insts.map((i) => [i.name, i]));
  const pairs = [];
  for (const prefix of ['', ...(BASE_CLI === undefined ? [] : ['base-'])]) {
    pairs.push([`${prefix}modern`, `${prefix}legacy`], [`${prefix}legacy2`, `${prefix}legacy`]);
    pairs.push([`${prefix}modern`, `${prefix}legacy2`]);
  }
  if (BASE_CLI !== undefined) pairs.push(['modern', 'base-modern'], ['legacy', 'base-legacy']);
  const ratios = {};
  for (const [a, b] of pairs) {
    if (byName[a] === undefined || byName[b] === undefined) continue;
    const cells = metrics.map(([k]) => {
      const r = byName[a].samples.map((s, i) => s[k] / byName[b].samples[i][k]);
      (ratios[`${a}/${b}`] ??= {})[k] = { median: median(r), q1: quantile(r, 0.25), q3: quantile(r, 0.75) };
      return `${median(r).toFixed(3)} [${quantile(r, 0.25).toFixed(2)}-${quantile(r, 0.75).toFixed(2)}]`.padStart(
        22,
      );
    });
    out.push([`${a}/${b}`.padEnd(26), ...cells].join(''));
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
    process.stderr.write(`modernCost: FAILED: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
