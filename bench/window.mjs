#!/usr/bin/env node
// What bench/run.mjs's CPU-per-call figure for warden-full is made of, against another build.
// run.mjs starts fresh gateways every round and reads their CPU over its throughput phase: 20,000
// calls at 32 in flight in 10 blocks, after 1,000 sequential and 1,000 concurrent warm-up calls,
// 100 structured, 9 large results, then 5,000 sequential echo and 1,000 structured calls in
// blocks; so its window is about calls 8,100 to 28,100 of a new process, while the gateway is
// still tiering up. This driver replays that schedule for two gateways only (warden-full's config
// served by this build and by --baseline-cli), alive at once and taking turns block by block as
// in run.mjs, and in the throughput window reads, per gateway:
//
//   - CPU per call (/proc/<pid>/task/*/schedstat), the main thread apart from the others (V8's
//     optimizing compiler and concurrent GC, libuv's pool), and as user and system time
//     (/proc/<pid>/stat, in 10 ms ticks);
//   - minor page faults per call;
//   - with --trace: the functions V8 optimized and deoptimized in the window (`--trace-opt
//     --trace-deopt`, read off the gateway's stdout, line-buffered with stdbuf) and the compile
//     time it reported for them;
//   - with --callgrind: instructions per call instead of CPU (the process under valgrind, counts
//     zeroed before each block and dumped after it), split by function name into V8's
//     optimizing compiler, its garbage collector, the interpreter, other builtins, JIT code
//     (unnamed) and the rest.
//
//   node bench/window.mjs --baseline-cli FILE [--cli FILE] [--runs N] [--warmup N] [--gap MS]
//                         [--trace] [--gc] [--callgrind] [--callgrind-dir DIR] [--no-code-cache]
//                         [--first new|base] [--only new|base] [--trace-out DIR]
//
// --warmup N: concurrent warm-up calls (run.mjs's default 1,000), to see whether the two builds
// converge once both have warmed longer. --gap MS: a pause before each block of a gateway (the
// other configurations' blocks in run.mjs; 0 by default). --gc counts the young and full
// collections in the window (lib/gcLog.mjs preloaded), V8's new space before and after it, and the
// bytes allocated and promoted per call (lib/gcWindow.mjs).
// --trace-out DIR keeps each window's trace lines (BUILD-RUN.trace). --callgrind-dir keeps the
// dumps (one per block, BUILD-RUN.callgrind.N) for callgrind_annotate. --no-code-cache gives
// every gateway an empty state folder, so neither reads a code cache. Runs alternate which
// build starts first, beginning with --first. --only new|base runs that build's gateway alone:
// with two, each idles through the other's blocks, and V8 may shrink its young generation then.
// Under valgrind on a busy machine a run takes most of an hour: run a few drivers side by side
// (`--runs 1 --first base` for the second) rather than one with --runs 3.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { dumpCounts, startInstrumenting, underCallgrind, zeroCounts } from './lib/callgrind.mjs';
import { deadline, RpcChild } from './lib/client.mjs';
import { BENCH_POLICY } from './lib/configs.mjs';
import { userSystemMicros } from './lib/pipes.mjs';
import { minorFaults } from './lib/proc.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const NODE = process.execPath;
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const TEXT = 'hello from the warden bench';

const { values: flags } = parseArgs({
  options: {
    cli: { type: 'string' },
    'baseline-cli': { type: 'string' },
    runs: { type: 'string' },
    warmup: { type: 'string' },
    gap: { type: 'string' },
    trace: { type: 'boolean', default: false },
    callgrind: { type: 'boolean', default: false },
    'no-code-cache': { type: 'boolean', default: false },
    first: { type: 'string', default: 'new' },
    only: { type: 'string' },
    'callgrind-dir': { type: 'string' },
    'trace-out': { type: 'string' },
    gc: { type: 'boolean', default: false },
  },
});
if (flags['baseline-cli'] === undefined) {
  process.stderr.write('window: --baseline-cli FILE is required\n');
  process.exit(2);
}
const BUILDS = {
  new: path.resolve(flags.cli ?? path.join(BENCH, '..', 'dist/cli.js')),
  base: path.resolve(flags['baseline-cli']),
};
const RUNS = Number(flags.runs ?? 3);
const WARMUP = Number(flags.warmup ?? 1000);
const GAP_MS = Number(flags.gap ?? 0);
// run.mjs's full-run schedule.
const S = { seqWarmup: 1000, calls: 5000, structured: 1000, throughput: 20000, blocks: 10, blobReps: 9 };
const WAIT_MS = flags.callgrind ? 3_600_000 : 300_000;

