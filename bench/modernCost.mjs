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
//   - how the calls at 32 in flight are driven is chosen with --drive (natural, lean, burst, or
//     several, each measured in every block; see `drive`): the bench client's own cost per
//     request decides how requests reach the gateway in chunks, so `lean` and `burst` take that
//     out of the comparison;
//   - with --floor two more instances run: the JSON floor (bench/floor.mjs) in front of the same
//     fixture, spoken to the legacy way (`floor`) and as a modern host (`floor-modern`, the floor
//     then doing the least any gateway must for a modern host: the envelope left out of what it
//     forwards, `resultType` and the server's name written into each answer). floor-modern/floor
//     is what the revision's larger messages cost by themselves, beside modern/legacy;
//   - beside the medians, per call at 32 in flight summed over the run: the gateway's user and
//     system CPU, its read/write system calls and bytes, the client's reads of its answers, and
//     with --probe (lib/ioProbe.mjs loaded into every gateway alike) its reads and writes on the
//     host's pipes and the upstream's and its collections.
//
//   node bench/modernCost.mjs [--blocks N] [--seq N] [--conc N] [--base-cli FILE] [--cli FILE]
//                             [--only legacy,modern] [--out FILE] [--callgrind CALLS]
//                             [--callgrind-dir DIR] [--drive natural,lean,burst] [--probe] [--floor]
//                             [--node-arg=--flag ...]
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
const FLOOR = path.join(BENCH, 'floor.mjs');
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
    'callgrind-dir': { type: 'string' },
    out: { type: 'string' },
    drive: { type: 'string', default: 'natural' },
    probe: { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
    'node-arg': { type: 'string', multiple: true, default: [] },
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
/** How the calls at 32 in flight are driven (see `drive`); several: each, in every block. */
const DRIVES = flags.drive.split(',');
for (const mode of DRIVES)
  if (!['natural', 'lean', 'burst'].includes(mode))
    throw new Error(`--drive ${mode}: natural, lean or burst`);
const PROBE = path.join(BENCH, 'lib/ioProbe.mjs');

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

/** Starts one instance: the gateway built as `cli`, or with `cli` FLOOR the JSON floor. */
async function start(name, cli, modern, callgrindOut) {
  const floor = cli === FLOOR;
  const args = [
    ...flags['node-arg'],
    ...(flags.probe ? ['--import', PROBE] : []),
    ...(floor ? [FLOOR, NODE, FIXTURE, '--tools', '0'] : [cli, '--config', configFile]),
  ];
  const env =
    flags.probe || (floor && modern)
      ? {
          ...process.env,
          ...(flags.probe && { WARDEN_IO_PROBE_DIR: work }),
          ...(floor && modern && { FLOOR_MODERN: '1' }),
        }
      : undefined;
  const child =
    callgrindOut === undefined
      ? new RpcChild({ label: name, command: NODE, args, env })
      : new RpcChild({ label: name, ...underCallgrind(callgrindOut, NODE, args), env });
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
    name: floor ? 'echo' : 'bench__echo',
    arguments: { text: ECHO_TEXT },
    ...(modern && { _meta: MODERN_META }),
  });
  const fixtures = childPids(child.pid);
  if (callgrindOut === undefined && fixtures.length !== 1)
    throw new Error(`${name}: expected one upstream process, found ${fixtures.length}`);
  const inst = { name, child, echo, modern, fixture: fixtures[0], samples: [], clientReads: 0 };
  // The client's reads of the gateway's stdout: how many answers each of its writes carried.
  child.child.stdout.on('data', () => inst.clientReads++);
  return inst;
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

/**
 * Every request line of one phase, built before it is timed (`lean` and `burst`): the client
 * then does the same work per request in both eras apart from the bytes it writes.
 */
function requestLines(inst, n, mode) {
  const first = inst.child.nextId;
  inst.child.nextId += n;
  const lines = new Array(n);
  for (let i = 0; i < n; i++)
    lines[i] = `{"jsonrpc":"2.0","id":${first + i},"method":"tools/call","params":${inst.echo}}\n`;
  const bursts = [];
  if (mode === 'burst')
    for (let i = 0; i < n; i += IN_FLIGHT) bursts.push(lines.slice(i, i + IN_FLIGHT).join(''));
  return { first, lines, bursts };
}

/**
 * Answers read without `JSON.parse`: the id found by its member and the echo's text looked
 * for, so reading a modern answer costs the client only its extra bytes. Returns the restore.
 */
