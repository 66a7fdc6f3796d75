#!/usr/bin/env node
// The HTTP listener against the stdio path, in one run: the built gateway serving the bench's
// fixture server, driven by equally lean clients on both sides (no SDK on either: its cost would
// hide the gateway's).
//
//   node bench/http.mjs [--rounds N] [--calls N] [--warmup N] [--seconds S] [--principals 1,8,64]
//                       [--cli FILE]
//
// Each round measures:
// - p50 latency of sequential echo calls over stdio, over an HTTP session (2025-11-25, with a
//   bearer token checked on every POST), and as stateless 2026-07-28 POSTs (same token), and
//   reports each HTTP figure as a ratio to stdio's; with the gateway's CPU per call (user and
//   system time from /proc) over the same calls. Each is measured after --warmup calls of its
//   own (2,000 by default): a few dozen leave the gateway's code unoptimised, and its figures
//   then say more about V8's tiers than about the path;
// - throughput with 1, 8 and 64 principals at once, each with a token of its own subject and its
//   own session, one call in flight each, for S seconds.
// The upstream is marked `shared: true`, so the figures are the listener's and the pipeline's,
// not the cost of starting one server process per principal (bench/principalMemory.mjs reports
// that). Tokens come from a real issuer (oauth2-mock-server) on loopback.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OAuth2Server } from 'oauth2-mock-server';
import { deadline, RpcChild } from './lib/client.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = path.join(ROOT, 'bench/fixture/server.mjs');
const AUDIENCE = 'https://warden.bench/mcp';
const MODERN = '2026-07-28';

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const CLI = path.resolve(flag('cli', path.join(ROOT, 'dist/cli.js')));
const ROUNDS = Number(flag('rounds', 3));
const WARMUP = Number(flag('warmup', 2000));
const CALLS = Number(flag('calls', 1000));
const SECONDS = Number(flag('seconds', 3));
const PRINCIPALS = String(flag('principals', '1,8,64')).split(',').map(Number);

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const issuer = new OAuth2Server();
await issuer.issuer.keys.generate('RS256');
await issuer.start(0, '127.0.0.1');
const token = (subject) =>
  issuer.issuer.buildToken({
    expiresIn: 3600,
    scopesOrTransform: (_header, payload) => {
      payload.sub = subject;
      payload.aud = AUDIENCE;
    },
  });

const dir = mkdtempSync(path.join(tmpdir(), 'warden-http-bench-'));
const server = { command: process.execPath, args: [FIXTURE], shared: true };
const stdioConfig = path.join(dir, 'stdio.json');
writeFileSync(
  stdioConfig,
  JSON.stringify({ audit: { file: path.join(dir, 'stdio.jsonl') }, servers: { up: server } }),
);
const httpConfig = path.join(dir, 'http.json');
writeFileSync(
  httpConfig,
  JSON.stringify({
    audit: { file: path.join(dir, 'http.jsonl') },
    auth: { issuer: issuer.issuer.url, audience: AUDIENCE },
    listen: { http: '127.0.0.1:0', maxSessions: 1000 },
    servers: { up: server },
  }),
);

async function startHttpGateway() {
  const child = spawn(process.execPath, [CLI, '--config', httpConfig, '--http', '127.0.0.1:0'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MCP_WARDEN_MANAGED_DIR: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await deadline(
    new Promise((resolve, reject) => {
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        const found = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
        if (found) resolve(found[1]);
      });
      child.once('exit', () => reject(new Error(`the HTTP gateway exited:\n${stderr}`)));
    }),
    30_000,
    'HTTP gateway start',
  );
  return { child, url };
}

/** Reads the one JSON-RPC message of a POST's answer, sent as JSON or as an SSE stream. */
async function answerOf(response) {
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)));
  return data.find((m) => m.id !== undefined);
}

/** Calls `up__echo` with `text`, one POST each (with `meta` as the params' `_meta` when given). */
function echoCaller(url, headers, what, meta) {
  let id = 1;
  return async (text) => {
    const params = { name: 'up__echo', arguments: { text }, ...(meta !== undefined && { _meta: meta }) };
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params }),
    });
    const answer = await answerOf(response);
    if (answer?.result === undefined) throw new Error(`${what} call failed: ${JSON.stringify(answer)}`);
  };
}

/** One HTTP session (2025-11-25) of `subject`, with lean calls over fetch. */
async function session(url, subject) {
  const auth = `Bearer ${await token(subject)}`;
  const base = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: auth,
  };
  const init = await fetch(url, {
    method: 'POST',
    headers: base,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: subject, version: '1' },
      },
    }),
  });
  await answerOf(init);
  const headers = {
    ...base,
    'Mcp-Session-Id': init.headers.get('mcp-session-id'),
    'Mcp-Protocol-Version': '2025-11-25',
  };
  await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  }).then((r) => r.text());
  const caller = echoCaller(url, headers, 'session');
  return {
    call: caller,
    close: () => fetch(url, { method: 'DELETE', headers }).then((r) => r.text()),
  };
}

