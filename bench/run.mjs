#!/usr/bin/env node
// mcp-warden's overhead benchmark. One invocation measures four configurations,
// taking turns round by round (and, within a round, block by block) so that a noisy
// neighbour hurts all of them alike:
//
//   direct        the bench client talks to the fixture server itself
//   pipe          bench/pipe.mjs in between: the floor of one extra Node process hop
//   warden-bare   the built gateway with its pipeline as light as the config allows
//   warden-full   the built gateway with everything on that this build supports
//   warden-modern (with --modern) the warden-bare gateway spoken to as a host of MCP
//                 2026-07-28 would: no initialize, the per-request envelope on every request,
//                 resultType and serverInfo added to every answer (compare it with warden-bare)
//   json-floor    bench/floor.mjs in between: the least any proxy that parses and re-serialises
//                 each message does; the latency, throughput and CPU targets are judged against it
//   json-floor-audit the floor plus the least audit trail with warden's default guarantees
//                 (FLOOR_AUDIT, see floor.mjs): its ratios to json-floor are what those guarantees
//                 cost any gateway, and warden-full's ratios to it how far warden-full is from
//                 the least that keeps them (reported, not judged)
//   json-floor-full the floor plus the least audit trail plus, at their least, the per-call jobs
//                 warden-full does beyond it (FLOOR_FULL, see floor.mjs): namespacing, argument
//                 validation, the bench policy, a deadline and a concurrency slot per call, result
//                 repair; its ratios to json-floor are the least any gateway doing warden-full's
//                 per-call work pays, warden-full's ratios to it how far warden-full is from that
//                 (reported, not judged)
//   json-floor-modern (with --modern) the same floor spoken to as warden-modern is, doing the
//                 least any proxy must for such a host (FLOOR_MODERN=1, see floor.mjs): its ratio
//                 to json-floor is what the revision's larger messages cost by themselves
//   warden-traces (with --telemetry) warden-full plus `telemetry: { traces: true }`, exporting
//                 OTLP/HTTP (protobuf) to a sink in this process that accepts and discards
//   warden-shipping (with --telemetry) warden-traces plus an `otlp` audit sink: every audit
//                 record also shipped as an OTLP log (JSON) to that sink, through its disk spool
//   warden-base   (with --baseline-cli FILE) warden-full's config served by another build, e.g.
//                 one from before telemetry existed: with telemetry off, warden-full/warden-base
//                 shows what having the feature costs when it is not used
//
// Ratios are computed within each round and then their median is taken: absolute times move
// from run to run on a shared machine, ratios from one run are what can be compared.
//
//   node bench/run.mjs [--rounds N] [--calls N] [--throughput-calls N] [--quick]
//                      [--out FILE] [--cpu-prof DIR] [--cli FILE] [--floor] [--modern]
//                      [--telemetry] [--baseline-cli FILE] [--warmup N]
//
// Exit codes: 0 everything ran (and, in a full run, every target was met); 1 something failed
// (an answer missing or wrong, a process died, a timeout); 2 bad usage; 3 a full run completed
// but missed a target. --quick uses tiny counts, judges no targets, and exits 0 if all ran.
// --cpu-prof DIR runs both gateways under `node --cpu-prof` (profiles land in DIR/warden-bare and
// DIR/warden-full; summarise with `node bench/cpuprofile-top.mjs DIR/warden-full/*.cpuprofile`). --cli FILE measures
// another build of the gateway instead of dist/cli.js.
// --warmup N makes the concurrent warm-up N calls instead of 1,000. By default the CPU-per-call
// and throughput window is about calls 8,100 to 28,100 of each new gateway, while V8 is still
// optimizing its call path: what a host meets in a session's first tens of thousands of calls.
// A longer warm-up (e.g. 20,000) shows the same builds once warm; say which one a figure is from
// (see bench/README.md, "Which calls the window holds").

import { execFile } from 'node:child_process';
import { recordPrices } from './lib/prices.mjs';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { deadline, RpcChild } from './lib/client.mjs';
import { BARE_GATEWAY, BARE_LIMITS, BENCH_POLICY, DENY_PROBE_TEXT } from './lib/configs.mjs';
import { childPids, CPU_SOURCE, cpuMicros, peakRssBytes } from './lib/proc.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH);
let CLI = path.join(ROOT, 'dist/cli.js');
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const PIPE = path.join(BENCH, 'pipe.mjs');
const FLOOR_PROXY = path.join(BENCH, 'floor.mjs');
const NODE = process.execPath;

// ---------------------------------------------------------------------------------------------
// Settings

function usage(message) {
  process.stderr.write(
    `bench: ${message}\nusage: node bench/run.mjs [--rounds N] [--calls N] [--throughput-calls N] [--quick] [--out FILE] [--cpu-prof DIR] [--cli FILE] [--floor] [--modern] [--telemetry] [--baseline-cli FILE] [--warmup N]\n`,
  );
  process.exit(2);
}

let flags;
try {
  flags = parseArgs({
    strict: true,
    options: {
      rounds: { type: 'string' },
      calls: { type: 'string' },
      'throughput-calls': { type: 'string' },
      quick: { type: 'boolean', default: false },
      out: { type: 'string' },
      'cpu-prof': { type: 'string' },
      cli: { type: 'string' },
      // Accepted for old command lines: the JSON floor is always measured, the targets need it.
      floor: { type: 'boolean', default: true },
      telemetry: { type: 'boolean', default: false },
      'baseline-cli': { type: 'string' },
      modern: { type: 'boolean', default: false },
      warmup: { type: 'string' },
    },
  }).values;
} catch (error) {
  usage(error.message);
}

function positiveInt(name, raw, fallback) {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) usage(`--${name} wants a positive integer, got ${raw}`);
  return n;
}

const QUICK = flags.quick;
const TELEMETRY = flags.telemetry;
const BASELINE_CLI = flags['baseline-cli'] === undefined ? undefined : path.resolve(flags['baseline-cli']);
const MODERN = flags.modern;
// Full-run counts are sized so that each configuration's share of a timed phase lasts around a
// second (one scheduling hiccup is then a small part of it) while the whole run stays within
// a few minutes on two cores.
const S = QUICK
  ? { rounds: 1, calls: 50, warmup: 20, throughputCalls: 200, structuredCalls: 20, blobKiB: 64, blobReps: 2 }
  : {
      rounds: 5,
      calls: 5000,
      warmup: 1000,
      throughputCalls: 20000,
      structuredCalls: 1000,
      blobKiB: 1024,
      blobReps: 9,
    };