const work = mkdtempSync(path.join(tmpdir(), 'warden-window-'));
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill();
  rmSync(work, { recursive: true, force: true });
});

/** A client that keeps the lines V8's tracing writes to the same stdout apart from the answers. */
class TracedChild extends RpcChild {
  constructor(options) {
    super(options);
    this.trace = [];
  }

  onLine(text) {
    let line = text;
    if (this.partial !== undefined) {
      line = this.partial + line;
      this.partial = undefined;
    }
    // A trace line can land inside a long answer that the pipe took in several writes; its
    // newline then splits the answer: keep the answer's start for the line that follows.
    const traced = TRACE_START.exec(line);
    if (traced !== null && traced.index > 0 && line.startsWith('{"jsonrpc"')) {
      this.trace.push(line.slice(traced.index));
      this.partial = line.slice(0, traced.index);
      return;
    }
    const json = line.indexOf('{"jsonrpc"');
    if (json === -1) {
      if (line.length > 0) this.trace.push(line);
      return;
    }
    if (json > 0) this.trace.push(line.slice(0, json));
    super.onLine(line.slice(json));
  }
}

/** Where a line of `--trace-opt` or `--trace-deopt` starts. */
const TRACE_START = /\[(?:marking|compiling|completed|bailout|found optimized|not marking|manually marking)/;

function gatewayConfig(dir, build) {
  const policy = path.join(dir, 'policy.json');
  writeFileSync(policy, JSON.stringify(BENCH_POLICY));
  const config = {
    servers: { bench: { command: NODE, args: [FIXTURE, '--tools', '0'] } },
    policies: [policy],
    audit: { file: path.join(dir, 'audit.jsonl') },
    // As in run.mjs: a build with a catalogue is asked for the whole list.
    ...(build === 'new' && { catalog: { mode: 'all' } }),
  };
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

async function start(build, run) {
  const dir = path.join(work, `${build}-${run}`);
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  if (flags['no-code-cache']) env.XDG_STATE_HOME = path.join(dir, 'state');
  const nodeArgs = flags.trace ? ['--trace-opt', '--trace-deopt'] : [];
  const gcLog = path.join(dir, 'gc.log');
  const gcWindow = path.join(dir, 'gc-window.json');
  if (flags.gc) {
    env.BENCH_GC_LOG = gcLog;
    env.BENCH_GC_WINDOW = gcWindow;
    for (const preload of ['lib/gcLog.mjs', 'lib/gcWindow.mjs'])
      nodeArgs.push('--import', pathToFileURL(path.join(BENCH, preload)).href);
  }
  const args = [...nodeArgs, BUILDS[build], '--config', gatewayConfig(dir, build)];
  const callgrindOut = path.join(flags['callgrind-dir'] ?? dir, `${build}-${run}.callgrind`);
  const spec = flags.callgrind
    ? underCallgrind(callgrindOut, NODE, args, { instrumentLater: true })
    : flags.trace
      ? { command: 'stdbuf', args: ['-oL', NODE, ...args] }
      : { command: NODE, args };
  const child = new TracedChild({ label: `${build} run ${run}`, ...spec, env });
  live.add(child);
  const hello = {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'window', version: '1' },
  };
  await deadline(child.request('initialize', JSON.stringify(hello)), WAIT_MS, `${build} initialize`);
  child.notify('notifications/initialized');
  // Under valgrind the upstream starts slowly: call only once the tool is listed.
  for (;;) {
    const { tools } = await deadline(child.request('tools/list'), WAIT_MS, `${build} tools/list`);
    if (tools.some((t) => t.name === 'bench__echo')) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const params = (tool, args) => JSON.stringify({ name: `bench__${tool}`, arguments: args });
  return {
    build,
    child,
    callgrindOut,
    gcLog,
    gcWindow,
    blockTimes: [],
    dumps: 0,
    echo: params('echo', { text: TEXT }),
    structured: params('structured', { text: TEXT }),
    blob: params('blob', { kib: 1024 }),
    window: {
      build,
      run,
      calls: 0,
      cpu: {},
      faults: 0,
      user: 0,
      system: 0,
      instructions: 0,
      parts: {},
      trace: [],
    },
  };
}

async function sequential(inst, params, n) {
  for (let i = 0; i < n; i++) {
    const result = await deadline(inst.child.request('tools/call', params), WAIT_MS, `${inst.build} call`);
    if (result?.isError) throw new Error(`${inst.build}: call failed ${JSON.stringify(result)}`);
  }
}

async function concurrent(inst, n) {
  let sent = 0;
  const worker = async () => {
    while (sent < n) {
      sent++;
      const result = await inst.child.request('tools/call', inst.echo);
      if (result?.content?.[0]?.text !== TEXT) throw new Error(`${inst.build}: wrong answer`);
    }
  };
  await deadline(Promise.all(Array.from({ length: 32 }, worker)), WAIT_MS, `${inst.build} calls`);
}

/**
 * CPU µs of process `pid` by thread: the main thread (whose id is the pid) apart, the others
 * summed by name (Node 20 leaves V8's and libuv's workers named as the process).
 */
function cpuByThread(pid) {
  const byName = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const name = Number(tid) === pid ? 'main' : `other threads (${comm})`;
      const text = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8');
      byName[name] = (byName[name] ?? 0) + Number(text.slice(0, text.indexOf(' '))) / 1000;
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return byName;
}

/**
 * Self cost per group of functions in a callgrind dump. Names are compressed in the file
 * ("fn=(12) name" once, then "fn=(12)"); a cost line after "calls=" is the call's inclusive cost
 * and is skipped, so what is summed is each function's own instructions.
 */
function partsOf(file) {
  const names = new Map();
  const parts = {};
  let group = 'other';
  let skipNext = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('fn=') || line.startsWith('cfn=')) {
      // A name is given once, where it first appears, which may be as a callee.
      const m = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m === null) continue;
      if (m[2] !== undefined) names.set(m[1], m[2]);
      if (line.startsWith('fn=')) group = groupOf(names.get(m[1]) ?? '');
    } else if (line.startsWith('calls=')) skipNext = true;
    else if (/^[+-]?\d|^\*/.test(line)) {
      if (skipNext) {
        skipNext = false;
        continue;
      }
      const fields = line.split(' ');
      parts[group] = (parts[group] ?? 0) + Number(fields[1] ?? 0);
    }
  }
  return parts;
}