/** Stateless 2026-07-28 calls of `subject`: each POST carries its envelope and mirrored headers. */
async function stateless(url, subject) {
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: `Bearer ${await token(subject)}`,
    'Mcp-Protocol-Version': MODERN,
    'Mcp-Method': 'tools/call',
    'Mcp-Name': 'up__echo',
  };
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: subject, version: '1' },
  };
  return { call: echoCaller(url, headers, 'stateless', meta) };
}

/** CPU time (user + system) `pid` has used so far, in µs; NaN where /proc is not there. */
function cpuUs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}

/** The p50 in ms of CALLS sequential calls after WARMUP, and the gateway's CPU µs per call. */
async function latencies(call, pid) {
  for (let i = 0; i < WARMUP; i++) await call(`warm ${i}`);
  const times = [];
  const cpuBefore = cpuUs(pid);
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    await call(`call ${i}`);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return { p50: median(times), cpu: (cpuUs(pid) - cpuBefore) / CALLS };
}

async function stdioP50() {
  const child = new RpcChild({
    label: 'stdio gateway',
    command: process.execPath,
    args: [CLI, '--config', stdioConfig],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MCP_WARDEN_MANAGED_DIR: dir },
  });
  await deadline(
    child.request(
      'initialize',
      JSON.stringify({
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'b', version: '1' },
      }),
    ),
    30_000,
    'stdio initialize',
  );
  child.notify('notifications/initialized');
  const measured = await latencies(
    (text) => child.request('tools/call', JSON.stringify({ name: 'up__echo', arguments: { text } })),
    child.pid,
  );
  await child.close();
  return measured;
}

async function throughput(url, principals) {
  const hosts = await Promise.all(
    Array.from({ length: principals }, (_, i) => session(url, `p${principals}-${i}`)),
  );
  for (const host of hosts) await host.call('warm');
  let calls = 0;
  const end = Date.now() + SECONDS * 1000;
  const start = process.hrtime.bigint();
  await Promise.all(
    hosts.map(async (host) => {
      while (Date.now() < end) {
        await host.call('load');
        calls++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await Promise.all(hosts.map((h) => h.close().catch(() => {})));
  return calls / seconds;
}

const rows = [];
for (let round = 1; round <= ROUNDS; round++) {
  const stdioRun = await stdioP50();
  const { child, url } = await startHttpGateway();
  const one = await session(url, 'latency');
  const sessionRun = await latencies((text) => one.call(text), child.pid);
  await one.close();
  const modern = await stateless(url, 'latency');
  const statelessRun = await latencies((text) => modern.call(text), child.pid);
  const rates = {};
  for (const n of PRINCIPALS) rates[n] = await throughput(url, n);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  rows.push({ stdio: stdioRun, session: sessionRun, stateless: statelessRun, rates });
  const said = (run) => `${run.p50.toFixed(3)} ms (${run.cpu.toFixed(0)} µs CPU)`;
  process.stderr.write(
    `round ${round}: stdio p50 ${said(stdioRun)}, session ${said(sessionRun)}, stateless ${said(statelessRun)}, ` +
      PRINCIPALS.map((n) => `${n} principals ${rates[n].toFixed(0)}/s`).join(', ') +
      '\n',
  );
}
await issuer.stop();

const med = (pick) => median(rows.map(pick));
console.log(
  `HTTP listener vs stdio, ${ROUNDS} rounds, ${CALLS} sequential calls each after ${WARMUP} warm-up calls; load average ${loadavg()[0].toFixed(2)}`,
);
console.log(
  `p50 stdio:              ${med((r) => r.stdio.p50).toFixed(3)} ms; CPU ${med((r) => r.stdio.cpu).toFixed(0)} µs/call`,
);
for (const [what, key] of [
  ['p50 HTTP session:      ', 'session'],
  ['p50 HTTP stateless:    ', 'stateless'],
])
  console.log(
    `${what} ${med((r) => r[key].p50).toFixed(3)} ms  (${med((r) => r[key].p50 / r.stdio.p50).toFixed(2)}x stdio); ` +
      `CPU ${med((r) => r[key].cpu).toFixed(0)} µs/call (${med((r) => r[key].cpu / r.stdio.cpu).toFixed(2)}x stdio)`,
  );
for (const n of PRINCIPALS)
  console.log(
    `throughput, ${String(n).padStart(2)} principals: ${med((r) => r.rates[n]).toFixed(0)} calls/s`,
  );
