#!/usr/bin/env node
// The first tools/call of a session against the calls that follow it, through the gateway and
// on a direct connection to the same server (the official "everything" server, its `echo` and
// `get-sum` tools). A host starts its MCP server, initializes, lists, and calls: each round
// spawns a fresh process, so the first call pays whatever the process had left for later
// (loading modules, compiling the tool's input validator).
//
//   first        the first call after tools/list was answered (as a host makes it at once)
//   other first  the first call of a second tool, right after
//   tenth        the tenth call of the first tool
//
// Two servers, each reached through the gateway and directly: server-everything, whose own first
// call costs about five times its tenth (a fresh Node process compiling its SDK), and the
// bench's light fixture (bench/fixture/server.mjs, no SDK), whose first call costs little more
// than its tenth. In front of server-everything no gateway can bring the first call within twice
// the tenth, since the server alone is further off than that; so the first goal is judged in
// front of the light server, where what the gateway does once is what the ratio shows, and
// server-everything's figure stands beside it with its direct reference.
//
// server-everything is also reached directly the way the gateway reaches it (protocol
// 2025-11-25, the three other lists after tools/list, a progress token on every call): the
// server's first call costs it more CPU when asked so, a cost the gateway's figure carries and
// plain direct's does not. Its figures are references, beside the goal, which stays against
// plain direct: they tell the server's share of the gap from the gateway's own.
//
// One more configuration shows what a first call meets when it arrives while the gateway is
// compiling validators ahead (src/gateway/schemaWarmup.ts): the light server with one more tool
// whose schema needs ajv, and a host that calls 240 ms after its tools/list, when the warm-up
// (which starts once the host has been sent nothing for 200 ms) is loading ajv. Such a call
// waits for the warm-up's step in progress at most; its figure is information.
//
// Configurations take turns (rotated per round); each figure is the median of the rounds, and
// each ratio is taken within a round before its median is taken.
//
//   node bench/firstCall.mjs [--rounds N] [--cli FILE] [--out FILE]
//
// Goals: the gateway's first call ≤ 2× its tenth (in front of the light server); the gateway's
// first call ≤ 1.5× direct's first call (server-everything, both starting it fresh). Beside them,
// for information: server-everything's first ÷ tenth through the gateway and directly (its
// reference), and the time the gateway adds to a call in front of it (gateway minus direct, in
// the same round) on the first call against the tenth, which leaves the server's own first call
// out. Exit codes: 0 ran and met the goals, 1 something failed, 2 bad usage, 3 missed a goal.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { recordPrices } from './lib/prices.mjs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { deadline, RpcChild } from './lib/client.mjs';
import { cpuMicros } from './lib/proc.mjs';
import { median, rotate } from './lib/stats.mjs';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const NODE = process.execPath;
const SERVER = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const LIGHT_SERVER = path.join(ROOT, 'bench/fixture/server.mjs');
/** What each server is called with: the first tool, the other tool, and the first tool's nth call. */
const CALLS = {
  everything: {
    first: ['echo', { message: 'hello' }],
    other: ['get-sum', { a: 1, b: 2 }],
    nth: (i) => ['echo', { message: `hello ${i}` }],
  },
  light: {
    first: ['echo', { text: 'hello' }],
    other: ['structured', { text: 'hi' }],
    nth: (i) => ['echo', { text: `hello ${i}` }],
  },
};

let flags;
try {
  flags = parseArgs({
    options: {
      rounds: { type: 'string', default: '7' },
      cli: { type: 'string', default: path.join(ROOT, 'dist/cli.js') },
      out: { type: 'string' },
    },
  }).values;
} catch (error) {
  process.stderr.write(
    `bench: ${error.message}\nusage: node bench/firstCall.mjs [--rounds N] [--cli FILE] [--out FILE]\n`,
  );
  process.exit(2);
}
const ROUNDS = Number(flags.rounds);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  process.stderr.write(`bench: --rounds wants a positive integer, got ${flags.rounds}\n`);
  process.exit(2);
}
const CLI = path.resolve(flags.cli);
const TIMEOUT_MS = 60_000;
const HANDSHAKE = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'bench', version: '1' },
});
/**
 * What the gateway asks of a server that a host reaching it directly may not: the newest
 * protocol, every list at start-up, and a progress token on each call (the token keeps the idle
 * timeout from firing while the server reports progress). server-everything's first call costs
 * it more CPU when asked so; the reference configuration "direct, asked as the gateway asks"
 * shows how much of the gap to direct is the server's and how much is the gateway's own.
 */
const GATEWAY_HANDSHAKE = JSON.stringify({
  protocolVersion: '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'bench', version: '1' },
});
const GATEWAY_LISTS = ['prompts/list', 'resources/list', 'resources/templates/list'];