function leanAnswers(inst, settle) {
  const rpc = inst.child;
  const onLine = rpc.onLine;
  rpc.onLine = (line) => {
    const at = line.indexOf('"id":');
    if (at === -1) return;
    const id = parseInt(line.slice(at + 5, at + 20), 10);
    if (!line.includes(ECHO_TEXT) || (inst.modern && !line.includes('"resultType":"complete"'))) {
      rpc.failAll(new Error(`${inst.name}: wrong echo answer ${line.slice(0, 300)}`));
      return;
    }
    settle(id);
  };
  return () => {
    rpc.onLine = onLine;
  };
}

/**
 * The calls of one concurrent phase, driven as `--drive` says:
 *   natural: 32 workers, each awaiting its answer and then building and writing its next request
 *            (the bench's usual client: what a request costs the client decides how they batch);
 *   lean:    the same 32 workers, but every request line is built before the phase and answers
 *            are not parsed, so the client's own work is the same in both eras but for bytes;
 *   burst:   32 requests written in one write, then all 32 answers awaited, and again: every
 *            read of the gateway's sees the same requests whatever the client's speed.
 */
function drive(inst, n, mode, prepared) {
  if (prepared === undefined) {
    let sent = 0;
    const worker = async () => {
      while (sent < n) {
        sent++;
        check(inst, await inst.child.request('tools/call', inst.echo));
      }
    };
    return Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  }
  const { first, lines, bursts } = prepared;
  const stdin = inst.child.child.stdin;
  return new Promise((resolve, reject) => {
    let answered = 0;
    let sent = 0;
    let restore;
    const done = (error) => {
      restore();
      inst.child.pending.delete(-1);
      if (error === undefined) resolve();
      else reject(error);
    };
    // A gateway that exits fails everything pending: a sentinel entry carries that to here.
    inst.child.pending.set(-1, { method: 'tools/call', resolve: () => {}, reject: done });
    if (mode === 'lean') {
      restore = leanAnswers(inst, (id) => {
        if (id < first || id >= first + n) return;
        if (++answered === n) done();
        else if (sent < n) stdin.write(lines[sent++]);
      });
      for (; sent < Math.min(IN_FLIGHT, n);) stdin.write(lines[sent++]);
      return;
    }
    let waiting = 0;
    let next = 0;
    const burst = () => {
      const k = Math.min(IN_FLIGHT, n - sent);
      waiting = k;
      stdin.write(bursts[next++]);
      sent += k;
    };
    restore = leanAnswers(inst, (id) => {
      if (id < first || id >= first + n) return;
      answered++;
      if (--waiting > 0) return;
      if (answered === n) done();
      else burst();
    });
    burst();
  });
}

/** `n` calls with 32 in flight: wall time (ms) and the gateway's CPU (µs) over them. */
async function concurrent(inst, n, mode = DRIVES[0]) {
  const cpu0 = cpuMicros(inst.child.pid);
  const fixture0 = cpuMicros(inst.fixture);
  const io0 = ioCounts(inst.child.pid);
  const ticks0 = userSysTicks(inst.child.pid);
  const reads0 = inst.clientReads;
  const probe0 = flags.probe ? await probe(inst) : undefined;
  const prepared = mode === 'natural' ? undefined : requestLines(inst, n, mode);
  const t = performance.now();
  await drive(inst, n, mode, prepared);
  const ms = performance.now() - t;
  const cpu = cpuMicros(inst.child.pid) - cpu0;
  const fixture = cpuMicros(inst.fixture) - fixture0;
  const io = ioCounts(inst.child.pid);
  const ticks = userSysTicks(inst.child.pid);
  const probed = flags.probe ? await probe(inst) : undefined;
  return {
    ms,
    cpu,
    fixture,
    syscalls: io.syscr + io.syscw - io0.syscr - io0.syscw,
    syscr: io.syscr - io0.syscr,
    syscw: io.syscw - io0.syscw,
    rchar: io.rchar - io0.rchar,
    wchar: io.wchar - io0.wchar,
    utime: ticks.utime - ticks0.utime,
    stime: ticks.stime - ticks0.stime,
    clientReads: inst.clientReads - reads0,
    probe:
      probed === undefined
        ? undefined
        : Object.fromEntries(Object.keys(probed).map((k) => [k, probed[k] - probe0[k]])),
  };
}

/**
 * The gateway's I/O counters (/proc/<pid>/io): read and write system calls and bytes. Per call,
 * they show how requests and answers batched, which moves CPU per call at 32 in flight whatever
 * the work.
 */
function ioCounts(pid) {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)[1]);
  return { syscr: field('syscr'), syscw: field('syscw'), rchar: field('rchar'), wchar: field('wchar') };
}

