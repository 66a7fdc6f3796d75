#!/usr/bin/env node
// Peak RSS of warden-full while it serves a list of many tools, and that list's time, measured
// closely enough to compare two builds on a shared 2-core machine. bench/run.mjs reads VmHWM of
// one gateway per round, after its start-up and five large lists; here:
//
//   - `full` (warden-full's config on this build), with `--noise` also `full2` (the same build
//     again: its spread is the noise) and, with `--base-cli FILE`, `base` (the same config on
//     another build) are started in each block in an order rotated per block, each over the
//     bench fixture with `--tools` extra tools (10,000 by default);
//   - each instance is initialized and lists once (its start-up), then lists `--lists` more
//     times, taking turns with the others; then its VmHWM and VmRSS are read from /proc and it
//     is stopped;
//   - with `--probe`, every gateway runs with bench/lib/memProbe.mjs (`node --import`), which
//     samples the heap's split and reports its largest figures (heap used and committed, the
//     heap spaces, external memory, array buffers) and the split at the largest RSS it saw.
//
//   node bench/listRss.mjs [--blocks 8] [--lists 5] [--tools 10000] [--cli FILE] [--base-cli FILE]
//                          [--noise] [--probe] [--node-flags "--flag ..."] [--base-node-flags "..."]
//                          [--out FILE]
//
// Figures: medians over blocks with their minimum and maximum (MB), and the medians of per-block
// ratios of the list time (`full` against each other build). The probe adds a few MB to every
// instance alike, so compare probed runs only with probed runs.

import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { deadline, RpcChild } from './lib/client.mjs';
import { BENCH_POLICY } from './lib/configs.mjs';
import { peakRssBytes } from './lib/proc.mjs';
import { median, quantile, rotate } from './lib/stats.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const PROBE = path.join(BENCH, 'lib/memProbe.mjs');
const NODE = process.execPath;

const { values: flags } = parseArgs({
  options: {
    blocks: { type: 'string', default: '8' },
    lists: { type: 'string', default: '5' },
    tools: { type: 'string', default: '10000' },
    cli: { type: 'string' },
    'base-cli': { type: 'string' },
    noise: { type: 'boolean', default: false },
    probe: { type: 'boolean', default: false },
    'node-flags': { type: 'string', default: '' },
    'base-node-flags': { type: 'string', default: '' },
    out: { type: 'string' },
  },
});
const BLOCKS = Number(flags.blocks);
const LISTS = Number(flags.lists);
const TOOLS = Number(flags.tools);
const TIMEOUT_MS = 120_000;
const CLI = path.resolve(flags.cli ?? path.join(BENCH, '..', 'dist/cli.js'));
const words = (text) => text.split(' ').filter((w) => w !== '');

const builds = [{ name: 'full', cli: CLI, nodeFlags: words(flags['node-flags']) }];
if (flags.noise) builds.push({ name: 'full2', cli: CLI, nodeFlags: words(flags['node-flags']) });
if (flags['base-cli'] !== undefined)
  builds.push({
    name: 'base',
    cli: path.resolve(flags['base-cli']),
    nodeFlags: words(flags['base-node-flags']),
  });

const INITIALIZE_PARAMS = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'warden-bench', version: '1.0.0' },
});

const work = mkdtempSync(path.join(tmpdir(), 'warden-list-rss-'));
const probeDir = path.join(work, 'probe');
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill();
  rmSync(work, { recursive: true, force: true });
});

// Written once: the gateways watch their policy files, and rewriting it while one runs would
// have it reload its policies (which shows in its peak RSS).
const policy = path.join(work, 'bench-policy.yaml');
writeFileSync(policy, JSON.stringify(BENCH_POLICY, null, 2));

/**
 * warden-full's config as bench/run.mjs writes it: the policy and audit to a file. The whole
 * list is what is measured, so the current build is told to list every tool (`catalog.mode:
 * all`; its default serves a list this large as a search tool); a base build from before the
 * catalogue had no such key and lists everything anyway.
 */
function fullConfig(name, cli) {
  const file = path.join(work, `${name}.json`);
  const config = {
    ...(cli === CLI && { catalog: { mode: 'all' } }),
    servers: { bench: { command: NODE, args: [FIXTURE, '--tools', String(TOOLS)] } },
    policies: [policy],
    audit: { file: path.join(work, `${name}-audit.jsonl`) },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN);
  return { hwm: peakRssBytes(pid) / 2 ** 20, rss: kb('VmRSS') / 1024 };
}

/** The probe's figures for `pid`, asked for with SIGUSR2 and awaited as its file appears. */
async function probeReport(pid) {
  const file = path.join(probeDir, `${pid}.json`);
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 500 && !existsSync(file); i++) await sleep(10);
  return JSON.parse(readFileSync(file, 'utf8'));
}