S.rounds = positiveInt('rounds', flags.rounds, S.rounds);
S.calls = positiveInt('calls', flags.calls, S.calls);
S.throughputCalls = positiveInt('throughput-calls', flags['throughput-calls'], S.throughputCalls);
// The sequential warm-up stays as it is: the window measured is the concurrent one.
S.warmupConcurrent = positiveInt('warmup', flags.warmup, S.warmup);
S.inFlight = 32;
S.listSmall = QUICK ? 100 : 1000;
S.listLarge = QUICK ? 200 : 10000;
S.listReps = QUICK ? 1 : 5;
S.startupReps = QUICK ? 1 : 3;
// Blocks per phase in which configurations take turns; 2 in quick mode so the turn-taking runs too.
S.blocks = QUICK ? 2 : 10;
// Every wait is bounded; a phase that takes longer than this is a failure, not a slow result.
S.phaseTimeoutMs = QUICK ? 15_000 : 120_000;
S.runTimeoutMs = QUICK ? 50_000 : 20 * 60_000;
const OUT = path.resolve(flags.out ?? path.join(BENCH, 'results', QUICK ? 'quick.json' : 'latest.json'));
// Another build of the gateway to measure (e.g. a copy with an experimental change).
if (flags.cli !== undefined) CLI = path.resolve(flags.cli);
const CPU_PROF_DIR = flags['cpu-prof'] === undefined ? undefined : path.resolve(flags['cpu-prof']);

// ---------------------------------------------------------------------------------------------
// Children: every one is tracked so that it is killed whatever way the bench ends.

const live = new Set();

function killAll() {
  for (const child of live) child.kill();
}
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    killAll();
    process.exit(1);
  });
}

function fail(error) {
  process.stderr.write(`bench: FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
  killAll();
  process.exit(1);
}

const watchdog = setTimeout(
  () => fail(new Error(`the run took longer than ${S.runTimeoutMs} ms`)),
  S.runTimeoutMs,
);
watchdog.unref();

/** The environment every child gets: ours, without NODE_OPTIONS (a test runner's must not leak in). */
function childEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  if (extra.NODE_OPTIONS === undefined) delete env.NODE_OPTIONS;
  return env;
}

function runCheck(configFile, cli = CLI) {
  return new Promise((resolve) => {
    execFile(
      NODE,
      [cli, 'check', '--config', configFile],
      { env: childEnv(), timeout: 15_000, encoding: 'utf8' },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : (error.code ?? 'killed'), output: `${stdout}${stderr}`.trim() }),
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Gateway configs

const work = mkdtempSync(path.join(tmpdir(), 'warden-bench-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

function fixtureServer(tools) {
  return { command: NODE, args: [FIXTURE, '--tools', String(tools)] };
}

/**
 * The lightest pipeline the config allows: every repair off (the repair stage then has nothing
 * to do), no argument validation (the stage is then left out), the concurrency limit above the bench's 32 in flight so nothing queues, and only
 * errors logged. Timeouts cannot be switched off; their defaults (5 min idle, 30 min hard)
 * never fire here, so only their bookkeeping is measured.
 */
/** Every tool listed, whatever the catalogue's size (see prepareGatewayConfigs). */
const LIST_ALL = { catalog: { mode: 'all' } };

function bareConfig(tools) {
  return { gateway: BARE_GATEWAY, servers: { bench: { ...fixtureServer(tools), ...BARE_LIMITS } } };
}

/**
 * Everything on, as a user would have it: every repair on, each call's arguments validated
 * against the tool's inputSchema, timeouts and the concurrency limit
 * (16 in flight per server, so half of the bench's 32 wait in the gateway's queue) at their
 * defaults, info logging. Features that later issues add are in FULL_EXTRAS.
 */
function fullConfig(tools) {
  return { servers: { bench: fixtureServer(tools) } };
}

/**
 * Product features warden-full turns on once the build supports them: each is tried with
 * `mcp-warden check` and left out (and reported as absent) if the config is rejected. Adding
 * a feature to the full configuration is one entry here. A config key being accepted does not
 * prove the feature runs (a key can land before its code), so each entry also has a probe,
 * run once per round: `whileRunning` gets warden-full's call instance, `afterStop` the folder
 * of its config once it has exited.
 */
const FULL_EXTRAS = [
  {
    name: 'policies (5 rules)',
    apply(config, dir) {
      writeFileSync(path.join(dir, 'bench-policy.yaml'), JSON.stringify(BENCH_POLICY, null, 2));
      config.policies = ['./bench-policy.yaml'];
    },
    async whileRunning(inst) {
      const params = JSON.stringify({
        name: `${inst.cfg.toolPrefix}echo`,
        arguments: { text: DENY_PROBE_TEXT },
      });
      try {
        const result = await deadline(
          inst.child.request('tools/call', params),
          S.phaseTimeoutMs,
          'policy probe',
        );
        return result?.isError === true ? 'enforced' : 'NOT enforced: the call it denies was answered';
      } catch (error) {
        if (inst.child.failure !== undefined) throw error;
        return 'enforced (denied with a JSON-RPC error)';
      }
    },
  },
  {
    name: 'audit to a file',
    apply(config, dir) {
      config.audit = { file: path.join(dir, 'audit.jsonl') };
    },
    afterStop(dir) {
      // Rotation may have renamed the file: count every audit file in the folder.
      const bytes = readdirSync(dir)
        .filter((f) => f.startsWith('audit'))
        .reduce((sum, f) => sum + statSync(path.join(dir, f)).size, 0);
      return bytes > 0
        ? `written (${(bytes / 2 ** 20).toFixed(1)} MiB so far)`
        : 'NOT written: no audit records';
    },
  },
];

/**
 * json-floor-audit's (or json-floor-full's) audit file for a tool count: on the filesystem of
 * warden-full's, in a folder of its own, because warden-full watches the folder of its policy
 * and audit file and would be woken by the floor's writes too.
 */
function floorAuditFile(tools, name = 'floor-audit') {
  const dir = path.join(work, `tools-${tools}`, name);
  mkdirSync(dir, { recursive: true });
  return path.join(dir, 'audit.jsonl');
}

/** json-floor-full's policy file: warden-full's bench policy, as JSON, beside its audit file. */
function floorFullPolicy(tools) {
  const file = path.join(path.dirname(floorAuditFile(tools, 'floor-full')), 'policy.json');
  writeFileSync(file, JSON.stringify(BENCH_POLICY));
  return file;
}

/** Bytes in json-floor-audit's (or json-floor-full's) audit files, rotated ones included. */
function floorAuditBytes(tools, config = 'floor-audit') {
  const file = floorAuditFile(tools, config);
  const name = path.basename(file);
  const dir = path.dirname(file);
  return readdirSync(dir)
    .filter((f) => f.startsWith(name))
    .reduce((sum, f) => sum + statSync(path.join(dir, f)).size, 0);
}

function writeConfig(dir, name, config) {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** Writes one config file per (variant, tool count) and returns their paths plus what is on. */
async function prepareGatewayConfigs(toolCounts, otlpEndpoint) {
  const extras = await Promise.all(
    FULL_EXTRAS.map(async (extra, i) => {
      const dir = path.join(work, `probe-${i}`);
      mkdirSync(dir);
      const config = fullConfig(0);
      extra.apply(config, dir);
      const { code, output } = await runCheck(writeConfig(dir, 'candidate', config));
      // Exit 2 is "invalid config": this build does not know the feature. Anything else but 0
      // is a broken build, which must fail the run rather than quietly measure less.
      if (code !== 0 && code !== 2) throw new Error(`mcp-warden check failed (exit ${code}):\n${output}`);
      const problem = output.split('\n').find((line) => !line.startsWith('mcp-warden:')) ?? output;
      return {
        name: extra.name,
        on: code === 0,
        rejection: code === 0 ? undefined : problem.replace(/^.*?: /, ''),
      };
    }),
  );
  // A build with a catalogue serves a list of more than 60 tools as a search tool by default;
  // what is measured is the whole list, so such a build is asked for it. A build from before
  // the catalogue (warden-base's, often) has no such key and lists everything anyway; the
  // baseline build is asked on its own, since it may be this build itself (to measure noise).
  const catalogProbe = path.join(work, 'probe-catalog');
  mkdirSync(catalogProbe);
  const probe = writeConfig(catalogProbe, 'candidate', { ...bareConfig(0), ...LIST_ALL });
  const listsAll = (await runCheck(probe)).code === 0;
  const baseListsAll = BASELINE_CLI !== undefined && (await runCheck(probe, BASELINE_CLI)).code === 0;
  const files = {
    'warden-bare': {},
    'warden-full': {},
    'warden-base': {},
    'warden-traces': {},
    'warden-shipping': {},
  };
  const written = [];
  for (const tools of toolCounts) {
    const dir = path.join(work, `tools-${tools}`);
    mkdirSync(dir);
    files['warden-bare'][tools] = writeConfig(dir, 'bare', {
      ...bareConfig(tools),
      ...(listsAll && LIST_ALL),
    });
    const base = fullConfig(tools);
    FULL_EXTRAS.forEach((extra, i) => extras[i].on && extra.apply(base, dir));
    files['warden-base'][tools] = writeConfig(dir, 'base', { ...base, ...(baseListsAll && LIST_ALL) });
    const full = { ...base, ...(listsAll && LIST_ALL) };
    files['warden-full'][tools] = writeConfig(dir, 'full', full);
    if (TELEMETRY) {
      const traces = { ...full, telemetry: { traces: true } };
      files['warden-traces'][tools] = writeConfig(dir, 'traces', traces);
      // Its own audit file, so its spool (beside it) serves one gateway at a time.
      files['warden-shipping'][tools] = writeConfig(dir, 'shipping', {
        ...traces,
        audit: {
          ...full.audit,
          file: path.join(dir, 'shipping-audit.jsonl'),
          sinks: [{ type: 'otlp', endpoint: `${otlpEndpoint}/v1/logs` }],
        },
      });
    }
    // The files for other tool counts differ only in the fixture's arguments: checking one set is enough.
    if (written.length === 0) {
      written.push(files['warden-bare'][tools], files['warden-full'][tools]);
      if (TELEMETRY) written.push(files['warden-traces'][tools], files['warden-shipping'][tools]);
    }
  }
  await Promise.all(
    written.map(async (file) => {
      const { code, output } = await runCheck(file);
      if (code !== 0) throw new Error(`mcp-warden check rejected the bench's own config ${file}:\n${output}`);
    }),
  );
  return { files, extras };
}