/** User and system clock ticks of the whole process (/proc/<pid>/stat utime, stime). */
function userSysTicks(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { utime: Number(f[11]), stime: Number(f[12]) };
}

/** The --probe counters of a gateway (see lib/ioProbe.mjs), asked for with SIGUSR2. */
async function probe(inst) {
  const file = path.join(work, `${inst.child.pid}.json`);
  let before = -1;
  try {
    before = JSON.parse(readFileSync(file, 'utf8')).seq;
  } catch {
    // none yet
  }
  process.kill(inst.child.pid, 'SIGUSR2');
  for (;;) {
    try {
      const counts = JSON.parse(readFileSync(file, 'utf8'));
      if (counts.seq > before) return counts;
    } catch {
      // not written yet
    }
    await new Promise((r) => setTimeout(r, 2));
  }
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
    // In --callgrind-dir when given, kept for callgrind_annotate; else in the scratch directory.
    const file = path.join(flags['callgrind-dir'] ?? work, `${name}.callgrind`);
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
  if (flags.floor)
    specs.push(
      ...[
        ['floor', FLOOR, false],
        ['floor-modern', FLOOR, true],
      ].filter(([name]) => flags.only === undefined || flags.only.split(',').includes(name)),
    );
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
    for (const mode of DRIVES)
      await deadline(concurrent(inst, WARMUP, mode), TIMEOUT_MS, `${inst.name} warm-up`);
  }
  for (const inst of insts) inst.cpuStart = cpuMicros(inst.child.pid);
  for (let b = 0; b < BLOCKS; b++) {
    for (const inst of rotate(insts, b)) {
      const s = await deadline(sequential(inst, SEQ), TIMEOUT_MS, `${inst.name} sequential`);
      const sample = { seqCpu: s.cpu / SEQ, p50: median(s.lat), seqCpuTotal: s.cpu, totals: {} };
      for (const mode of DRIVES) {
        const c = await deadline(concurrent(inst, CONC, mode), TIMEOUT_MS, `${inst.name} concurrent`);
        const tag = DRIVES.length === 1 ? '' : ` ${mode}`;
        sample[`concCpu${tag}`] = c.cpu / CONC;
        sample[`fixtureCpu${tag}`] = c.fixture / CONC;
        sample[`syscallsPerCall${tag}`] = c.syscalls / CONC;
        sample[`callsPerSec${tag}`] = CONC / (c.ms / 1000);
        sample.totals[mode] = c;
      }
      inst.samples.push(sample);
    }
  }
  for (const inst of insts) inst.cpuEnd = cpuMicros(inst.child.pid);
  const seconds = (performance.now() - t0) / 1000;
  const loadAfter = loadavg().map((x) => x.toFixed(2));
  await Promise.all(insts.map((i) => i.child.close()));

  const metrics = [
    ['seqCpu', 'cpu µs/call seq'],
    ['p50', 'p50 µs'],
    ...DRIVES.flatMap((mode) => {
      const tag = DRIVES.length === 1 ? '' : ` ${mode}`;
      return [
        [`concCpu${tag}`, `cpu µs/call @32${tag}`],
        [`fixtureCpu${tag}`, `fixture cpu @32${tag}`],
        [`syscallsPerCall${tag}`, `syscalls/call @32${tag}`],
        [`callsPerSec${tag}`, `calls/s @32${tag}`],
      ];
    }),
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
  out.push(
    ['instance'.padEnd(16), ...metrics.map(([, h]) => h.padStart(Math.max(16, h.length + 2)))].join(''),
  );
  for (const inst of insts)
    out.push(
      [
        inst.name.padEnd(16),
        ...metrics.map(([k]) =>
          median(inst.samples.map((s) => s[k]))
            .toFixed(k.startsWith('callsPerSec') ? 0 : 2)
            .padStart(Math.max(16, metrics.find(([m]) => m === k)[1].length + 2)),
        ),
      ].join(''),
    );
  out.push('');
  out.push('Ratios per block: median [quartiles]');
  out.push(['ratio'.padEnd(26), ...metrics.map(([, h]) => h.padStart(Math.max(22, h.length + 2)))].join(''));
  const byName = Object.fromEntries(insts.map((i) => [i.name, i]));
  const pairs = [];
  for (const prefix of ['', ...(BASE_CLI === undefined ? [] : ['base-'])]) {
    pairs.push([`${prefix}modern`, `${prefix}legacy`], [`${prefix}legacy2`, `${prefix}legacy`]);
    pairs.push([`${prefix}modern`, `${prefix}legacy2`]);
  }
  if (BASE_CLI !== undefined) pairs.push(['modern', 'base-modern'], ['legacy', 'base-legacy']);
  if (flags.floor) pairs.push(['floor-modern', 'floor']);
  const ratios = {};
  for (const [a, b] of pairs) {
    if (byName[a] === undefined || byName[b] === undefined) continue;
    const cells = metrics.map(([k]) => {
      const r = byName[a].samples.map((s, i) => s[k] / byName[b].samples[i][k]);
      (ratios[`${a}/${b}`] ??= {})[k] = { median: median(r), q1: quantile(r, 0.25), q3: quantile(r, 0.75) };
      return `${median(r).toFixed(3)} [${quantile(r, 0.25).toFixed(2)}-${quantile(r, 0.75).toFixed(2)}]`.padStart(
        Math.max(22, metrics.find(([m]) => m === k)[1].length + 2),
      );
    });
    out.push([`${a}/${b}`.padEnd(26), ...cells].join(''));
  }
  out.push('');
  for (const mode of DRIVES) out.push(...batchingTable(insts, byName, pairs, mode), '');
  out.push(...wholeRunRows(insts));
  process.stdout.write(`${out.join('\n')}\n`);
  if (flags.out !== undefined)
    writeFileSync(
      flags.out,
      `${JSON.stringify({ loadBefore, loadAfter, samples: Object.fromEntries(insts.map((i) => [i.name, i.samples])), ratios }, null, 2)}\n`,
    );
}