const work = mkdtempSync(path.join(tmpdir(), 'warden-bench-first-'));
const env = { PATH: process.env.PATH ?? '', HOME: work, XDG_STATE_HOME: path.join(work, 'state') };
/** A gateway config with the shipped defaults (validation, policy, audit, repair on), one server. */
function writeGatewayConfig(name, server, serverArgs = []) {
  const file = path.join(work, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      audit: { file: path.join(work, `${name}-audit.jsonl`) },
      servers: { everything: { command: NODE, args: [server, ...serverArgs] } },
    }),
  );
  return file;
}
const config = writeGatewayConfig('config', SERVER);
const lightConfig = writeGatewayConfig('light', LIGHT_SERVER);
const warmingConfig = writeGatewayConfig('warming', LIGHT_SERVER, ['--ajv-tool']);
/** How long the host of the warming configuration waits after tools/list before it calls. */
const WARMING_PAUSE_MS = 240;
// Each gateway config has a state folder of its own, as a user's one config has: the code cache
// in it is written for the chunks that config loads.
const lightEnv = { ...env, XDG_STATE_HOME: path.join(work, 'state-light') };
const warmingEnv = { ...env, XDG_STATE_HOME: path.join(work, 'state-warming') };

/** The processes `pid` started (the gateway's upstream server), from /proc. */
function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

async function session(command, args, { prefix, calls, childEnv = env, pauseMs = 0, asGateway = false }) {
  const child = new RpcChild({ label: prefix === '' ? 'direct' : 'gateway', command, args, env: childEnv });
  // Wall time moves with whatever else the machine runs; CPU time much less. So each call is
  // also measured as the CPU its processes spent on it: the middle one (the gateway, or for a
  // direct connection the server itself) and, for the gateway, the server behind it.
  let server = [];
  const cpu = () => ({
    own: cpuMicros(child.pid),
    server: server.reduce((sum, pid) => sum + cpuMicros(pid), 0),
  });
  let progressToken = 0;
  const call = async (tool, args) => {
    const params = { name: prefix + tool, arguments: args };
    if (asGateway) params._meta = { progressToken: ++progressToken };
    const before = cpu();
    const started = performance.now();
    await deadline(child.request('tools/call', JSON.stringify(params)), TIMEOUT_MS, tool);
    const ms = performance.now() - started;
    const after = cpu();
    return { ms, cpuMs: (after.own - before.own) / 1000, serverCpuMs: (after.server - before.server) / 1000 };
  };
  try {
    await deadline(
      child.request('initialize', asGateway ? GATEWAY_HANDSHAKE : HANDSHAKE),
      TIMEOUT_MS,
      'initialize',
    );
    child.notify('notifications/initialized');
    await deadline(child.request('tools/list'), TIMEOUT_MS, 'tools/list');
    if (asGateway) for (const list of GATEWAY_LISTS) await deadline(child.request(list), TIMEOUT_MS, list);
    if (prefix !== '') server = childrenOf(child.pid);
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    const first = await call(...calls.first);
    const otherFirst = await call(...calls.other);
    let tenth;
    for (let i = 2; i <= 10; i++) tenth = await call(...calls.nth(i));
    return { first, otherFirst, tenth };
  } finally {
    await child.close();
  }
}

const RUNS = {
  gateway: () =>
    session(NODE, [CLI, '--config', config], { prefix: 'everything__', calls: CALLS.everything }),
  direct: () => session(NODE, [SERVER], { prefix: '', calls: CALLS.everything }),
  directAsGateway: () => session(NODE, [SERVER], { prefix: '', calls: CALLS.everything, asGateway: true }),
  lightGateway: () =>
    session(NODE, [CLI, '--config', lightConfig], {
      prefix: 'everything__',
      calls: CALLS.light,
      childEnv: lightEnv,
    }),
  lightDirect: () => session(NODE, [LIGHT_SERVER], { prefix: '', calls: CALLS.light }),
  lightWarming: () =>
    session(NODE, [CLI, '--config', warmingConfig], {
      prefix: 'everything__',
      calls: CALLS.light,
      childEnv: warmingEnv,
      pauseMs: WARMING_PAUSE_MS,
    }),
};

const fmt = (n, digits = 1) => n.toFixed(digits);
const spread = (values, digits = 1) =>
  `${fmt(median(values), digits)} (${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)})`;