// ---------------------------------------------------------------------------------------------
// Configurations

function configurations(gatewayFiles, otlpEndpoint) {
  const gateway = (name, options = {}) => ({
    name,
    modern: options.modern === true,
    toolPrefix: 'bench__',
    launch: (tools) => ({
      command: NODE,
      // Node 20 refuses --cpu-prof in NODE_OPTIONS, so it goes on the command line.
      args: [
        ...(CPU_PROF_DIR !== undefined
          ? ['--cpu-prof', `--cpu-prof-dir=${path.join(CPU_PROF_DIR, name)}`]
          : []),
        options.cli ?? CLI,
        '--config',
        gatewayFiles[options.files ?? name][tools],
      ],
      env: childEnv(options.env),
    }),
  });
  return [
    {
      name: 'direct',
      toolPrefix: '',
      launch: (tools) => ({ command: NODE, args: [FIXTURE, '--tools', String(tools)], env: childEnv() }),
    },
    {
      name: 'pipe',
      toolPrefix: '',
      launch: (tools) => ({
        command: NODE,
        args: [PIPE, NODE, FIXTURE, '--tools', String(tools)],
        env: childEnv(),
      }),
    },
    gateway('warden-bare'),
    gateway('warden-full'),
    ...(TELEMETRY
      ? [
          gateway('warden-traces', {
            env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' },
          }),
          gateway('warden-shipping', {
            env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' },
          }),
        ]
      : []),
    ...(BASELINE_CLI !== undefined
      ? [gateway('warden-base', { cli: BASELINE_CLI, files: 'warden-base' })]
      : []),
    ...(MODERN ? [gateway('warden-modern', { files: 'warden-bare', modern: true })] : []),
    {
      name: 'json-floor',
      toolPrefix: '',
      launch: (tools) => ({
        command: NODE,
        args: [FLOOR_PROXY, NODE, FIXTURE, '--tools', String(tools)],
        env: childEnv(),
      }),
    },
    {
      name: 'json-floor-audit',
      toolPrefix: '',
      launch: (tools) => ({
        command: NODE,
        args: [FLOOR_PROXY, NODE, FIXTURE, '--tools', String(tools)],
        env: childEnv({ FLOOR_AUDIT: floorAuditFile(tools) }),
      }),
    },
    {
      name: 'json-floor-full',
      // It exposes the server's tools under the server's name, as the gateway does.
      toolPrefix: 'bench__',
      launch: (tools) => ({
        command: NODE,
        args: [FLOOR_PROXY, NODE, FIXTURE, '--tools', String(tools)],
        env: childEnv({
          FLOOR_AUDIT: floorAuditFile(tools, 'floor-full'),
          FLOOR_FULL: floorFullPolicy(tools),
        }),
      }),
    },
    ...(MODERN
      ? [
          {
            name: 'json-floor-modern',
            modern: true,
            toolPrefix: '',
            launch: (tools) => ({
              command: NODE,
              args: [FLOOR_PROXY, NODE, FIXTURE, '--tools', String(tools)],
              env: childEnv({ FLOOR_MODERN: '1' }),
            }),
          },
        ]
      : []),
  ];
}

