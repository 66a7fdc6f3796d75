#!/usr/bin/env node
// Start-up and memory with many stdio servers: how long a host waits from starting its MCP
// server(s) to the first `tools/list` answer, and how much memory the whole process tree then
// holds (the sum of VmRSS over the gateway and every process under it), for:
//
//   alone     the built gateway with no upstream running (its one server entry is disabled):
//             the floor the lazy goals are judged against
//   aloneYaml the same config written in YAML, as most users write theirs: what reading YAML
//             adds to a start (information)
//   lazy      the gateway with N bench fixture servers, `start: lazy`, listed from the listings
//             a first run kept (none of the servers is started)
//   eager     the gateway with the same N servers, each started with the gateway
//   direct    a host starting the same N servers itself: spawn each, initialize and list each,
//             timed until the last one has answered; memory is the sum over the N processes
//
// Configurations take turns round by round (rotated), so a noisy neighbour hurts all alike; each
// figure is reported as the median of the rounds with its spread (lowest and highest), and each
// ratio is taken within a round before its median is taken.
//
//   node bench/lazyStart.mjs [--rounds N] [--servers N] [--tools K] [--cli FILE] [--out FILE]
//
// Goals: lazy start-up ≤ 1.2× alone; lazy memory ≤ 1.2× alone. Exit codes: 0 ran (and met the
// goals), 1 something failed, 2 bad usage, 3 ran but missed a goal.

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { recordPrices } from './lib/prices.mjs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { deadline, RpcChild } from './lib/client.mjs';
import { median, rotate } from './lib/stats.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH);
const FIXTURE = path.join(BENCH, 'fixture/server.mjs');
const NODE = process.execPath;

function usage(message) {
  process.stderr.write(
    `bench: ${message}\nusage: node bench/lazyStart.mjs [--rounds N] [--servers N] [--tools K] [--cli FILE] [--out FILE]\n`,
  );
  process.exit(2);
}

let flags;
try {
  flags = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      servers: { type: 'string', default: '20' },
      tools: { type: 'string', default: '10' },
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
const SERVERS = positive('servers');
const TOOLS = Number(flags.tools);
const CLI = path.resolve(flags.cli);
const HANDSHAKE = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'bench', version: '1' },
});
const TIMEOUT_MS = 60_000;

const work = mkdtempSync(path.join(tmpdir(), 'warden-bench-lazy-'));
const state = path.join(work, 'state');
const env = { PATH: process.env.PATH ?? '', HOME: work, XDG_STATE_HOME: state };

/**
 * A config of `servers` fixture servers (or one disabled entry for none), starting as `start`
 * says; in JSON, or with `yaml`, the same in YAML.
 */
function writeConfig(name, servers, start, { yaml = false } = {}) {
  const entries = {};
  for (let i = 0; i < Math.max(servers, 1); i++)
    entries[`s${String(i).padStart(2, '0')}`] = {
      command: NODE,
      args: [FIXTURE, '--tools', String(TOOLS)],
      ...(servers === 0 ? { disabled: true } : { start }),
    };
  const file = path.join(work, `${name}.${yaml ? 'yaml' : 'json'}`);
  // Every tool listed, as the figures are about start-up with the whole catalogue (the default
  // would serve hundreds of tools as a search tool).
  const config = { gateway: { startupTimeout: '60s' }, catalog: { mode: 'all' }, servers: entries };
  writeFileSync(file, yaml ? `# The same config, in YAML.\n${stringify(config)}` : JSON.stringify(config));
  return file;
}

const configs = {
  alone: writeConfig('alone', 0, 'eager'),
  aloneYaml: writeConfig('alone', 0, 'eager', { yaml: true }),
  lazy: writeConfig('lazy', SERVERS, 'lazy'),
  eager: writeConfig('eager', SERVERS, 'eager'),
};

/** VmRSS of `pid` in bytes; 0 once it is gone. */
function rssBytes(pid) {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? 0 : Number(match[1]) * 1024;
  } catch {
    return 0;
  }
}

/** `pid` and every process under it. */
function tree(pid) {
  const parents = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // exited while we looked
    }
  }
  const found = [pid];
  for (let i = 0; i < found.length; i++)
    for (const [child, parent] of parents) if (parent === found[i]) found.push(child);
  return found;
}

/** One gateway run: spawn → initialize → tools/list answered; then the tree's memory. */
async function gateway(config) {
  const started = performance.now();
  const child = new RpcChild({ label: 'gateway', command: NODE, args: [CLI, '--config', config], env });
  try {
    await deadline(child.request('initialize', HANDSHAKE), TIMEOUT_MS, 'initialize');
    child.notify('notifications/initialized');
    const listed = await deadline(child.request('tools/list'), TIMEOUT_MS, 'tools/list');
    const ms = performance.now() - started;
    const pids = tree(child.pid);
    const bytes = pids.reduce((sum, pid) => sum + rssBytes(pid), 0);
    return { ms, mb: bytes / 2 ** 20, tools: listed.tools.length, processes: pids.length };
  } finally {
    await child.close();
  }
}

