#!/usr/bin/env node
// An HTTP call against a stdio call, and against the SDK's own Streamable HTTP server, in one
// run: the built gateway serving the bench's fixture server, driven by equally lean clients on
// every side (no SDK client: its cost would hide the servers').
//
//   node bench/http.mjs [--rounds N] [--calls N] [--warmup N] [--seconds S] [--principals N]
//                       [--concurrency N] [--cli FILE]
//                       [--modes stdio,session,stateless,stdio-floor,http-floor,stdio-floor-forward,http-floor-forward,sdk]
//                       [--profile DIR] [--callgrind CALLS]
//
// --profile DIR runs each gateway under `node --cpu-prof` and leaves its profiles in DIR (read
// them with bench/cpuprofile-top.mjs); --modes measures only the modes named. --callgrind CALLS
// runs each served process under valgrind and counts its instructions per call over CALLS
// sequential calls after the warm-up (no throughput then): the figure to compare two builds
// with (--cli) on a machine whose load moves every timing. It is given for every thread and for
// the main thread alone, where the JavaScript runs (the other threads are mostly V8's compiler,
// whose share moves from run to run with when each function gets optimised).
//
// Eight ways to make the same echo call, each measured in every round, in an order rotated per
// round, each by a process of its own started for it:
// - stdio: the gateway over stdio (the bench's lean JSON-RPC client);
// - session: the gateway's listener, a 2025-11-25 Streamable HTTP session per principal;
// - stateless: the gateway's listener, stateless 2026-07-28 POSTs (each carries its envelope);
// - stdio-floor and http-floor: no gateway and no upstream; the least stdio peer and the least
//   node:http server that answer the call (bench/lib/leastPeers.mjs), driven by the same
//   clients as stdio and session: what a loopback HTTP round trip costs against a pipe's in
//   Node before anyone does any work;
// - stdio-floor-forward and http-floor-forward: no gateway, the same upstream; the JSON floor
//   (bench/floor.mjs) and the least node:http server that forwards each call to the upstream
//   over stdio (leastPeers.mjs --http-forward): parse, an id of its own, forward, match the
//   answer, write it back. What any gateway over each transport pays at the least;
// - sdk: no gateway; a small SDK McpServer with the same tool behind the SDK's
//   StreamableHTTPServerTransport (one session per principal), the cost of Streamable HTTP
//   itself in Node.
// For each: the p50 and p95 of sequential calls after --warmup calls of its own (2,000 by
// default: fewer leave the code in V8's lower tiers), the serving process's CPU per call (every
// thread's run time from /proc, bench/lib/proc.mjs; an upstream's is not counted), and the
// throughput of --principals principals (64) with one call in flight each, at most
// --concurrency (64) in flight in all, for S seconds. On stdio there is one host, so its
// throughput is the same number of calls in flight on one connection.
// The gateway runs with `auth:` (RS256 tokens from a real issuer, oauth2-mock-server, on
// loopback), a different token per principal, so the per-principal paths (token check, the
// principal's session bounds and tool view) are on the path; the SDK server checks no token.
// The upstream is `shared: true`: the figures are the listener's and the pipeline's, not the
// cost of one server process per principal (bench/principalMemory.mjs reports that).
//
// Goals (PASS/FAIL): the p50 of an HTTP call (session and stateless) ≤ 1.5× the same gateway's
// call over stdio, and ≥ 2,000 calls/s with 64 principals over HTTP (session and stateless).
// Reported beside the goal, as information: each HTTP mode's p50, CPU per call and (with
// --callgrind) instructions per call against the HTTP forwarding floor (which, like the gateway,
// hands the call to an upstream, but does none of the gateway's per-call work), stdio and the
// answering HTTP floor; each floor over HTTP against the same floor over stdio; and the
// gateway's own time per call over HTTP (its p50 less an HTTP floor's) against over stdio (less
// the matching stdio floor's): what the gateway's HTTP path adds over its stdio path.
// Each figure is the median over the rounds; ratios are medians of each round's ratio. The load
// average at the start and the end is printed: on a shared machine it says how far to trust the
// run.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deadline, RpcChild } from './lib/client.mjs';
import { cpuMicros } from './lib/proc.mjs';
import { recordPrices, verdict } from './lib/prices.mjs';
import { dumpThreadCounts, underCallgrind, zeroCounts } from './lib/callgrind.mjs';
import { median, quantile, rotate } from './lib/stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = path.join(ROOT, 'bench/fixture/server.mjs');
const LEAST_PEERS = path.join(ROOT, 'bench/lib/leastPeers.mjs');
const FLOOR = path.join(ROOT, 'bench/floor.mjs');
const AUDIENCE = 'https://warden.bench/mcp';
const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const P50_GOAL = 1.5;
const THROUGHPUT_GOAL = 2000;

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}