async function start(build) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const probe = flags.probe ? ['--import', PROBE] : [];
  if (flags.probe) env.WARDEN_MEM_PROBE_DIR = probeDir;
  const args = [...build.nodeFlags, ...probe, build.cli, '--config', fullConfig(build.name, build.cli)];
  const child = new RpcChild({ label: build.name, command: NODE, args, env });
  live.add(child);
  const t0 = performance.now();
  await deadline(child.request('initialize', INITIALIZE_PARAMS), TIMEOUT_MS, `${build.name} initialize`);
  child.notify('notifications/initialized');
  await list(child, build.name);
  return { build, child, startupMs: performance.now() - t0, afterStart: memory(child.pid), listMs: [] };
}

async function list(child, name) {
  const result = await deadline(child.request('tools/list'), TIMEOUT_MS, `${name} tools/list`);
  if (result?.tools?.length !== TOOLS + 3)
    throw new Error(`${name}: tools/list returned the wrong number of tools`);
}

if (flags.probe) {
  const { mkdirSync } = await import('node:fs');
  mkdirSync(probeDir);
}
const rows = new Map(builds.map((b) => [b.name, []]));
const loadStart = loadavg()[0];
for (let block = 0; block < BLOCKS; block++) {
  const insts = [];
  for (const build of rotate(builds, block)) insts.push(await start(build));
  for (let rep = 0; rep < LISTS; rep++)
    for (const inst of rotate(insts, rep + block)) {
      const t = performance.now();
      await list(inst.child, inst.build.name);
      inst.listMs.push(performance.now() - t);
    }
  for (const inst of insts) {
    const row = {
      startupMs: inst.startupMs,
      hwmAfterStart: inst.afterStart.hwm,
      ...memory(inst.child.pid),
      listMs: median(inst.listMs),
    };
    if (flags.probe) row.probe = await probeReport(inst.child.pid);
    rows.get(inst.build.name).push(row);
  }
  for (const inst of insts) {
    await inst.child.close(30_000);
    live.delete(inst.child);
  }
  process.stderr.write(
    `block ${block + 1}/${BLOCKS}: ${insts.map((i) => `${i.build.name} ${rows.get(i.build.name).at(-1).hwm.toFixed(1)}`).join(', ')} MB\n`,
  );
}
const loadEnd = loadavg()[0];

const spread = (values, digits = 1) =>
  `${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}]`;
const out = [];
out.push(
  `listRss: ${TOOLS} extra tools, ${BLOCKS} blocks, ${LISTS} lists after start-up, load ${loadStart.toFixed(1)} → ${loadEnd.toFixed(1)}` +
    `${flags.probe ? ', memory probe loaded' : ''}`,
);
out.push('median [min–max] over blocks');
out.push('build   peak RSS MB (VmHWM)  after start-up MB  RSS at end MB      list ms           start-up ms');
for (const [name, r] of rows)
  out.push(
    `${name.padEnd(7)} ${spread(r.map((x) => x.hwm)).padEnd(20)} ${spread(r.map((x) => x.hwmAfterStart)).padEnd(18)} ` +
      `${spread(r.map((x) => x.rss)).padEnd(18)} ${spread(r.map((x) => x.listMs)).padEnd(17)} ${spread(
        r.map((x) => x.startupMs),
        0,
      )}`,
  );
const full = rows.get('full');
for (const [name, r] of rows) {
  if (name === 'full') continue;
  const ratios = full.map((x, i) => x.listMs / r[i].listMs);
  const deltas = full.map((x, i) => x.hwm - r[i].hwm);
  out.push(
    `full/${name}: list time ${median(ratios).toFixed(2)}× [${quantile(ratios, 0.25).toFixed(2)}–${quantile(ratios, 0.75).toFixed(2)}], ` +
      `peak RSS ${median(deltas) >= 0 ? '+' : ''}${median(deltas).toFixed(1)} MB per block (median)`,
  );
}
if (flags.probe) {
  out.push('probe (median over blocks, MB): largest sampled / at the largest sampled RSS / at the end');
  const keys = Object.keys(full[0].probe.max);
  for (const [name, r] of rows) {
    out.push(`  ${name}:`);
    for (const key of keys) {
      const m = median(r.map((x) => x.probe.max[key]));
      const p = median(r.map((x) => x.probe.atPeakRss[key]));
      const e = median(r.map((x) => x.probe.now[key]));
      if (m < 0.05) continue;
      out.push(
        `    ${key.padEnd(28)} ${m.toFixed(1).padStart(7)} ${p.toFixed(1).padStart(7)} ${e.toFixed(1).padStart(7)}`,
      );
    }
  }
}
const text = out.join('\n');
process.stdout.write(`${text}\n`);
if (flags.out !== undefined)
  writeFileSync(flags.out, `${JSON.stringify({ rows: Object.fromEntries(rows) }, null, 2)}\n`);