// ---------------------------------------------------------------------------------------------
// Measurements
//
// Within a round the configurations are interleaved in blocks (a few hundred calls each, the
// order rotated per block), not measured one after the other: on a shared VM the machine's
// state (which core, idle-state wake-ups, a neighbour's burst) changes within seconds, and
// interleaving makes every configuration see the same mix of it, so per-round ratios hold.

const INITIALIZE_PARAMS = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'warden-bench', version: '1.0.0' },
});
const ECHO_TEXT = 'hello from the warden bench';

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

function rotate(list, by) {
  const k = by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

/** Splits `total` into `blocks` near-equal positive parts. */
function blockSizes(total, blocks) {
  const n = Math.min(total, blocks);
  return Array.from({ length: n }, (_, i) => Math.floor(((i + 1) * total) / n) - Math.floor((i * total) / n));
}

function checkEcho(result, label) {
  if (result?.content?.[0]?.text !== ECHO_TEXT)
    throw new Error(`${label}: wrong echo answer ${JSON.stringify(result)}`);
}

function checkStructured(result, label) {
  if (result?.structuredContent?.length !== ECHO_TEXT.length || result.isError)
    throw new Error(`${label}: wrong structured answer ${JSON.stringify(result)}`);
}

function checkBlob(result, label) {
  if (result?.content?.[0]?.text?.length !== S.blobKiB * 1024) throw new Error(`${label}: wrong blob answer`);
}

/** The per-request envelope of MCP 2026-07-28, as a host of that revision sends it. */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'mcp-warden-bench', version: '1' },
};
const MODERN_LIST_PARAMS = JSON.stringify({ _meta: MODERN_META });

/** Spawns, initializes and lists once; returns the instance and its start-up time in ms. */
async function startInstance(cfg, tools) {
  const spec = cfg.launch(tools);
  const label = `${cfg.name} (${tools} extra tools)`;
  const t0 = performance.now();
  const child = new RpcChild({ label, ...spec });
  live.add(child);
  // A modern host has no handshake: its first request is already a real one.
  if (!cfg.modern) {
    await deadline(child.request('initialize', INITIALIZE_PARAMS), S.phaseTimeoutMs, `${label} initialize`);
    child.notify('notifications/initialized');
  }
  const listParams = cfg.modern ? MODERN_LIST_PARAMS : undefined;
  const list = await deadline(
    child.request('tools/list', listParams),
    S.phaseTimeoutMs,
    `${label} first tools/list`,
  );
  const startupMs = performance.now() - t0;
  if (list?.tools?.length !== tools + 3)
    throw new Error(`${label}: tools/list returned ${list?.tools?.length} tools, expected ${tools + 3}`);
  const call = (tool, args) =>
    JSON.stringify({
      name: `${cfg.toolPrefix}${tool}`,
      arguments: args,
      ...(cfg.modern && { _meta: MODERN_META }),
    });
  return {
    cfg,
    child,
    label,
    listParams,
    startupMs,
    echo: call('echo', { text: ECHO_TEXT }),
    structured: call('structured', { text: ECHO_TEXT }),
    blob: call('blob', { kib: S.blobKiB }),
  };
}

async function stopInstances(instances) {
  await Promise.all(
    instances.map(async ({ child }) => {
      await child.close();
      live.delete(child);
    }),
  );
}

/** Sequential calls; each one's latency in µs goes into `into` from `offset` on. */
async function sequential(inst, paramsJson, n, check, what, into, offset = 0) {
  const label = `${inst.label} ${what}`;
  const run = async () => {
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const result = await inst.child.request('tools/call', paramsJson);
      const us = (performance.now() - t) * 1000;
      if (into !== undefined) into[offset + i] = us;
      check(result, label);
    }
  };
  await deadline(run(), S.phaseTimeoutMs, label);
}

/** `total` calls with `inFlight` outstanding at all times (until the last ones). */
async function concurrent(inst, paramsJson, total, what) {
  const label = `${inst.label} ${what}`;
  let sent = 0;
  const worker = async () => {
    while (sent < total) {
      sent++;
      checkEcho(await inst.child.request('tools/call', paramsJson), label);
    }
  };
  await deadline(Promise.all(Array.from({ length: S.inFlight }, worker)), S.phaseTimeoutMs, label);
}

/** The fixture's pid: the instance itself for direct, else the one child of the middle process. */
function fixturePid(inst) {
  if (inst.cfg.name === 'direct') return inst.child.pid;
  const kids = childPids(inst.child.pid);
  if (kids.length !== 1) throw new Error(`${inst.label}: expected one upstream child, found ${kids.length}`);
  return kids[0];
}