/** The host starting every server itself, all at once, as hosts do. */
async function direct() {
  const started = performance.now();
  const children = [];
  try {
    for (let i = 0; i < SERVERS; i++)
      children.push(
        new RpcChild({ label: `server ${i}`, command: NODE, args: [FIXTURE, '--tools', String(TOOLS)], env }),
      );
    const lists = await Promise.all(
      children.map(async (c) => {
        await deadline(c.request('initialize', HANDSHAKE), TIMEOUT_MS, 'initialize');
        c.notify('notifications/initialized');
        return deadline(c.request('tools/list'), TIMEOUT_MS, 'tools/list');
      }),
    );
    const ms = performance.now() - started;
    const bytes = children.reduce((sum, c) => sum + rssBytes(c.pid), 0);
    const tools = lists.reduce((sum, l) => sum + l.tools.length, 0);
    return { ms, mb: bytes / 2 ** 20, tools, processes: children.length };
  } finally {
    await Promise.all(children.map((c) => c.close()));
  }
}

const RUNS = {
  alone: () => gateway(configs.alone),
  aloneYaml: () => gateway(configs.aloneYaml),
  lazy: () => gateway(configs.lazy),
  eager: () => gateway(configs.eager),
  direct,
};
const NAMES = Object.keys(RUNS);

const fmt = (n, digits = 1) => n.toFixed(digits);
const spread = (values, digits = 1) =>
  `${fmt(median(values), digits)} (${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)})`;

async function main() {
  process.stderr.write(`bench: ${SERVERS} servers of ${TOOLS} tools, ${ROUNDS} rounds\n`);
  // The first lazy run lists every server once and keeps the listings; the measured ones use them.
  const first = await gateway(configs.lazy);
  if (first.tools !== SERVERS * (TOOLS + 3))
    throw new Error(`the first lazy run listed ${first.tools} tools`);
  const results = Object.fromEntries(NAMES.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of rotate(NAMES, round)) {
      const result = await RUNS[name]();
      results[name].push(result);
      process.stderr.write(
        `  round ${round + 1} ${name.padEnd(6)} ${fmt(result.ms, 0).padStart(5)} ms ${fmt(result.mb).padStart(6)} MB (${result.processes} processes, ${result.tools} tools)\n`,
      );
    }
    if (results.lazy[round].processes !== 1) throw new Error('a lazy run started a server');
  }
  const ratio = (name, base, key) => results[name].map((r, i) => r[key] / results[base][i][key]);
  const lines = [
    `${SERVERS} stdio servers of ${TOOLS + 3} tools each, ${ROUNDS} rounds; median (lowest–highest)`,
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, ${cpus().length} CPUs`,
    '',
    '| configuration | start-up to tools/list, ms | RSS of the tree, MB | start-up / alone | RSS / alone |',
    '| --- | --- | --- | --- | --- |',
    ...NAMES.map(
      (name) =>
        `| ${name} | ${spread(
          results[name].map((r) => r.ms),
          0,
        )} | ${spread(results[name].map((r) => r.mb))} | ` +
        `${spread(ratio(name, 'alone', 'ms'), 2)} | ${spread(ratio(name, 'alone', 'mb'), 2)} |`,
    ),
  ];
  const startup = median(ratio('lazy', 'alone', 'ms'));
  const memory = median(ratio('lazy', 'alone', 'mb'));
  const yamlStartup = median(ratio('aloneYaml', 'alone', 'ms'));
  const verdict = (value) => (value <= 1.2 ? 'PASS' : 'FAIL');
  lines.push(
    '',
    `${verdict(startup)} lazy start-up ≤ 1.2× alone: ${fmt(startup, 2)}×`,
    `${verdict(memory)} lazy RSS ≤ 1.2× alone: ${fmt(memory, 2)}×`,
    `REPORTED start-up with the config in YAML ÷ in JSON: ${fmt(yamlStartup, 2)}×`,
  );
  recordPrices('lazyStart', [
    { what: `lazy start-up, ${SERVERS} servers ÷ gateway alone`, value: startup, unit: '×', atMost: 1.2 },
    { what: `RSS, ${SERVERS} lazy servers ÷ gateway alone`, value: memory, unit: '×', atMost: 1.2 },
    { what: 'start-up, config in YAML ÷ the same in JSON', value: yamlStartup, unit: '×' },
  ]);
  const report = lines.join('\n') + '\n';
  process.stdout.write(report);
  if (flags.out !== undefined) writeFileSync(flags.out, report);
  return startup <= 1.2 && memory <= 1.2 ? 0 : 3;
}

main()
  .then(
    (code) => (process.exitCode = code),
    (error) => {
      process.stderr.write(`bench: ${error.stack ?? error}\n`);
      process.exitCode = 1;
    },
  )
  .finally(() => rmSync(work, { recursive: true, force: true }));