/**
 * How the calls at 32 in flight batched, and where the gateway's CPU went, summed over every
 * block (user and system time count in 10 ms ticks, too coarse for one block): per call, the
 * gateway's user and system CPU, its read and write system calls and bytes (/proc/<pid>/io),
 * the client's reads of its answers, and with --probe the gateway's own reads and writes on the
 * host's pipes and the upstream's.
 */
function batchingTable(insts, byName, pairs, mode) {
  const tick = 1e6 / 100;
  const columns = [
    ['user µs', (t) => t.utime * tick],
    ['sys µs', (t) => t.stime * tick],
    ['syscr', (t) => t.syscr],
    ['syscw', (t) => t.syscw],
    ['rchar B', (t) => t.rchar],
    ['wchar B', (t) => t.wchar],
    ['client reads', (t) => t.clientReads],
    ...(flags.probe
      ? [
          ['host reads', (t) => t.probe.hostReads],
          ['host writes', (t) => t.probe.hostWrites],
          ['up reads', (t) => t.probe.upReads],
          ['up writes', (t) => t.probe.upWrites],
          ['scav/1k', (t) => t.probe.scavenges * 1000],
          ['scav µs', (t) => t.probe.scavengeMs * 1000],
          ['majorGC µs', (t) => t.probe.otherGcMs * 1000],
        ]
      : []),
  ];
  const perCall = (inst) => {
    const calls = inst.samples.length * CONC;
    return columns.map(([, f]) => inst.samples.reduce((sum, s) => sum + f(s.totals[mode]), 0) / calls);
  };
  const rows = [`Per call at 32 in flight (${mode}), summed over all blocks`];
  rows.push(['instance'.padEnd(26), ...columns.map(([h]) => h.padStart(13))].join(''));
  for (const inst of insts)
    rows.push([inst.name.padEnd(26), ...perCall(inst).map((v) => v.toFixed(3).padStart(13))].join(''));
  for (const [a, b] of pairs) {
    if (byName[a] === undefined || byName[b] === undefined) continue;
    const va = perCall(byName[a]);
    const vb = perCall(byName[b]);
    rows.push(
      [`${a}/${b}`.padEnd(26), ...va.map((v, i) => `${(v / vb[i]).toFixed(3)}×`.padStart(13))].join(''),
    );
  }
  return rows;
}

/**
 * The gateway's CPU over the whole run against the part inside the instance's own turns: the
 * rest is what it did while another instance was measured (deferred work, collections), which
 * no per-turn figure charges to it.
 */
function wholeRunRows(insts) {
  return insts.map((inst) => {
    const inside = inst.samples.reduce(
      (sum, s) => sum + s.seqCpuTotal + Object.values(s.totals).reduce((t, c) => t + c.cpu, 0),
      0,
    );
    const calls = inst.samples.length * (SEQ + CONC * DRIVES.length);
    return (
      `${inst.name}: ${((inst.cpuEnd - inst.cpuStart) / calls).toFixed(2)} µs/call over the whole run, ` +
      `${(inside / calls).toFixed(2)} inside its own turns`
    );
  });
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`modernCost: FAILED: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