async function runRound(configs, round, extras) {
  const order = rotate(configs, round);
  const r = Object.fromEntries(configs.map((c) => [c.name, {}]));

  // Start-up: a fresh instance each time, stopped at once.
  const startups = Object.fromEntries(configs.map((c) => [c.name, []]));
  for (let rep = 0; rep < S.startupReps; rep++) {
    for (const cfg of rotate(order, rep)) {
      const inst = await startInstance(cfg, 0);
      startups[cfg.name].push(inst.startupMs);
      await stopInstances([inst]);
    }
  }
  for (const c of configs) r[c.name].startupMs = median(startups[c.name]);

  // One long-lived instance per configuration for the call phases, all alive at once.
  const main = [];
  for (const cfg of order) main.push(await startInstance(cfg, 0));
  const byBlock = (b) => rotate(main, b);

  // Warm-up: both the sequential and the concurrent paths, so the JIT has seen them.
  for (const inst of main) {
    await sequential(inst, inst.echo, S.warmup, checkEcho, 'warm-up');
    await concurrent(inst, inst.echo, S.warmupConcurrent, 'warm-up');
    await sequential(inst, inst.structured, Math.min(S.warmup, 100), checkStructured, 'warm-up');
    // As many large results as are measured: the JIT needs a few to settle on the large-line path,
    // as it does on the others (which get a thousand calls), and a gateway serves many.
    await sequential(inst, inst.blob, S.blobReps, checkBlob, 'warm-up');
  }

  // Sequential latency of echo, then of structured (what result repair validates).
  for (const [key, calls, tool, check] of [
    ['echo', S.calls, 'echo', checkEcho],
    ['structured', S.structuredCalls, 'structured', checkStructured],
  ]) {
    const lat = new Map(main.map((inst) => [inst, new Float64Array(calls)]));
    let offset = 0;
    for (const [b, n] of blockSizes(calls, S.blocks).entries()) {
      for (const inst of byBlock(b))
        await sequential(inst, inst[tool], n, check, `${key} latency`, lat.get(inst), offset);
      offset += n;
    }
    for (const inst of main) {
      const sorted = lat.get(inst).sort();
      if (key === 'echo') {
        r[inst.cfg.name].p50Us = percentile(sorted, 0.5);
        r[inst.cfg.name].p99Us = percentile(sorted, 0.99);
      } else r[inst.cfg.name].structuredP50Us = percentile(sorted, 0.5);
    }
  }

  // Throughput at 32 in flight, with the CPU time each process spends on it.
  const acc = new Map(main.map((inst) => [inst, { ms: 0, middle: 0, fixture: 0, client: 0 }]));
  const fixtures = new Map(main.map((inst) => [inst, fixturePid(inst)]));
  for (const [b, n] of blockSizes(S.throughputCalls, S.blocks).entries()) {
    for (const inst of byBlock(b)) {
      const a = acc.get(inst);
      const middle0 = cpuMicros(inst.child.pid);
      const fixture0 = cpuMicros(fixtures.get(inst));
      const client0 = process.cpuUsage();
      const t0 = performance.now();
      await concurrent(inst, inst.echo, n, 'throughput');
      a.ms += performance.now() - t0;
      const client = process.cpuUsage(client0);
      a.client += client.user + client.system;
      a.middle += cpuMicros(inst.child.pid) - middle0;
      a.fixture += cpuMicros(fixtures.get(inst)) - fixture0;
    }
  }
  for (const [inst, a] of acc) {
    Object.assign(r[inst.cfg.name], {
      callsPerSec: S.throughputCalls / (a.ms / 1000),
      cpuUsPerCall: a.middle / S.throughputCalls,
      upstreamCpuUsPerCall: a.fixture / S.throughputCalls,
      clientCpuUsPerCall: a.client / S.throughputCalls,
      // On two cores the client, the middle process and the fixture all run at 32 in flight, so
      // the rate follows the sum of their CPU per call, not the middle process's alone.
      // (direct has no middle process: its "middle" is the fixture itself).
      totalCpuUsPerCall:
        ((inst.cfg.name === 'direct' ? 0 : a.middle) + a.fixture + a.client) / S.throughputCalls,
    });
  }

  // A large result, one call per configuration in turn.
  const blobs = new Map(main.map((inst) => [inst, new Float64Array(S.blobReps)]));
  for (let rep = 0; rep < S.blobReps; rep++)
    for (const inst of byBlock(rep))
      await sequential(inst, inst.blob, 1, checkBlob, 'blob', blobs.get(inst), rep);
  for (const [inst, us] of blobs) r[inst.cfg.name].blobMs = median([...us]) / 1000;

  // Are warden-full's extras doing their work? (See FULL_EXTRAS.) And is json-floor-full's
  // policy? A floor that stopped judging calls would flatter every ratio made with it.
  const floorFull = main.find((inst) => inst.cfg.name === 'json-floor-full');
  const probe = await deadline(
    floorFull.child.request(
      'tools/call',
      JSON.stringify({ name: 'bench__echo', arguments: { text: DENY_PROBE_TEXT } }),
    ),
    S.phaseTimeoutMs,
    'json-floor-full policy probe',
  );
  if (probe?._meta?.['floor/error'] !== 'DENIED')
    throw new Error(`json-floor-full answered the call its policy denies: ${JSON.stringify(probe)}`);
  const full = main.find((inst) => inst.cfg.name === 'warden-full');
  const active = FULL_EXTRAS.map(() => undefined);
  for (const [i, extra] of FULL_EXTRAS.entries())
    if (extras[i].on && extra.whileRunning) active[i] = await extra.whileRunning(full);
  await stopInstances(main);
  for (const [i, extra] of FULL_EXTRAS.entries())
    if (extras[i].on && extra.afterStop) active[i] = extra.afterStop(path.join(work, 'tools-0'));
  r.extrasActive = active;
  // A floor that stopped auditing would make its ratios meaningless: that is a failed run.
  r.floorAuditBytes = floorAuditBytes(0);
  if (r.floorAuditBytes === 0) throw new Error('json-floor-audit wrote no audit records');
  r.floorFullAuditBytes = floorAuditBytes(0, 'floor-full');
  if (r.floorFullAuditBytes === 0) throw new Error('json-floor-full wrote no audit records');

  // Listing: fresh instances with many tools (steady-state lists after the first), then the
  // peak RSS of the reported process once the large list has been served.
  for (const [key, tools] of [
    ['listSmallMs', S.listSmall],
    ['listLargeMs', S.listLarge],
  ]) {
    const insts = [];
    for (const cfg of order) insts.push(await startInstance(cfg, tools));
    const times = new Map(insts.map((inst) => [inst, []]));
    for (let rep = 0; rep < S.listReps; rep++) {
      for (const inst of rotate(insts, rep)) {
        const t = performance.now();
        const list = await deadline(
          inst.child.request('tools/list', inst.listParams),
          S.phaseTimeoutMs,
          `${inst.label} tools/list`,
        );
        times.get(inst).push(performance.now() - t);
        if (list?.tools?.length !== tools + 3)
          throw new Error(`${inst.label}: tools/list returned the wrong number of tools`);
      }
    }
    for (const inst of insts) {
      r[inst.cfg.name][key] = median(times.get(inst));
      if (key === 'listLargeMs') r[inst.cfg.name].peakRssMB = peakRssBytes(inst.child.pid) / (1024 * 1024);
    }
    await stopInstances(insts);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Report

const METRICS = [
  { key: 'p50Us', head: 'p50 µs', digits: 0, better: 'lower' },
  { key: 'p99Us', head: 'p99 µs', digits: 0, better: 'lower' },
  { key: 'callsPerSec', head: 'calls/s@32', digits: 0, better: 'higher' },
  { key: 'cpuUsPerCall', head: 'cpu µs/call', digits: 1, better: 'lower' },
  { key: 'upstreamCpuUsPerCall', head: 'fixture cpu', digits: 1, better: 'lower' },
  { key: 'totalCpuUsPerCall', head: 'total cpu', digits: 1, better: 'lower' },
  { key: 'structuredP50Us', head: 'struct p50 µs', digits: 0, better: 'lower' },
  { key: 'blobMs', head: null, digits: 2, better: 'lower' },
  { key: 'listSmallMs', head: null, digits: 1, better: 'lower' },
  { key: 'listLargeMs', head: null, digits: 1, better: 'lower' },
  { key: 'startupMs', head: 'startup ms', digits: 0, better: 'lower' },
  { key: 'peakRssMB', head: 'peak RSS MB', digits: 1, better: 'lower' },
];
for (const m of METRICS) {
  if (m.key === 'blobMs') m.head = `${S.blobKiB >= 1024 ? `${S.blobKiB / 1024}MiB` : `${S.blobKiB}KiB`} ms`;
  if (m.key === 'listSmallMs') m.head = `list ${S.listSmall} ms`;
  if (m.key === 'listLargeMs') m.head = `list ${S.listLarge} ms`;
}

// The targets warden-full is judged on. Latency, throughput and CPU are ratios to the JSON floor
// (what any gateway that reads messages must spend); the rest to the byte pipe or direct.
const TARGETS = [
  { key: 'p50Us', vs: 'json-floor', op: '<=', limit: 1.3, what: 'p50 latency vs json-floor' },
  { key: 'callsPerSec', vs: 'json-floor', op: '>=', limit: 0.8, what: 'throughput @32 vs json-floor' },
  { key: 'cpuUsPerCall', vs: 'json-floor', op: '<=', limit: 2, what: 'CPU per call vs json-floor' },
  { key: 'blobMs', vs: 'direct', op: '<=', limit: 1.5, what: '1 MiB result vs direct' },
  { key: 'listLargeMs', vs: 'pipe', op: '<=', limit: 1, what: 'tools/list 10k vs pipe' },
  { key: 'startupMs', vs: 'pipe', op: '<=', limit: 1.5, what: 'start-up vs pipe' },
  { key: 'peakRssMB', vs: null, op: '<=', limit: 100, what: 'peak RSS (MB), 10k tools' },
];

function fmt(x, digits, unit = '') {
  if (!Number.isFinite(x)) return 'n/a';
  return `${x.toFixed(digits)}${unit}`;
}

function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const RATIO_PAIRS = [
  ['pipe', 'direct'],
  ['warden-bare', 'direct'],
  ['warden-bare', 'pipe'],
  ['warden-full', 'direct'],
  ['warden-full', 'pipe'],
  ...(MODERN
    ? [
        ['warden-modern', 'warden-bare'],
        ['json-floor-modern', 'json-floor'],
        ['warden-modern', 'json-floor-modern'],
      ]
    : []),
  ['json-floor', 'direct'],
  ['json-floor', 'pipe'],
  ['warden-bare', 'json-floor'],
  ['warden-full', 'json-floor'],
  ['json-floor-audit', 'json-floor'],
  ['warden-full', 'json-floor-audit'],
  ['json-floor-full', 'json-floor'],
  ['warden-full', 'json-floor-full'],
  ...(TELEMETRY
    ? [
        ['warden-traces', 'warden-full'],
        ['warden-shipping', 'warden-full'],
        ['warden-shipping', 'warden-traces'],
      ]
    : []),
  ...(BASELINE_CLI !== undefined ? [['warden-full', 'warden-base']] : []),
];

/**
 * The ratios that show what the audit trail's guarantees cost (see json-floor-audit), and what
 * warden-full's per-call work costs at its least (see json-floor-full).
 */
const GUARANTEE_RATIOS = [
  'json-floor-audit/json-floor',
  'warden-full/json-floor-audit',
  'json-floor-full/json-floor',
  'warden-full/json-floor-full',
];

function summarize(rounds) {
  const names = [
    'direct',
    'pipe',
    'warden-bare',
    'warden-full',
    ...(MODERN ? ['warden-modern'] : []),
    'json-floor',
    'json-floor-audit',
    'json-floor-full',
    ...(MODERN ? ['json-floor-modern'] : []),
    ...(TELEMETRY ? ['warden-traces', 'warden-shipping'] : []),
    ...(BASELINE_CLI !== undefined ? ['warden-base'] : []),
  ];
  const medians = {};
  for (const name of names) {
    medians[name] = {};
    for (const m of METRICS) medians[name][m.key] = median(rounds.map((r) => r[name][m.key]));
  }
  const ratios = {};
  for (const [a, b] of RATIO_PAIRS) {
    const key = `${a}/${b}`;
    ratios[key] = {};
    for (const m of METRICS) ratios[key][m.key] = median(rounds.map((r) => r[a][m.key] / r[b][m.key]));
  }
  const targets = TARGETS.map((t) => {
    const value = (name) => (t.vs === null ? medians[name][t.key] : ratios[`${name}/${t.vs}`][t.key]);
    const judge = (v) =>
      !Number.isFinite(v) ? 'n/a' : (t.op === '<=' ? v <= t.limit : v >= t.limit) ? 'PASS' : 'FAIL';
    return {
      ...t,
      full: value('warden-full'),
      bare: value('warden-bare'),
      result: QUICK ? 'not judged (quick)' : judge(value('warden-full')),
      bareResult: judge(value('warden-bare')),
    };
  });
  return { medians, ratios, targets };
}

function report({ medians, ratios, targets }, meta) {
  const out = [];
  out.push(
    `mcp-warden bench ${meta.date}  node ${meta.node}  ${meta.cpu} ×${meta.cores}  load ${meta.loadBefore.join(' ')}`,
  );
  out.push(
    `${S.rounds} round(s); per round and configuration: ${S.startupReps}× start-up, ${S.calls} sequential echo calls ` +
      `after ${S.warmup}+${S.warmupConcurrent} warm-up, ${S.structuredCalls} sequential structured calls, ${S.throughputCalls} calls ` +
      `at ${S.inFlight} in flight, ${S.blobReps}× a ${S.blobKiB} KiB result, ${S.listReps}× tools/list of ${S.listSmall} ` +
      `and of ${S.listLarge} tools; configurations take turns in ${S.blocks} blocks per phase`,
  );
  out.push('');
  out.push(`Medians over ${S.rounds} round(s)`);
  out.push(
    table(
      ['config', ...METRICS.map((m) => m.head)],
      Object.entries(medians).map(([name, v]) => [name, ...METRICS.map((m) => fmt(v[m.key], m.digits))]),
    ),
  );
  out.push('');
  out.push('Ratios, computed per round then median (for calls/s higher is better, for the rest lower)');
  out.push(
    table(
      ['ratio', ...METRICS.map((m) => m.head)],
      Object.entries(ratios).map(([name, v]) => [name, ...METRICS.map((m) => fmt(v[m.key], 2, '×'))]),
    ),
  );
  out.push('');
  out.push('Targets, judged on warden-full');
  out.push(
    table(
      ['target', 'limit', 'warden-full', 'result', 'warden-bare', '(bare)'],
      targets.map((t) => {
        const unit = t.vs === null ? '' : '×';
        return [
          t.what,
          `${t.op === '<=' ? '≤' : '≥'} ${t.limit}${unit}`,
          fmt(t.full, 2, unit),
          t.result,
          fmt(t.bare, 2, unit),
          t.bareResult,
        ];
      }),
    ),
  );
  out.push('');
  out.push(
    "The audit trail's guarantees and warden-full's per-call work at their least, on the per-call targets (information: not judged above)",
  );
  const perCall = targets.filter((t) => t.vs === 'json-floor');
  const within = (t, v) =>
    !Number.isFinite(v) ? 'n/a' : (t.op === '<=' ? v <= t.limit : v >= t.limit) ? 'within' : 'beyond';
  out.push(
    table(
      [
        'ratio',
        ...perCall.map(
          (t) => `${METRICS.find((m) => m.key === t.key).head} (${t.op === '<=' ? '≤' : '≥'} ${t.limit}×)`,
        ),
      ],
      GUARANTEE_RATIOS.map((key) => [
        key,
        ...perCall.map((t) => `${fmt(ratios[key][t.key], 2, '×')} ${within(t, ratios[key][t.key])}`),
      ]),
    ),
  );
  out.push(
    '  json-floor-audit/json-floor: what the guarantees cost any gateway; where it is beyond a target, no',
  );
  out.push(
    '    gateway with them meets that target. warden-full/json-floor-audit: how far warden-full is from',
  );
  out.push(
    `    the least with the same guarantees (json-floor-audit wrote ${(meta.floorAuditBytes / 2 ** 20).toFixed(1)} MiB of audit records so far).`,
  );
  out.push(
    "  json-floor-full/json-floor: what doing warden-full's per-call work (the trail, validation, policy,",
  );
  out.push(
    '    deadlines, the concurrency limit, repair) costs any gateway at its least; where it is beyond a target,',
  );
  out.push(
    '    no gateway doing that work meets the target. warden-full/json-floor-full: how far warden-full is from',
  );
  out.push(
    `    that least (json-floor-full wrote ${(meta.floorFullAuditBytes / 2 ** 20).toFixed(1)} MiB of audit records so far).`,
  );
  const missing = meta.extras.filter((e) => !e.on || e.active?.startsWith('NOT'));
  if (missing.length > 0)
    out.push(`(warden-full ran without: ${missing.map((e) => e.name).join(', ')}; see below)`);
  out.push('');
  out.push('What the columns and configurations mean:');
  out.push(`  cpu µs/call: CPU time (all threads, from ${CPU_SOURCE}) during the throughput phase,`);
  out.push('    divided by its calls, of the middle process: the pipe for pipe, the gateway for warden-*;');
  out.push(
    "    for direct there is no middle process, so it is the fixture's own (the baseline cost of a call).",
  );
  out.push('  fixture cpu: the same for the fixture server in every configuration (it does identical work;');
  out.push('    a difference shows batching effects). Peak RSS is VmHWM of that same middle process');
  out.push('    (the fixture for direct) after listing the large tool set.');
  out.push('  total cpu: client + middle process + fixture per call at 32 in flight (for direct, client +');
  out.push('    fixture): the three share two cores, so calls/s@32 follows this sum more than cpu µs/call.');
  out.push(
    '  start-up: spawn → initialize → notifications/initialized → first tools/list answered (3 tools).',
  );
  out.push(
    '  warden-bare: every gateway.repair key off, validateArguments off, maxConcurrency 64 and maxQueue 1024',
  );
  out.push(
    '    (nothing queues), log level error; timeouts cannot be switched off and stay at their defaults.',
  );
  out.push(
    '  warden-full: defaults: every repair on, arguments validated, timeouts, maxConcurrency 16 (so calls',
  );
  out.push('    queue), info log;');
  for (const e of meta.extras)
    out.push(
      `    ${e.name}: ${e.on ? `on, ${e.active}` : `not in this build (\`mcp-warden check\` said: ${e.rejection})`}`,
    );
  if (TELEMETRY)
    out.push(
      '  warden-traces: warden-full plus telemetry.traces, OTLP/HTTP protobuf to a local sink that discards' +
        (meta.otlpSink
          ? ` (${meta.otlpSink.exports} exports, ${(meta.otlpSink.bytes / 2 ** 20).toFixed(1)} MiB)`
          : '') +
        '\n  warden-shipping: warden-traces plus an otlp audit sink (OTLP logs, JSON) to that sink, through its spool' +
        (meta.otlpSink ? ` (${meta.otlpSink.logExports} log exports)` : ''),
    );
  if (BASELINE_CLI !== undefined) out.push(`  warden-base: warden-full's config served by ${BASELINE_CLI}`);
  if (CPU_PROF_DIR !== undefined)
    out.push(
      `  warden-* ran under --cpu-prof (profiles in ${CPU_PROF_DIR}/warden-*): their figures include the profiler's cost.`,
    );
  out.push(
    `  client cpu µs/call (the bench's own, median): ${Object.entries(medians)
      .map(([n, v]) => `${n} ${fmt(v.clientCpuUsPerCall, 1)}`)
      .join(', ')}`,
  );
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// The OTLP sink for warden-traces and warden-shipping: takes every export, counts it, and answers
// as a collector does (audit logs come as JSON, traces as protobuf).

async function startOtlpSink() {
  const { createServer } = await import('node:http');
  const sink = { exports: 0, bytes: 0, logExports: 0, endpoint: '', server: undefined };
  sink.server = createServer((request, response) => {
    request.on('data', (chunk) => (sink.bytes += chunk.length));
    request.on('end', () => {
      sink.exports++;
      if (request.url === '/v1/logs') {
        sink.logExports++;
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{}');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/x-protobuf' });
      response.end();
    });
  });
  await new Promise((resolve) => sink.server.listen(0, '127.0.0.1', resolve));
  sink.endpoint = `http://127.0.0.1:${sink.server.address().port}`;
  return sink;
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  if (!existsSync('/proc/self/stat')) throw new Error('the bench reads /proc and needs Linux');
  if (CPU_PROF_DIR !== undefined)
    for (const name of ['warden-bare', 'warden-full'])
      mkdirSync(path.join(CPU_PROF_DIR, name), { recursive: true });
  if (BASELINE_CLI !== undefined && !existsSync(BASELINE_CLI)) throw new Error(`${BASELINE_CLI} is missing`);
  const sink = TELEMETRY ? await startOtlpSink() : undefined;
  const { files, extras } = await prepareGatewayConfigs([0, S.listSmall, S.listLarge], sink?.endpoint);
  const configs = configurations(files, sink?.endpoint);
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown cpu',
    cores: cpus().length,
    memGiB: +(totalmem() / 2 ** 30).toFixed(1),
    loadBefore: loadavg().map((x) => x.toFixed(2)),
    quick: QUICK,
    settings: S,
    extras,
  };
  const rounds = [];
  for (let round = 0; round < S.rounds; round++) {
    const t = performance.now();
    const r = await runRound(configs, round, extras);
    rounds.push(r);
    process.stderr.write(
      `round ${round + 1}/${S.rounds} (${((performance.now() - t) / 1000).toFixed(1)} s): ` +
        configs
          .map((c) => `${c.name} p50 ${fmt(r[c.name].p50Us, 0)} µs ${fmt(r[c.name].callsPerSec, 0)}/s`)
          .join(', ') +
        '\n',
    );
  }
  // The last round's probe says how things stood at the end (an audit file's size grows).
  extras.forEach((e, i) => (e.active = rounds.at(-1).extrasActive[i]));
  meta.floorAuditBytes = rounds.at(-1).floorAuditBytes;
  meta.floorFullAuditBytes = rounds.at(-1).floorFullAuditBytes;
  const summary = summarize(rounds);
  // Medians of the client's own CPU are reported in the notes, not as a column.
  for (const name of Object.keys(summary.medians))
    summary.medians[name].clientCpuUsPerCall = median(rounds.map((r) => r[name].clientCpuUsPerCall));
  meta.loadAfter = loadavg().map((x) => x.toFixed(2));
  if (sink !== undefined) {
    meta.otlpSink = { exports: sink.exports, bytes: sink.bytes, logExports: sink.logExports };
    if (sink.exports === 0) throw new Error('warden-traces exported nothing: tracing was not on');
    if (sink.logExports === 0)
      throw new Error('warden-shipping shipped no audit records: the sink was not on');
    sink.server.close();
  }
  process.stdout.write(`${report(summary, meta)}\n`);

  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify({ meta, rounds, ...summary }, null, 2)}\n`);
  process.stdout.write(`\nresults written to ${path.relative(process.cwd(), OUT) || OUT}\n`);

  const vsFloorFull = summary.ratios['warden-full/json-floor-full'];
  // Figures after a longer warm-up are other figures: their rows say so.
  const warmth = S.warmupConcurrent === S.warmup ? '' : `, after ${S.warmupConcurrent} warm-up calls`;
  recordPrices(
    'run',
    [
      ...summary.targets.map((t) => ({
        what: `warden-full ${t.what}`,
        value: t.full,
        unit: t.vs === null ? 'MB' : '×',
        ...(t.op === '<=' ? { atMost: t.limit } : { atLeast: t.limit }),
      })),
      { what: 'warden-full ÷ json-floor-full, p50 latency', value: vsFloorFull.p50Us, unit: '×' },
      { what: 'warden-full ÷ json-floor-full, throughput @32', value: vsFloorFull.callsPerSec, unit: '×' },
      { what: 'warden-full ÷ json-floor-full, CPU per call', value: vsFloorFull.cpuUsPerCall, unit: '×' },
      // Against another build (--baseline-cli): what this build's changes cost, as information.
      ...baselinePrices(summary.ratios['warden-full/warden-base']),
    ].map((price) => ({ ...price, what: `${price.what}${warmth}` })),
  );
  const missed = summary.targets.filter((t) => t.result === 'FAIL');
  if (!QUICK && missed.length > 0) {
    process.stdout.write(`targets missed: ${missed.map((t) => t.what).join('; ')}\n`);
    return 3;
  }
  return 0;
}

/** warden-full against the same config served by the --baseline-cli build, when there is one. */
function baselinePrices(ratios) {
  if (ratios === undefined) return [];
  const note = `÷ ${BASELINE_CLI}`;
  return [
    ['p50 latency', ratios.p50Us],
    ['throughput @32', ratios.callsPerSec],
    ['CPU per call', ratios.cpuUsPerCall],
    ['start-up', ratios.startupMs],
    ['peak RSS, 10k tools', ratios.peakRssMB],
  ].map(([what, value]) => ({ what: `warden-full ÷ baseline build, ${what}`, value, unit: '×', note }));
}

main().then(
  (code) => {
    killAll();
    process.exit(code);
  },
  (error) => fail(error),
);