/** The served processes still running: a failed run must not leave them behind (least of all under valgrind). */
const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

if (process.argv.includes('--sdk-server')) await serveSdk();
else await main();

/** The SDK's own Streamable HTTP server with the fixture's echo tool as `up__echo`; prints its URL. */
async function serveSdk() {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StreamableHTTPServerTransport } =
    await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { z } = await import('zod');
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text === '' ? undefined : JSON.parse(text);
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (transport === undefined) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
        onsessionclosed: (sid) => sessions.delete(sid),
      });
      const server = new McpServer({ name: 'sdk-echo', version: '1.0.0' });
      server.registerTool('up__echo', { inputSchema: { text: z.string() } }, ({ text: said }) => ({
        content: [{ type: 'text', text: said }],
      }));
      await server.connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`listening on http://127.0.0.1:${http.address().port}/mcp\n`);
}

async function main() {
  const CLI = path.resolve(flag('cli', path.join(ROOT, 'dist/cli.js')));
  const ROUNDS = Number(flag('rounds', 3));
  const WARMUP = Number(flag('warmup', 2000));
  const CALLS = Number(flag('calls', 1000));
  const SECONDS = Number(flag('seconds', 3));
  const CALLGRIND = flag('callgrind', undefined) === undefined ? undefined : Number(flag('callgrind'));
  // Under callgrind a process runs some fifty times slower: no throughput, so no principals.
  const PRINCIPALS = CALLGRIND === undefined ? Number(flag('principals', 64)) : 0;
  const CONCURRENCY = Number(flag('concurrency', 64));
  const ONLY = flag('modes', undefined)?.split(',');
  const PROFILE = flag('profile', undefined);
  const profiling = PROFILE === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.resolve(PROFILE)}`];
  const startWithin = CALLGRIND === undefined ? 30_000 : 600_000;
  let dumps = 0;
  /** How to start a served process running `args` under node: under callgrind with --callgrind. */
  function node(args) {
    const callgrindOut = path.join(dir, `serving-${++dumps}.callgrind`);
    return CALLGRIND === undefined
      ? { command: process.execPath, args, callgrindOut }
      : { ...underCallgrind(callgrindOut, process.execPath, args, { separateThreads: true }), callgrindOut };
  }
  const loadAtStart = loadavg()[0];

  const { OAuth2Server } = await import('oauth2-mock-server');
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
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', MCP_WARDEN_MANAGED_DIR: dir };
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
      auth: { issuer: issuer.issuer.url, audience: AUDIENCE, jwksUri: `${issuer.issuer.url}/jwks` },
      listen: { http: '127.0.0.1:0', maxSessions: 1000 },
      servers: { up: server },
    }),
  );

  // One keep-alive pool for every HTTP client, as a host's HTTP library would keep one.
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY + 4 });

  /** A POST of `body` to `url`; resolves with its status, headers and text. */
  function post(url, headers, body) {
    return new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
        res.on('error', reject);
      });
      req.on('error', (error) => {
        // A kept connection the server closed as idle just as this request went out on it (a
        // slow server, under callgrind, makes this likely): sent again.
        if (req.reusedSocket && error.code === 'ECONNRESET') post(url, headers, body).then(resolve, reject);
        else reject(error);
      });
      req.end(body);
    });
  }

  /** The one JSON-RPC answer of a POST, sent as JSON or as an SSE stream. */
  function answerOf(response) {
    if (!(response.headers['content-type'] ?? '').includes('text/event-stream'))
      return JSON.parse(response.text);
    return response.text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)))
      .find((m) => m.id !== undefined);
  }

  /**
   * Calls the echo tool (`up__echo`, or `tool`) with a text, one POST each (with `meta` as the
   * params' `_meta` when given).
   */
  function echoCaller(url, headers, what, { meta, tool = 'up__echo' } = {}) {
    let id = 1;
    return async (text) => {
      const params = { name: tool, arguments: { text }, ...(meta !== undefined && { _meta: meta }) };
      const answer = answerOf(
        await post(url, headers, JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params })),
      );
      if (answer?.result?.content?.[0]?.text !== text)
        throw new Error(`${what} call failed: ${JSON.stringify(answer)}`);
    };
  }

  /** One 2025-11-25 session of `subject` (a bearer token when `auth`), with lean calls. */
  async function session(url, subject, auth) {
    const base = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(auth && { Authorization: `Bearer ${await token(subject)}` }),
    };
    const init = await post(
      url,
      base,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: subject, version: '1' } },
      }),
    );
    if (answerOf(init)?.result === undefined)
      throw new Error(`initialize failed: ${init.status} ${init.text}`);
    const headers = {
      ...base,
      'Mcp-Session-Id': init.headers['mcp-session-id'],
      'Mcp-Protocol-Version': LEGACY,
    };
    await post(url, headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    return echoCaller(url, headers, 'session');
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
    return echoCaller(url, headers, 'stateless', { meta });
  }

  /**
   * Under callgrind the gateway's first fetch of the issuer's keys can outlast its own timeout,
   * and it answers 503 until a fetch succeeds: asks with a token until it does (at most 30 times).
   */
  async function keysFetched(url) {
    if (CALLGRIND === undefined) return;
    const headers = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${await token('keys')}`,
    };
    for (let attempt = 0; attempt < 30; attempt++) {
      const { status } = await post(
        url,
        headers,
        JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      );
      if (status !== 503) return;
    }
    throw new Error('the gateway under callgrind never fetched the issuer keys');
  }

  /** Starts `args` under node and waits for the URL it prints (on stdout or stderr). */
  async function startListening(args, label) {
    const started = node(args);
    const child = spawn(started.command, started.args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    child.once('exit', () => running.delete(child));
    child.callgrindOut = started.callgrindOut;
    let said = '';
    const url = await deadline(
      new Promise((resolve, reject) => {
        const look = (chunk) => {
          said += chunk;
          const found = /listening on (http:\/\/\S+\/mcp)/.exec(said);
          if (found) resolve(found[1]);
        };
        child.stdout.on('data', look);
        child.stderr.on('data', look);
        child.once('exit', () => reject(new Error(`${label} exited:\n${said}`)));
      }),
      startWithin,
      `${label} start`,
    );
    // Keep reading, so a chatty process never blocks on a full pipe.
    child.stdout.resume();
    child.stderr.resume();
    if (args.includes(httpConfig)) await keysFetched(url);
    return { child, url };
  }

  async function stop(child) {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }

  /**
   * p50 and p95 in ms of CALLS sequential calls after WARMUP, and `pid`'s CPU µs per call; with
   * --callgrind, the instructions per call of that many calls as well (`callgrindOut` is where
   * the process dumps them).
   */
  async function latencies(call, pid, callgrindOut) {
    for (let i = 0; i < WARMUP; i++) await call(`warm ${i}`);
    let instructions = Number.NaN;
    let mainInstructions = Number.NaN;
    if (CALLGRIND !== undefined) {
      zeroCounts(pid);
      for (let i = 0; i < CALLGRIND; i++) await call(`counted ${i}`);
      const { all, main } = dumpThreadCounts(pid, callgrindOut);
      instructions = all / CALLGRIND;
      mainInstructions = main / CALLGRIND;
    }
    const times = [];
    const cpuBefore = cpuMicros(pid);
    for (let i = 0; i < CALLS; i++) {
      const start = process.hrtime.bigint();
      await call(`call ${i}`);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    return {
      p50: median(times),
      p95: quantile(times, 0.95),
      cpu: (cpuMicros(pid) - cpuBefore) / CALLS,
      instructions,
      mainInstructions,
    };
  }

  /** Calls per second of `callers` (one per principal), CONCURRENCY in flight, for SECONDS. */
  async function throughput(callers) {
    if (callers.length === 0) return Number.NaN;
    for (const call of callers) await call('warm');
    let calls = 0;
    let next = 0;
    const end = Date.now() + SECONDS * 1000;
    const start = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, callers.length) }, async () => {
        while (Date.now() < end) {
          await callers[next++ % callers.length](`load ${calls}`);
          calls++;
        }
      }),
    );
    return calls / (Number(process.hrtime.bigint() - start) / 1e9);
  }

  /** Calls the echo tool (`up__echo`, or `tool`) over `child`'s stdio. */
  function stdioCaller(child, what, tool = 'up__echo') {
    return async (text) => {
      const result = await child.request('tools/call', JSON.stringify({ name: tool, arguments: { text } }));
      if (result?.content?.[0]?.text !== text)
        throw new Error(`${what} call failed: ${JSON.stringify(result)}`);
    };
  }

  /** Measures `call` over a stdio child started as `started` (see node()), then closes it. */
  async function overStdio(child, started, call) {
    running.add(child.child);
    const measured = await latencies(call, child.pid, started.callgrindOut);
    const rate = await throughput(Array.from({ length: PRINCIPALS }, () => call));
    await child.close();
    return { ...measured, rate };
  }

  /** Measures an HTTP floor started with `args`, calling `tool` on it, then stops it. */
  async function overHttpFloor(args, label, tool) {
    const { child, url } = await startListening(args, label);
    const plain = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const caller = () => echoCaller(url, plain, label, { tool });
    const measured = await latencies(caller(), child.pid, child.callgrindOut);
    const rate = await throughput(Array.from({ length: PRINCIPALS }, caller));
    await stop(child);
    return { ...measured, rate };
  }

  const principals = (prefix) => Array.from({ length: PRINCIPALS }, (_, i) => `${prefix}-${i}`);

  const MODES = {
    async stdio() {
      const started = node([...profiling, CLI, '--config', stdioConfig]);
      const child = new RpcChild({ label: 'stdio gateway', ...started, env });
      running.add(child.child);
      await deadline(
        child.request(
          'initialize',
          JSON.stringify({
            protocolVersion: LEGACY,
            capabilities: {},
            clientInfo: { name: 'b', version: '1' },
          }),
        ),
        startWithin,
        'stdio initialize',
      );
      child.notify('notifications/initialized');
      return overStdio(child, started, stdioCaller(child, 'stdio'));
    },
    async session() {
      const { child, url } = await startListening(
        [...profiling, CLI, '--config', httpConfig, '--http', '127.0.0.1:0'],
        'HTTP gateway',
      );
      const measured = await latencies(await session(url, 'latency', true), child.pid, child.callgrindOut);
      const callers = await Promise.all(principals('s').map((p) => session(url, p, true)));
      const rate = await throughput(callers);
      await stop(child);
      return { ...measured, rate };
    },
    async stateless() {
      const { child, url } = await startListening(
        [...profiling, CLI, '--config', httpConfig, '--http', '127.0.0.1:0'],
        'HTTP gateway',
      );
      const measured = await latencies(await stateless(url, 'latency'), child.pid, child.callgrindOut);
      const callers = await Promise.all(principals('m').map((p) => stateless(url, p)));
      const rate = await throughput(callers);
      await stop(child);
      return { ...measured, rate };
    },
    // The floors that answer: the least stdio peer and the least HTTP server answering the
    // same call (bench/lib/leastPeers.mjs), driven by the same clients as stdio and the session.
    async 'stdio-floor'() {
      const started = node([LEAST_PEERS, '--stdio']);
      const child = new RpcChild({ label: 'stdio floor', ...started, env });
      return overStdio(child, started, stdioCaller(child, 'stdio floor'));
    },
    async 'http-floor'() {
      return overHttpFloor([LEAST_PEERS, '--http'], 'HTTP floor', 'up__echo');
    },
    // The floors that forward, as the gateway does: the JSON floor (bench/floor.mjs) and the least
    // HTTP server that forwards (leastPeers.mjs --http-forward), each in front of the same
    // fixture server over stdio. They namespace nothing, so their callers name the fixture's
    // own tool.
    async 'stdio-floor-forward'() {
      const started = node([FLOOR, process.execPath, FIXTURE]);
      const child = new RpcChild({ label: 'stdio forwarding floor', ...started, env });
      return overStdio(child, started, stdioCaller(child, 'stdio forwarding floor', 'echo'));
    },
    async 'http-floor-forward'() {
      return overHttpFloor(
        [LEAST_PEERS, '--http-forward', process.execPath, FIXTURE],
        'HTTP forwarding floor',
        'echo',
      );
    },
    async sdk() {
      const { child, url } = await startListening(
        [fileURLToPath(import.meta.url), '--sdk-server'],
        'SDK server',
      );
      const measured = await latencies(await session(url, 'latency', false), child.pid, child.callgrindOut);
      const callers = await Promise.all(principals('d').map((p) => session(url, p, false)));
      const rate = await throughput(callers);
      await stop(child);
      return { ...measured, rate };
    },
  };

  if (ONLY !== undefined) for (const name of Object.keys(MODES)) if (!ONLY.includes(name)) delete MODES[name];
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const row = {};
    for (const name of rotate(Object.keys(MODES), round)) row[name] = await MODES[name]();
    rounds.push(row);
    process.stderr.write(
      `round ${round + 1}: ` +
        Object.entries(row)
          .map(
            ([name, r]) =>
              `${name} p50 ${r.p50.toFixed(3)} ms, ${r.cpu.toFixed(0)} µs CPU, ${r.rate.toFixed(0)}/s` +
              (CALLGRIND === undefined
                ? ''
                : `, ${r.instructions.toFixed(0)} instructions (${r.mainInstructions.toFixed(0)} main thread)`),
          )
          .join('; ') +
        '\n',
    );
  }
  await issuer.stop();
  agent.destroy();

  const med = (pick) => median(rounds.map(pick));
  const fixed = (n, digits) =>
    n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  /** The median over the rounds of mode `name`'s `key` divided by mode `by`'s (NaN without it). */
  const ratio = (name, by, key = 'p50') => med((r) => r[name][key] / r[by]?.[key]);
  console.log(
    `HTTP against stdio and the SDK's own HTTP server: ${ROUNDS} rounds, ${CALLS} sequential calls after ${WARMUP} warm-up calls per mode; ` +
      `${PRINCIPALS} principals, ${CONCURRENCY} in flight, ${SECONDS} s; load average ${loadAtStart.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end`,
  );
  console.log(
    '| mode | p50 | p95 | CPU per call | instructions per call | main thread | throughput | p50 ÷ stdio | p50 ÷ http-floor | p50 ÷ http-floor-forward | p50 ÷ sdk | throughput ÷ sdk |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  // Counted only under --callgrind: a dash otherwise, not NaN.
  const count = (name, key) =>
    CALLGRIND === undefined
      ? '–'
      : fixed(
          med((r) => r[name][key]),
          0,
        );
  for (const name of Object.keys(MODES)) {
    const cells = [
      `${fixed(
        med((r) => r[name].p50),
        3,
      )} ms`,
      `${fixed(
        med((r) => r[name].p95),
        3,
      )} ms`,
      `${fixed(
        med((r) => r[name].cpu),
        0,
      )} µs`,
      count(name, 'instructions'),
      count(name, 'mainInstructions'),
      `${fixed(
        med((r) => r[name].rate),
        0,
      )} calls/s`,
      `${fixed(ratio(name, 'stdio'), 2)}×`,
      `${fixed(ratio(name, 'http-floor'), 2)}×`,
      `${fixed(ratio(name, 'http-floor-forward'), 2)}×`,
      `${fixed(ratio(name, 'sdk'), 2)}×`,
      `${fixed(ratio(name, 'sdk', 'rate'), 2)}×`,
    ];
    console.log(`| ${name} | ${cells.join(' | ')} |`);
  }
  let failed = false;
  /** The goals' figures, for the price list (bench/priceList.mjs). */
  const prices = [];
  /** Prints and records `price`, judged when it has a goal. */
  const judge = (price) => {
    const pass = verdict(price);
    failed ||= pass === false;
    const digits = price.unit === '×' ? 2 : 0;
    const goal =
      price.atMost !== undefined
        ? `goal ≤ ${price.atMost}`
        : price.atLeast !== undefined
          ? `goal ≥ ${price.atLeast}`
          : price.note;
    console.log(
      `${pass === undefined ? 'REPORTED' : pass ? 'PASS' : 'FAIL'}  ${price.what}: ${fixed(price.value, digits)}${price.unit === '×' ? '×' : ` ${price.unit}`}${goal === undefined ? '' : ` (${goal})`}`,
    );
    prices.push(price);
  };
  /**
   * `what` (mode `name`) against mode `by`, called `against`: p50 (judged ≤ 1.5× when `goal`),
   * CPU per call and, under --callgrind, instructions per call, every thread's and the main
   * thread's. Nothing when either mode was not measured.
   */
  const compare = (what, name, by, against, { goal = false, note } = {}) => {
    if (!(name in MODES) || !(by in MODES)) return;
    judge({
      what: `${what}: p50 ÷ ${against}`,
      value: ratio(name, by),
      unit: '×',
      ...(goal ? { atMost: P50_GOAL } : note === undefined ? {} : { note }),
    });
    judge({ what: `${what}: CPU per call ÷ ${against}`, value: ratio(name, by, 'cpu'), unit: '×' });
    if (CALLGRIND === undefined) return;
    judge({
      what: `${what}: instructions per call ÷ ${against}`,
      value: ratio(name, by, 'instructions'),
      unit: '×',
    });
    judge({
      what: `${what}: main-thread instructions per call ÷ ${against}`,
      value: ratio(name, by, 'mainInstructions'),
      unit: '×',
    });
  };
  // What HTTP costs in Node before any gateway work, answering and forwarding: information.
  compare('HTTP floor', 'http-floor', 'stdio-floor', 'stdio floor');
  compare('HTTP forwarding floor', 'http-floor-forward', 'stdio-floor-forward', 'stdio forwarding floor');
  // The goal compares the same gateway, the same pipeline and the same upstream over the two
  // transports: what a host pays for reaching the gateway over HTTP. The floors beside it say how
  // much of that any Node server pays (HTTP against a pipe) and how far the gateway's per-call
  // work is from a forwarder that does none of it.
  const judged = ['session', 'stateless'].filter((name) => name in MODES);
  /** The gateway's own `key` per call (a floor's taken off) over HTTP ÷ over stdio. */
  const bothOwn = (name, httpFloor, stdioFloor, key = 'p50') =>
    [name, 'stdio', httpFloor, stdioFloor].every((mode) => mode in MODES)
      ? med((r) => (r[name][key] - r[httpFloor][key]) / (r.stdio[key] - r[stdioFloor][key]))
      : Number.NaN;
  for (const name of judged) {
    compare(`HTTP ${name}`, name, 'stdio', 'stdio', { goal: true });
    compare(`HTTP ${name}`, name, 'http-floor-forward', 'HTTP forwarding floor', { note: 'information' });
    compare(`HTTP ${name}`, name, 'http-floor', 'HTTP floor', { note: 'information' });
    // The gateway's own time per call (its p50 less a floor's) over HTTP against over stdio.
    for (const [httpFloor, stdioFloor, which] of [
      ['http-floor-forward', 'stdio-floor-forward', 'over the forwarding floors'],
      ['http-floor', 'stdio-floor', 'over the answering floors'],
    ]) {
      const value = bothOwn(name, httpFloor, stdioFloor);
      if (!Number.isNaN(value))
        judge({ what: `HTTP ${name}: gateway's own time ${which}, HTTP ÷ stdio`, value, unit: '×' });
    }
    // Load-free: the main thread's instructions the gateway adds to the forwarding floor of
    // each transport, over HTTP against over stdio (1× would be an HTTP path that adds nothing
    // of its own to what the least forwarding HTTP server pays).
    const ownInstructions = bothOwn(name, 'http-floor-forward', 'stdio-floor-forward', 'mainInstructions');
    if (CALLGRIND !== undefined && !Number.isNaN(ownInstructions))
      judge({
        what: `HTTP ${name}: gateway's own main-thread instructions over the forwarding floors, HTTP ÷ stdio`,
        value: ownInstructions,
        unit: '×',
      });
  }
  for (const name of judged)
    judge({
      what: `HTTP ${name}: throughput, ${PRINCIPALS} principals`,
      value: med((r) => r[name].rate),
      unit: 'calls/s',
      atLeast: THROUGHPUT_GOAL,
    });
  recordPrices('http', prices);
  process.exitCode = failed ? 1 : 0;
}
