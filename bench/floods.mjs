#!/usr/bin/env node
// The gateway under three floods, with what bounds each: peak RSS (VmHWM) of the gateway while a
// host does not read 2,000 answers of 64 KiB; how long it takes to notice an upstream that closed
// its stdout but kept running; and re-lists caused by 300 list_changed notifications.
// Linux only (reads /proc). Needs a build (`npm run build`).
//
//   node bench/floods.mjs [PATH/TO/cli.js]

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = process.argv[2] ?? path.join(ROOT, 'dist/cli.js');
const FIXTURE = path.join(ROOT, 'test/fixtures/fixture-server.mjs');

function peakRssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

function start(extraArgs = []) {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-floods-'));
  const record = path.join(dir, 'record.jsonl');
  const config = path.join(dir, 'proxy.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      gateway: { startupTimeout: '10s', log: { level: 'warn' } },
      servers: {
        up: {
          command: process.execPath,
          args: [FIXTURE, '--tools', 'basic,odd', '--record', record, ...extraArgs],
        },
      },
    }),
  );
  const child = spawn(process.execPath, [cli, '--config', config], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'floods', version: '1' } },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { child, send, stderr: () => stderr, record };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// 1. A host that does not read: 2,000 answers of 64 KiB (125 MiB in all).
{
  const { child, send, stderr } = start();
  // Small requests, large answers: what piles up is what the host does not read.
  for (let id = 1; id <= 2000; id++)
    send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'up__big', arguments: { kib: 64 } } });
  await sleep(5000);
  const peakUnread = peakRssMiB(child.pid);
  let answered = 0;
  const done = new Promise((resolve) =>
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"result"') && ++answered === 2001) resolve();
    }),
  );
  await done;
  console.log(
    `host not reading, 2000 x 64 KiB answers: gateway peak RSS ${peakUnread.toFixed(0)} MiB while unread, ` +
      `${peakRssMiB(child.pid).toFixed(0)} MiB after all ${answered - 1} were read; paused: ${stderr().includes('reading from upstreams is paused')}`,
  );
  child.kill('SIGKILL');
}

// 2. An upstream that closes its stdout and keeps running: time until the gateway says so.
{
  const { child, send, stderr } = start();
  const lines = createInterface({ input: child.stdout });
  await new Promise((resolve) => lines.on('line', (l) => l.includes('"id":0') && resolve()));
  const t0 = performance.now();
  send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'up__close_stdout', arguments: {} } });
  while (!stderr().includes('closed its stdout')) await sleep(5);
  console.log(`upstream closed its stdout: noticed after ${(performance.now() - t0).toFixed(0)} ms`);
  child.kill('SIGKILL');
}

// 3. 300 list_changed notifications at once: re-lists of the upstream's tools.
{
  const { child, send, record } = start();
  const lines = createInterface({ input: child.stdout });
  const answers = new Map();
  lines.on('line', (l) => {
    const m = JSON.parse(l);
    if (m.id !== undefined) answers.get(m.id)?.();
  });
  const call = (id, params) =>
    new Promise((resolve) => {
      answers.set(id, resolve);
      send({ jsonrpc: '2.0', id, method: 'tools/call', params });
    });
  await call(1, { name: 'up__echo', arguments: { text: 'warm' } });
  const lists = () =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"method":"tools/list"')).length;
  const before = lists();
  await call(2, { name: 'up__list_changed_storm', arguments: { count: 300 } });
  await call(3, { name: 'up__echo', arguments: { text: 'after' } });
  await sleep(500);
  console.log(`300 list_changed notifications: ${lists() - before} re-lists`);
  child.kill('SIGKILL');
}