function groupOf(name) {
  if (
    /v8::internal::(compiler|maglev|turboshaft)::|OptimizingCompileDispatcher|OptimizedCompilationJob|PipelineCompilationJob/.test(
      name,
    )
  )
    return 'compiler';
  if (
    /v8::internal::(heap::|Heap|Scavenge|MarkCompact|Sweeper|ConcurrentMarking|MinorMarkCompact|MarkingVisitor|Evacuat)/.test(
      name,
    )
  )
    return 'gc';
  if (
    /v8::internal::(Parser|ParserBase|PreParser|Scanner|interpreter::Bytecode|baseline::|Compiler::|AstValueFactory|DeclarationScope|Scope::)/.test(
      name,
    )
  )
    return 'parse+bytecode';
  if (/^0x[0-9a-f]+$/.test(name)) return 'jit code';
  // Ignition's bytecode handlers and trampolines: functions not yet compiled by TurboFan.
  if (/^Builtins_(.*Handler|InterpreterEntryTrampoline|InterpreterEnterAtBytecode|.*Baseline.*)$/.test(name))
    return 'interpreter';
  if (name.startsWith('Builtins_')) return 'builtins';
  return 'other';
}

/** One block of the throughput window, read around. */
async function windowBlock(inst, n) {
  const pid = inst.child.pid;
  const w = inst.window;
  const traceFrom = inst.child.trace.length;
  if (flags.callgrind) zeroCounts(pid);
  const cpu0 = flags.callgrind ? {} : cpuByThread(pid);
  const times0 = userSystemMicros(pid);
  const faults0 = minorFaults(pid);
  const t0 = Date.now();
  await concurrent(inst, n);
  inst.blockTimes.push([t0, Date.now()]);
  w.faults += minorFaults(pid) - faults0;
  const times1 = userSystemMicros(pid);
  w.user += times1.user - times0.user;
  w.system += times1.system - times0.system;
  if (flags.callgrind) {
    inst.dumps++;
    w.instructions += dumpCounts(pid, inst.callgrindOut, inst.dumps);
    for (const [group, cost] of Object.entries(partsOf(`${inst.callgrindOut}.${inst.dumps}`)))
      w.parts[group] = (w.parts[group] ?? 0) + cost;
  } else {
    for (const [name, us] of Object.entries(cpuByThread(pid)))
      w.cpu[name] = (w.cpu[name] ?? 0) + us - (cpu0[name] ?? 0);
  }
  w.trace.push(...inst.child.trace.slice(traceFrom));
  w.calls += n;
}

/** Splits `total` into `blocks` near-equal parts, as run.mjs does. */
const blockSizes = (total, blocks) =>
  Array.from(
    { length: blocks },
    (_, i) => Math.floor(((i + 1) * total) / blocks) - Math.floor((i * total) / blocks),
  );