async function main() {
  const results = {
    gateway: [],
    direct: [],
    directAsGateway: [],
    lightGateway: [],
    lightDirect: [],
    lightWarming: [],
  };
  // One unmeasured run each, so both meet a warm disk cache.
  for (const run of Object.values(RUNS)) await run();
  for (let round = 0; round < ROUNDS; round++)
    for (const name of rotate(Object.keys(RUNS), round)) results[name].push(await RUNS[name]());
  const pick = (name, key, field = 'ms') => results[name].map((r) => r[key][field]);
  const within = (f) => results.gateway.map((g, i) => f(g, results.direct[i]));
  const withinAsked = (f) => results.gateway.map((g, i) => f(g, results.directAsGateway[i]));
  const withinLight = (f) => results.lightGateway.map((g, i) => f(g, results.lightDirect[i]));
  const firstVsTenth = withinLight((g) => g.first.ms / g.tenth.ms);
  const firstVsDirect = within((g, d) => g.first.ms / d.first.ms);
  const goals = [
    ['gateway first ÷ its tenth, light server', median(firstVsTenth), 2],
    ['gateway first ÷ direct first', median(firstVsDirect), 1.5],
  ];
  // The same comparisons in CPU time, which a busy neighbour moves far less than wall time: the
  // gateway's own, and the gateway's with its server's against the server's reached directly.
  const both = (r) => r.cpuMs + r.serverCpuMs;
  // What the gateway adds to a call, apart from the server's own cold start: behind the gateway
  // the server is as fresh a process as a direct connection's, and its first call costs several
  // times its tenth, which no gateway can take away. Gateway minus direct, first against tenth.
  const addedFirstVsTenth = within((g, d) => (g.first.ms - d.first.ms) / (g.tenth.ms - d.tenth.ms));
  const cpuRatios = [
    // What the server alone makes of the first goal: reached directly, its first call against
    // its tenth. The gateway's first ÷ tenth can hardly fall below this.
    [
      'light server direct, first ÷ its tenth (reference)',
      median(withinLight((_g, d) => d.first.ms / d.tenth.ms)),
    ],
    ['gateway first ÷ its tenth, server-everything', median(within((g) => g.first.ms / g.tenth.ms))],
    ['direct first ÷ its tenth (reference)', median(within((_g, d) => d.first.ms / d.tenth.ms))],
    ["gateway's added time, first ÷ tenth", median(addedFirstVsTenth)],
    ['gateway CPU, first ÷ tenth', median(within((g) => g.first.cpuMs / g.tenth.cpuMs))],
    ['gateway CPU, first ÷ tenth, light server', median(withinLight((g) => g.first.cpuMs / g.tenth.cpuMs))],
    [
      `gateway first ${WARMING_PAUSE_MS} ms after the list, while compiling ahead ÷ first at once, light server`,
      median(results.lightWarming.map((w, i) => w.first.ms / results.lightGateway[i].first.ms)),
    ],
    [
      'gateway and its server CPU, first ÷ direct first',
      median(within((g, d) => both(g.first) / d.first.cpuMs)),
    ],
    // The part of the gap that is the server's: it reached directly but asked as the gateway
    // asks, against plain direct; and the gateway against that reference, the part that is ours.
    [
      'direct asked as the gateway asks, first ÷ direct first (reference)',
      median(results.direct.map((d, i) => results.directAsGateway[i].first.ms / d.first.ms)),
    ],
    [
      'its server CPU ÷ direct server CPU, asked as the gateway asks, first call',
      median(withinAsked((g, a) => g.first.serverCpuMs / a.first.cpuMs)),
    ],
    [
      'gateway first ÷ direct first asked as the gateway asks',
      median(withinAsked((g, a) => g.first.ms / a.first.ms)),
    ],
  ];
  const row = (label, name, field, digits = 1) =>
    `| ${label} | ${spread(pick(name, 'first', field), digits)} | ${spread(pick(name, 'otherFirst', field), digits)} | ${spread(pick(name, 'tenth', field), 2)} |`;
  const lines = [
    `first tools/call, ms: median (lowest–highest) of ${ROUNDS} rounds; node ${process.version}, ${cpus().length} cores, load ${loadavg()[0].toFixed(1)}`,
    '',
    '| | first | other tool first | tenth |',
    '|---|---|---|---|',
    row('gateway', 'gateway', 'ms'),
    row('direct', 'direct', 'ms'),
    row('gateway CPU', 'gateway', 'cpuMs', 2),
    row('its server CPU', 'gateway', 'serverCpuMs', 2),
    row('direct server CPU', 'direct', 'cpuMs', 2),
    row('direct, asked as the gateway asks', 'directAsGateway', 'ms'),
    row('direct server CPU, asked as the gateway asks', 'directAsGateway', 'cpuMs', 2),
    row('gateway, light server', 'lightGateway', 'ms'),
    row('direct, light server', 'lightDirect', 'ms'),
    row('gateway CPU, light server', 'lightGateway', 'cpuMs', 2),
    row(`gateway, light server, call ${WARMING_PAUSE_MS} ms after the list`, 'lightWarming', 'ms'),
    '',
    '| goal | ratio | limit | |',
    '|---|---|---|---|',
    ...goals.map(
      ([what, ratio, limit]) =>
        `| ${what} | ${fmt(ratio, 2)}× | ≤ ${limit}× | ${ratio <= limit ? 'PASS' : 'FAIL'} |`,
    ),
    ...cpuRatios.map(([what, ratio]) => `| ${what} | ${fmt(ratio, 2)}× | | information |`),
  ];
  const text = lines.join('\n') + '\n';
  process.stdout.write(text);
  recordPrices(
    'firstCall',
    goals.map(([what, value, limit]) => ({ what: `first call: ${what}`, value, unit: '×', atMost: limit })),
  );
  if (flags.out !== undefined) writeFileSync(flags.out, text);
  return goals.every(([, ratio, limit]) => ratio <= limit);
}

main()
  .then((met) => {
    rmSync(work, { recursive: true, force: true });
    process.exitCode = met ? 0 : 3;
  })
  .catch((error) => {
    rmSync(work, { recursive: true, force: true });
    process.stderr.write(`bench: ${error.stack ?? error}\n`);
    process.exitCode = 1;
  });
