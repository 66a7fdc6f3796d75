#!/usr/bin/env node
// What each part of warden-full costs per call: the built gateway with warden-full's config, the
// same config with one thing taken out, warden-bare and the JSON floor, all alive at once and
// measured in turns (pass by pass, in alternating order), so a busy neighbour hurts them alike.
// Per pass and configuration: CPU of the middle process per call over N calls at 32 in flight,
// calls per second, and (with --seq) the p50 of sequential calls; each with its ratio to the
// JSON floor of the same pass. Then, as medians over the passes, the CPU per call of all three
// processes (client, middle, upstream fixture: on two cores they share, their sum is what sets
// the rate at 32 in flight), split into user and system time, and each one's read and write
// syscalls per call. `floor-audit` is the floor with the least audit trail that keeps warden's
// default guarantees (FLOOR_AUDIT, see floor.mjs): set against `full` and `full-noaudit`, it
// shows how much of the audit trail's cost any gateway with those guarantees pays. `floor-full`
// adds to it, at their least, the per-call jobs warden-full does beyond the trail (FLOOR_FULL, see
// floor.mjs): set against `full`, it shows how much of warden-full's cost any gateway doing the
// same work pays.
//
//   node bench/featureCost.mjs [--calls N] [--passes P] [--seq N] [--only a,b,...]
//                              [--cli FILE] [--baseline-cli FILE] [--pipes] [--callgrind CALLS]
//                              [--callgrind-dir DIR] [--warmup N] [--skip-floor] [--node-arg=--flag ...]
//                              [--idle MS] [--blocks N] [--gc]
//
// --baseline-cli adds full-base, full-noaudit-base and bare-base: the same configs served by
// another build. --pipes adds one more pass per configuration, not timed, that counts with
// `perf stat` the reads and writes on each of the four pipes (see lib/pipes.mjs): how many
// messages each carries. --callgrind CALLS counts instead the middle process's instructions per
// call (user space, every thread) over CALLS calls at 32 in flight after the warm-up, one
// configuration after the other under valgrind: what the machine's load cannot move (slow:
// about a minute per configuration for 20000 calls). The kernel's side of the syscalls
// (the audit writes and stats among them) is not counted. --callgrind-dir keeps the dumps there
// (NAME.callgrind.1), for callgrind_annotate; --warmup sets the calls before the count (3000);
// --skip-floor counts only the configurations named (the first is then the one ratios are to).
// --node-arg passes a flag to every middle process's node (e.g. --node-arg=--perf-basic-prof,
// so that JIT code can be named from /tmp/perf-PID.map).
// --idle MS gives each configuration a pause of MS milliseconds between its timed passes (from the
// end of one to the start of the next), the same for every configuration: a gateway that has
// slept costs more per call in the calls after it wakes than one kept busy, and how much depends
// on how long it slept (use it with small --calls, e.g. 2000, run.mjs's block). The order is
// then the same in every pass, not alternated: alternated, the configuration at either end of
// the order would sleep by turns much less and much more than the others. Pauses and page
// faults per call are printed, so that unequal pauses show.
// With --callgrind, --idle MS pauses before each of --blocks N counted blocks (1 by default);
// the median block is the figure. --gc preloads lib/gcLog.mjs into every middle process and
// prints, per configuration, the young and full collections in its timed passes and the size
// of V8's new space after them: counts the machine's load does not move, which show the young
// generation shrunk after a long pause (more young collections, a smaller new space).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { underCallgrind, dumpCounts, zeroCounts } from './lib/callgrind.mjs';
import { recordPrices } from './lib/prices.mjs';
import { deadline, RpcChild } from './lib/client.mjs';
import { BARE_GATEWAY, BARE_LIMITS, BENCH_POLICY } from './lib/configs.mjs';
import { contextSwitches, countPipes, pipeDirections, syscalls, userSystemMicros } from './lib/pipes.mjs';
import { childPids, cpuMicros, minorFaults } from './lib/proc.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const NODE = process.execPath;
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const { values: flags } = parseArgs({
  options: {
    calls: { type: 'string' },
    passes: { type: 'string' },
    seq: { type: 'string' },
    only: { type: 'string' },
    cli: { type: 'string' },
    'baseline-cli': { type: 'string' },
    pipes: { type: 'boolean' },
    callgrind: { type: 'string' },
    warmup: { type: 'string' },
    'callgrind-dir': { type: 'string' },
    'node-arg': { type: 'string', multiple: true, default: [] },
    idle: { type: 'string' },
    blocks: { type: 'string' },
    gc: { type: 'boolean' },
    'skip-floor': { type: 'boolean' },
  },
});
const CALLS = Number(flags.calls ?? 20000);
const PASSES = Number(flags.passes ?? 3);
const SEQ = Number(flags.seq ?? 0);
const WARMUP = Number(flags.warmup ?? 3000);
const IDLE_MS = Number(flags.idle ?? 0);
const BLOCKS = Number(flags.blocks ?? 1);
const CLI = path.resolve(flags.cli ?? path.join(BENCH, '..', 'dist/cli.js'));
const BASE = flags['baseline-cli'] === undefined ? undefined : path.resolve(flags['baseline-cli']);
const TEXT = 'hello from the warden bench';