const rotate = (list, by) => [...list.slice(by % list.length), ...list.slice(0, by % list.length)];
const pause = () => (GAP_MS > 0 ? new Promise((resolve) => setTimeout(resolve, GAP_MS)) : undefined);

async function oneRun(run) {
  const order = (run % 2 === 0) === (flags.first === 'new') ? ['new', 'base'] : ['base', 'new'];
  const insts = [];
  for (const build of order)
    if (flags.only === undefined || build === flags.only) insts.push(await start(build, run));
  for (const inst of insts) {
    await sequential(inst, inst.echo, S.seqWarmup);
    await concurrent(inst, WARMUP);
    await sequential(inst, inst.structured, 100);
    await sequential(inst, inst.blob, S.blobReps);
  }
  for (const [tool, total] of [
    ['echo', S.calls],
    ['structured', S.structured],
  ])
    for (const [b, n] of blockSizes(total, S.blocks).entries())
      for (const inst of rotate(insts, b)) {
        await pause();
        await sequential(inst, inst[tool], n);
      }
  if (flags.callgrind) for (const inst of insts) startInstrumenting(inst.child.pid);
  // lib/gcWindow.mjs's profiler runs between these signals (SIGWINCH is ignored without it).
  const gcWindowMark = () => {
    if (flags.gc) for (const inst of insts) process.kill(inst.child.pid, 'SIGWINCH');
  };
  gcWindowMark();
  for (const [b, n] of blockSizes(S.throughput, S.blocks).entries())
    for (const inst of rotate(insts, b)) {
      await pause();
      await windowBlock(inst, n);
    }
  gcWindowMark();
  await Promise.all(insts.map((inst) => inst.child.close(flags.callgrind ? 60_000 : 5000)));
  for (const inst of insts) live.delete(inst.child);
  if (flags.gc) for (const inst of insts) inst.window.gcs = { ...collectionsIn(inst), ...gcWindowOf(inst) };
  return Object.fromEntries(insts.map((inst) => [inst.build, summarize(inst.window)]));
}

/** lib/gcWindow.mjs's figures; NaN when the gateway did not write them (it was killed). */
function gcWindowOf(inst) {
  try {
    return JSON.parse(readFileSync(inst.gcWindow, 'utf8'));
  } catch {
    return { allocated: Number.NaN, promoted: Number.NaN };
  }
}

/**
 * Young and full collections that started within the window's blocks (gcLog's kinds 1 and 4),
 * and V8's new space (the young generation) as the window found it and left it. V8 grows the
 * new space (doubling it, up to 32 MB) after collections in which much survived: a window that
 * holds a growth has more young collections before it, each over half the space, and page
 * faults for the pages grown into, though every call allocates and keeps the same.
 */
function collectionsIn(inst) {
  const counts = { young: 0, full: 0, newSpaceKbBefore: 0, newSpaceKbAfter: 0 };
  const windowFrom = inst.blockTimes[0]?.[0] ?? Infinity;
  for (const line of readFileSync(inst.gcLog, 'utf8').split('\n')) {
    const [ms, kind, kb] = line.split(' ').map(Number);
    if (!Number.isFinite(kb)) continue;
    if (ms < windowFrom) counts.newSpaceKbBefore = kb;
    if (!inst.blockTimes.some(([from, to]) => ms >= from && ms <= to)) continue;
    counts.newSpaceKbAfter = kb;
    if (kind === 1) counts.young++;
    else if (kind === 4) counts.full++;
  }
  return counts;
}

