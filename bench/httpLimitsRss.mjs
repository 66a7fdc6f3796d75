#!/usr/bin/env node
// Peak memory of the gateway under the two HTTP floods that gateway.maxMessageSize must bound:
// a 200 MiB JSON response body, and an SSE event that never ends. It starts the misbehaving
// HTTP fixture on 127.0.0.1 and the built gateway (default maxMessageSize, 32 MiB) in front of
// it, calls each tool once, and reports the gateway's peak RSS (VmHWM) after each call, with
// what the call answered. The endless event gets at most SSE_SECONDS to be cut off.
// Linux only (reads /proc). Needs a build (`npm run build`).
//
//   node bench/httpLimitsRss.mjs [PATH/TO/cli.js]

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHttpFixture } from '../test/fixtures/http-fixture-server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = process.argv[2] ?? path.join(ROOT, 'dist/cli.js');
const SSE_SECONDS = 30;

// The last peak read: sampled while calls run, so a gateway that dies of the flood still reports.
let lastPeakKib = 0;
function samplePeak(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    lastPeakKib = Math.max(lastPeakKib, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
  } catch {
    // Gone: keep the last figure.
  }
}
function peakRssMiB(pid) {
  samplePeak(pid);
  return (lastPeakKib / 1024).toFixed(0);
}

const server = await startHttpFixture();
const dir = mkdtempSync(path.join(tmpdir(), 'warden-bench-'));
const config = path.join(dir, 'proxy.config.json');
writeFileSync(
  config,
  JSON.stringify({ servers: { remote: { url: `http://127.0.0.1:${server.port}/mcp` } } }),
);
const gateway = spawn(process.execPath, [cli, '--config', config], {
  env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  stdio: ['pipe', 'pipe', 'ignore'],
});
const sampler = setInterval(() => samplePeak(gateway.pid), 50);
let exited = '';
gateway.on('exit', (code, signal) => (exited = ` (the gateway exited: ${signal ?? code})`));
gateway.stdin.on('error', () => {});

// Answers by id, read without holding whole lines: only their first bytes are kept.
const waiting = new Map();
let line = '';
let lineBytes = 0;
gateway.stdout.on('data', (chunk) => {
  let start = 0;
  for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
    if (line.length < 400) line += chunk.toString('utf8', start, Math.min(nl, start + 400));
    lineBytes += nl - start;
    const id = Number(/"id":(\d+)/.exec(line)?.[1]);
    waiting.get(id)?.({ head: line.slice(0, 300), bytes: lineBytes });
    waiting.delete(id);
    line = '';
    lineBytes = 0;
    start = nl + 1;
  }
  if (line.length < 400) line += chunk.toString('utf8', start, Math.min(chunk.length, start + 400));
  lineBytes += chunk.length - start;
});

let nextId = 1;
function request(method, params, seconds = 120) {
  const id = nextId++;
  gateway.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      resolve({ head: `no answer within ${seconds} s`, bytes: 0 });
    }, seconds * 1000);
    waiting.set(id, (answer) => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}

await request('initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'bench', version: '1' },
});
gateway.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
await request('tools/list', {});
process.stdout.write(`gateway ${cli}\nafter start-up: peak RSS ${peakRssMiB(gateway.pid)} MiB\n`);
for (const [tool, seconds] of [
  ['huge_json', 120],
  ['endless_sse', SSE_SECONDS],
]) {
  const answer = await request('tools/call', { name: `remote__${tool}`, arguments: {} }, seconds);
  process.stdout.write(
    `${tool}: peak RSS ${peakRssMiB(gateway.pid)} MiB; answer of ${answer.bytes} bytes: ${answer.head.slice(0, 240)}${exited}\n`,
  );
}
clearInterval(sampler);
gateway.kill('SIGKILL');
await server.close();