const work = mkdtempSync(path.join(tmpdir(), 'warden-feature-cost-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

// Each configuration's files live in a folder of its own: a gateway with policies watches their
// folder, and every audit write into a watched folder wakes the watcher. With one shared folder,
// each gateway's audit writes woke every other gateway of the run.
const folderOf = (name) => {
  const dir = path.join(work, name);
  mkdirSync(dir, { recursive: true });
  return dir;
};
// The policy of bench/run.mjs: five rules of the usual kinds, every echo call judged by all.
const policyOf = (name) => {
  const file = path.join(folderOf(name), 'policy.json');
  writeFileSync(file, JSON.stringify(BENCH_POLICY));
  return file;
};

const fixture = { command: NODE, args: [FIXTURE, '--tools', '0'] };
const bare = { gateway: BARE_GATEWAY, servers: { bench: { ...fixture, ...BARE_LIMITS } } };
const audit = (name, extra = {}) => ({ file: path.join(folderOf(name), 'audit.jsonl'), ...extra });
const full = (name) => ({ servers: { bench: fixture }, policies: [policyOf(name)], audit: audit(name) });
const noAudit = (name) => ({ servers: { bench: fixture }, policies: [policyOf(name)] });

/** name → the gateway config it serves (a function of its name, for its own audit file), or the floor. */
const VARIANTS = {
  floor: undefined,
  // A second floor, identical: its ratios to the first are the noise of the pass.
  floor2: undefined,
  'floor-audit': undefined,
  'floor-full': undefined,
  bare: () => bare,
  'bare-audit': (n) => ({ ...bare, audit: audit(n) }),
  full,
  'full-noaudit': noAudit,
  // full-noaudit with one of its stages' work taken out, each towards warden-bare: what the
  // policy, argument validation, result repair and the queue of the concurrency limit cost.
  'noaudit-nopolicy': () => ({ servers: { bench: fixture } }),
  'noaudit-novalidate': (n) => ({ ...noAudit(n), gateway: { validateArguments: false } }),
  'noaudit-norepair': (n) => ({ ...noAudit(n), gateway: { repair: BARE_GATEWAY.repair } }),
  'noaudit-c64': (n) => ({ ...noAudit(n), servers: { bench: { ...fixture, ...BARE_LIMITS } } }),
  'full-nopolicy': (n) => ({ servers: { bench: fixture }, audit: audit(n) }),
  'full-continue': (n) => ({ ...full(n), audit: audit(n, { onFailure: 'continue' }) }),
  'full-c64': (n) => ({ ...full(n), servers: { bench: { ...fixture, maxConcurrency: 64 } } }),
  // The audit file out of the watched policy's folder: its writes then wake no file watcher.
  'full-auditdir': (n) => ({ ...full(n), audit: { file: path.join(folderOf(n), 'audit', 'audit.jsonl') } }),
  ...(BASE !== undefined && { 'full-base': full, 'full-noaudit-base': noAudit, 'bare-base': () => bare }),
};
const names = flags.only === undefined ? Object.keys(VARIANTS) : flags.only.split(',');
for (const name of names) if (!(name in VARIANTS)) throw new Error(`unknown configuration ${name}`);
// With --callgrind, --skip-floor leaves the JSON floor out: its count does not depend on the build.
if (!names.includes('floor') && !(flags['skip-floor'] && flags.callgrind !== undefined))
  names.unshift('floor');

/** How to start a configuration's middle process; under callgrind when `callgrindOut` is given. */
const GC_LOG = pathToFileURL(path.join(BENCH, 'lib/gcLog.mjs')).href;
const gcLogOf = (name) => path.join(folderOf(name), 'gc.log');

function launch(name, callgrindOut) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const nodeArgs = [...flags['node-arg']];
  if (flags.gc) {
    env.BENCH_GC_LOG = gcLogOf(name);
    nodeArgs.push('--import', GC_LOG);
  }
  let args;
  if (name.startsWith('floor')) {
    if (name === 'floor-audit' || name === 'floor-full') env.FLOOR_AUDIT = audit(name).file;
    if (name === 'floor-full') env.FLOOR_FULL = policyOf(name);
    args = [...nodeArgs, path.join(BENCH, 'floor.mjs'), NODE, FIXTURE, '--tools', '0'];
  } else {
    const file = path.join(folderOf(name), 'config.json');
    writeFileSync(file, JSON.stringify(VARIANTS[name](name)));
    args = [...nodeArgs, name.endsWith('-base') ? BASE : CLI, '--config', file];
  }
  if (callgrindOut !== undefined) return { ...underCallgrind(callgrindOut, NODE, args), env };
  return { command: NODE, args, env };
}

async function start(name, callgrindOut) {
  const child = new RpcChild({ label: name, ...launch(name, callgrindOut) });
  const hello = {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'cost', version: '1' },
  };
  // Under valgrind a gateway takes a minute or more to load and start its upstream.
  const wait = callgrindOut === undefined ? 30_000 : 300_000;
  await deadline(child.request('initialize', JSON.stringify(hello)), wait, `${name} initialize`);
  child.notify('notifications/initialized');
  // The floors pass the server's names on as they are, but floor-full exposes them as the gateway does.
  const tool = name.startsWith('floor') && name !== 'floor-full' ? 'echo' : 'bench__echo';
  // The gateway answers the host before its upstream is up (slowly, under valgrind): the tool is
  // listed once the upstream has started, and calls before that would be refused as too early.
  const listed = async () => {
    for (;;) {
      const { tools } = await child.request('tools/list');
      if (tools.some((t) => t.name === tool)) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  await deadline(listed(), wait, `${name} tools/list naming ${tool}`);
  return { name, child, params: JSON.stringify({ name: tool, arguments: { text: TEXT } }) };
}

function check(result, name) {
  if (result?.content?.[0]?.text !== TEXT) throw new Error(`${name}: wrong answer ${JSON.stringify(result)}`);
}

async function concurrent(inst, total) {
  let sent = 0;
  const worker = async () => {
    while (sent < total) {
      sent++;
      check(await inst.child.request('tools/call', inst.params), inst.name);
    }
  };
  // Under valgrind on a busy machine, 10,000 calls may take far longer than 5 minutes.
  const wait = flags.callgrind === undefined ? 300_000 : 3_600_000;
  await deadline(Promise.all(Array.from({ length: 32 }, worker)), wait, `${inst.name} calls`);
}

async function sequentialP50(inst, n) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    check(await inst.child.request('tools/call', inst.params), inst.name);
    times.push((performance.now() - t) * 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

if (flags.callgrind !== undefined) {
  // One configuration at a time: valgrind makes each one slow enough to need a core of its own.
  const calls = Number(flags.callgrind);
  console.log(
    `callgrind: ${calls} calls at 32 in flight after ${WARMUP}` +
      (IDLE_MS > 0 ? `, ${BLOCKS} blocks each after ${IDLE_MS} ms idle` : '') +
      ', instructions of the middle process',
  );
  let floorCount;
  const counts = {};
  for (const name of names) {
    const file = path.join(flags['callgrind-dir'] ?? work, `${name}.callgrind`);
    const inst = await start(name, file);
    await concurrent(inst, WARMUP);
    // With --idle, each block of calls follows a pause (counted from its zeroing to its dump, so
    // what the process does while it idles is left out); the median block is the figure.
    const blocks = [];
    for (let block = 1; block <= BLOCKS; block++) {
      if (IDLE_MS > 0) await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      zeroCounts(inst.child.pid);
      await concurrent(inst, calls);
      blocks.push(dumpCounts(inst.child.pid, file, block) / calls);
    }
    await inst.child.close(60_000);
    const perCall = median(blocks);
    floorCount ??= perCall;
    counts[name] = perCall;
    const each = BLOCKS > 1 ? `  blocks: ${blocks.map((b) => (b / 1000).toFixed(1)).join(' ')}` : '';
    console.log(
      `${name.padEnd(18)}${(perCall / 1000).toFixed(1).padStart(8)}k per call  ${(perCall / floorCount).toFixed(2)}× floor${each}`,
    );
  }
  const ratio = (a, b) =>
    counts[a] !== undefined && counts[b] !== undefined ? counts[a] / counts[b] : undefined;
  recordPrices(
    'featureCost',
    [
      {
        what: 'instructions per call, warden-full ÷ json-floor-full',
        value: ratio('full', 'floor-full'),
        unit: '×',
        atMost: 1.1,
      },
      {
        what: 'instructions per call, warden-full ÷ the baseline build',
        value: ratio('full', 'full-base'),
        unit: '×',
      },
    ].filter((p) => p.value !== undefined),
  );
  process.exit(0);
}

const instances = [];
for (const name of names) instances.push(await start(name));
for (const inst of instances) {
  await concurrent(inst, 3000);
  if (SEQ > 0) await sequentialP50(inst, 1000);
}
const results = Object.fromEntries(names.map((n) => [n, []]));
/** Everything measured of one process, to subtract two readings. */
const reading = (pid) => ({
  cpu: cpuMicros(pid),
  faults: minorFaults(pid),
  ...userSystemMicros(pid),
  ...syscalls(pid),
  ...contextSwitches(pid),
});
const clientReading = () => {
  const { user, system } = process.cpuUsage();
  return {
    cpu: user + system,
    faults: minorFaults(process.pid),
    user,
    system,
    ...syscalls(process.pid),
    ...contextSwitches(process.pid),
  };
};
const perCall = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, (b[k] - a[k]) / CALLS]));
/** When each configuration's last block (or its warm-up) ended, for equal pauses. */
const lastEnd = new Map(instances.map((inst) => [inst, performance.now()]));
for (let pass = 0; pass < PASSES; pass++) {
  const order = IDLE_MS > 0 || pass % 2 === 0 ? instances : [...instances].reverse();
  for (const inst of order) {
    const pid = inst.child.pid;
    const [upstream] = childPids(pid);
    const rest = IDLE_MS - (performance.now() - lastEnd.get(inst));
    if (IDLE_MS > 0 && rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
    const pause = performance.now() - lastEnd.get(inst);
    const mid0 = reading(pid);
    const up0 = reading(upstream);
    const client0 = clientReading();
    const from = Date.now();
    const t0 = performance.now();
    await concurrent(inst, CALLS);
    const ms = performance.now() - t0;
    const to = Date.now();
    const client = perCall(client0, clientReading());
    const mid = perCall(mid0, reading(pid));
    const up = perCall(up0, reading(upstream));
    const r = {
      cpu: mid.cpu,
      upstream: up.cpu,
      total: client.cpu + mid.cpu + up.cpu,
      busiest: Math.max(client.cpu, mid.cpu, up.cpu),
      rate: (CALLS / ms) * 1000,
      pause,
      window: [from, to],
      procs: { client, mid, up },
    };
    if (SEQ > 0) r.p50 = await sequentialP50(inst, SEQ);
    lastEnd.set(inst, performance.now());
    results[inst.name].push(r);
  }
}
const pipes = {};
if (flags.pipes) {
  for (const inst of instances) {
    const pid = inst.child.pid;
    const [upstream] = childPids(pid);
    const counter = countPipes(pipeDirections(pid, upstream), [process.pid, pid, upstream]);
    await counter.ready;
    await concurrent(inst, CALLS);
    pipes[inst.name] = await counter.stop();
  }
}
await Promise.all(instances.map((inst) => inst.child.close()));

const floor = results.floor;
console.log(
  `${CALLS} calls at 32 in flight per pass${SEQ > 0 ? `, then ${SEQ} sequential` : ''}; ${PASSES} passes; ` +
    (IDLE_MS > 0 ? `each pass after ${IDLE_MS} ms idle; ` : '') +
    'per pass: gateway CPU µs/call (÷ floor), fixture CPU, calls/s (÷ floor), p50 µs (÷ floor)',
);
const x = (a, b) => `${(a / b).toFixed(2)}×`;
for (const name of names) {
  const row = results[name].map((r, i) => {
    const f = floor[i];
    const p50 = r.p50 === undefined ? '' : ` p50 ${r.p50.toFixed(0)} (${x(r.p50, f.p50)})`;
    return `cpu ${r.cpu.toFixed(1)} (${x(r.cpu, f.cpu)}) fx ${r.upstream.toFixed(1)} ${r.rate.toFixed(0)}/s (${x(r.rate, f.rate)})${p50}`;
  });
  console.log(`${name.padEnd(14)} ${row.join(' | ')}`);
}

const ratioMedian = (name, get) => median(results[name].map((r, i) => get(r) / get(floor[i])));
console.log(
  `\nMedians over the passes, per call at 32 in flight (ratios: median of per-pass ratios to the floor).\n` +
    'CPU µs as user+system from /proc/<pid>/stat (10 ms ticks); total = client + middle + fixture\n' +
    '(schedstat), busiest = the largest of the three; r/w = read and write syscalls of that process\n' +
    '(/proc/<pid>/io)',
);
const pad = (v, n) => String(v).padStart(n);
console.log(
  `${'config'.padEnd(18)}${pad('calls/s', 8)}${pad('÷fl', 7)}${pad('total', 7)}${pad('÷fl', 7)}` +
    `${pad('busiest', 8)}${pad('÷fl', 7)}${pad('mid u+s', 12)}${pad('mid r/w', 11)}${pad('fx u+s', 11)}${pad('fx r/w', 11)}` +
    `${pad('client u+s', 12)}${pad('client r/w', 12)}`,
);
const us = (p, k) => median(results[p].map((r) => r.procs[k].user)).toFixed(1);
const sy = (p, k) => median(results[p].map((r) => r.procs[k].system)).toFixed(1);
const rw = (p, k) =>
  `${median(results[p].map((r) => r.procs[k].reads)).toFixed(2)}/${median(results[p].map((r) => r.procs[k].writes)).toFixed(2)}`;
for (const name of names) {
  console.log(
    `${name.padEnd(18)}${pad(median(results[name].map((r) => r.rate)).toFixed(0), 8)}` +
      `${pad(ratioMedian(name, (r) => r.rate).toFixed(2), 7)}` +
      `${pad(median(results[name].map((r) => r.total)).toFixed(1), 7)}` +
      `${pad(ratioMedian(name, (r) => r.total).toFixed(2), 7)}` +
      `${pad(median(results[name].map((r) => r.busiest)).toFixed(1), 8)}` +
      `${pad(ratioMedian(name, (r) => r.busiest).toFixed(2), 7)}` +
      `${pad(`${us(name, 'mid')}+${sy(name, 'mid')}`, 12)}${pad(rw(name, 'mid'), 11)}` +
      `${pad(`${us(name, 'up')}+${sy(name, 'up')}`, 11)}${pad(rw(name, 'up'), 11)}` +
      `${pad(`${us(name, 'client')}+${sy(name, 'client')}`, 12)}${pad(rw(name, 'client'), 12)}`,
  );
}
console.log(
  '\nContext switches per 100 calls of each main thread: slept (waited for input, so one wake-up each)\n' +
    '/ preempted (runnable, but the CPU went to another task)',
);
console.log(`${'config'.padEnd(18)}${pad('middle', 14)}${pad('fixture', 14)}${pad('client', 14)}`);
const cs = (p, k) =>
  `${(100 * median(results[p].map((r) => r.procs[k].voluntary))).toFixed(1)} / ${(100 * median(results[p].map((r) => r.procs[k].preempted))).toFixed(1)}`;
for (const name of names)
  console.log(
    `${name.padEnd(18)}${pad(cs(name, 'mid'), 14)}${pad(cs(name, 'up'), 14)}${pad(cs(name, 'client'), 14)}`,
  );
if (IDLE_MS > 0) {
  console.log(
    "\nPause before each timed pass (median and longest, ms) and the middle process's minor page\n" +
      'faults per call (median): what V8 gives back while a process sleeps, it maps in again after',
  );
  for (const name of names) {
    const pauses = results[name].map((r) => r.pause);
    console.log(
      `${name.padEnd(18)}${pad(median(pauses).toFixed(0), 8)}${pad(Math.max(...pauses).toFixed(0), 8)}` +
        `${pad(median(results[name].map((r) => r.procs.mid.faults)).toFixed(2), 8)}`,
    );
  }
}
if (flags.gc) {
  console.log(
    "\nCollections per timed pass of the middle process (median and range: young; full) and V8's\n" +
      'new space after its young collections (median and range, MB)',
  );
  const range = (xs) => `${median(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`;
  for (const name of names) {
    const events = readFileSync(gcLogOf(name), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split(' ').map(Number));
    const young = [];
    const full = [];
    const sizes = [];
    for (const { window } of results[name]) {
      const inside = events.filter(([t]) => t >= window[0] && t <= window[1]);
      young.push(inside.filter(([, kind]) => kind === 1).length);
      full.push(inside.filter(([, kind]) => kind === 4).length);
      for (const [, kind, kb] of inside) if (kind === 1) sizes.push(kb / 1024);
    }
    const mb = sizes.length === 0 ? '-' : range(sizes);
    console.log(`${name.padEnd(18)}${pad(range(young), 14)}${pad(range(full), 12)}${pad(mb, 16)}`);
  }
}
if (flags.pipes) {
  console.log(
    `\nMessages per write / per read on each pipe (one uncounted-for-time pass of ${CALLS} calls, perf stat)`,
  );
  const dirs = Object.keys(Object.values(pipes)[0] ?? {});
  console.log(`${'config'.padEnd(18)}${dirs.map((d) => pad(d, 16)).join('')}`);
  for (const name of names) {
    const cells = dirs.map((d) => {
      const { writes, reads } = pipes[name][d];
      return pad(`${(CALLS / writes).toFixed(2)} / ${(CALLS / reads).toFixed(2)}`, 16);
    });
    console.log(`${name.padEnd(18)}${cells.join('')}`);
  }
}