/** What one gateway's window came to, per call. */
function summarize(w) {
  const perCall = (x) => x / w.calls;
  const out = {
    faultsPerCall: perCall(w.faults),
    gcs: w.gcs,
    allocatedPerCall: w.gcs === undefined ? undefined : perCall(w.gcs.allocated),
    promotedPerCall: w.gcs === undefined ? undefined : perCall(w.gcs.promoted),
    userPerCall: perCall(w.user),
    systemPerCall: perCall(w.system),
  };
  if (flags.callgrind) {
    out.instructionsPerCall = perCall(w.instructions);
    out.parts = Object.fromEntries(Object.entries(w.parts).map(([k, v]) => [k, perCall(v)]));
  } else {
    const group = (name) => name;
    out.cpuUsPerCall = perCall(Object.values(w.cpu).reduce((a, b) => a + b, 0));
    out.threads = {};
    for (const [name, us] of Object.entries(w.cpu))
      out.threads[group(name)] = (out.threads[group(name)] ?? 0) + perCall(us);
  }
  if (flags.trace) {
    const optimized = w.trace.filter((l) => l.startsWith('[completed optimizing'));
    const functionName = (l) => {
      const name = /<JSFunction (.*?) \(sfi/.exec(l)?.[1]?.replace(/ /g, '_');
      return name === undefined || name.startsWith('(') ? '(anonymous)' : name;
    };
    let compileMs = 0;
    for (const l of w.trace) {
      const took = /took ([\d.]+), ([\d.]+), ([\d.]+) ms/.exec(l);
      if (took !== null) compileMs += Number(took[1]) + Number(took[2]) + Number(took[3]);
    }
    out.optimized = optimized.length;
    out.deoptimized = w.trace.filter((l) => l.startsWith('[bailout')).length;
    // Optimized code V8 threw away because something it relied on changed (a map, a field's
    // type or constness, a prototype): its functions run unoptimized until compiled again.
    out.dependentCode = w.trace.filter((l) => l.startsWith('[marking dependent code')).length;
    if (flags['trace-out'] !== undefined) {
      mkdirSync(flags['trace-out'], { recursive: true });
      writeFileSync(path.join(flags['trace-out'], `${w.build}-${w.run}.trace`), `${w.trace.join('\n')}\n`);
    }
    out.compileMs = compileMs;
    out.optimizedNames = optimized.map(functionName);
    out.deoptReasons = w.trace
      .filter((l) => l.startsWith('[bailout'))
      .map((l) => `${functionName(l)}: ${/reason: ([^)]*)/.exec(l)?.[1]}`);
  }
  return out;
}

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
console.log(
  `window: run.mjs's schedule, throughput window of ${S.throughput} calls after ${S.seqWarmup} sequential + ${WARMUP} concurrent warm-up calls` +
    `${GAP_MS > 0 ? `, ${GAP_MS} ms before each block` : ''}${flags['no-code-cache'] ? ', no code cache' : ''}` +
    `${flags.callgrind ? ', under callgrind' : ''}${flags.trace ? ', --trace-opt --trace-deopt' : ''}`,
);
const results = [];
for (let run = 0; run < RUNS; run++) {
  const load0 = loadavg()[0];
  const r = await oneRun(run);
  const load1 = loadavg()[0];
  results.push(r);
  const line = [`run ${run + 1} (load ${fmt(load0)}→${fmt(load1)})`];
  for (const [build, x] of Object.entries(r)) {
    if (flags.callgrind) {
      const parts = Object.entries(x.parts)
        .map(([k, v]) => `${k} ${fmt(v / 1000)}k`)
        .join(', ');
      line.push(
        `  ${build.padEnd(4)} ${fmt(x.instructionsPerCall / 1000)}k instr/call (${parts}); faults/call ${fmt(x.faultsPerCall, 3)}`,
      );
    } else {
      const threads = Object.entries(x.threads)
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(', ');
      line.push(
        `  ${build.padEnd(4)} ${fmt(x.cpuUsPerCall)} µs/call (${threads}); faults/call ${fmt(x.faultsPerCall, 3)}` +
          `; user ${fmt(x.userPerCall)}, system ${fmt(x.systemPerCall)} (ticks)` +
          (x.gcs === undefined
            ? ''
            : `; collections ${x.gcs.young} young, ${x.gcs.full} full` +
              `; new space ${fmt(x.gcs.newSpaceKbBefore / 1024, 0)}→${fmt(x.gcs.newSpaceKbAfter / 1024, 0)} MB` +
              `; allocated ${fmt(x.allocatedPerCall / 1024, 2)} KiB, promoted ${fmt(x.promotedPerCall, 0)} B per call`),
      );
    }
    if (flags.trace)
      line.push(
        `       optimized ${x.optimized}, deoptimized ${x.deoptimized}, optimized code dropped ${x.dependentCode}, compile ${fmt(x.compileMs)} ms: ${x.optimizedNames.join(' ')}` +
          (x.deoptReasons.length > 0 ? `\n       deopts: ${x.deoptReasons.join('; ')}` : ''),
      );
  }
  const key = flags.callgrind ? 'instructionsPerCall' : 'cpuUsPerCall';
  if (flags.only === undefined) line.push(`  new ÷ base ${fmt(r.new[key] / r.base[key], 2)}×`);
  console.log(line.join('\n'));
}
const key = flags.callgrind ? 'instructionsPerCall' : 'cpuUsPerCall';
if (flags.only === undefined) {
  const ratios = results.map((r) => r.new[key] / r.base[key]).sort((a, b) => a - b);
  console.log(
    `new ÷ base per run: ${ratios.map((x) => fmt(x, 2)).join(' ')}; median ${fmt(ratios[ratios.length >> 1], 2)}×`,
  );
}
