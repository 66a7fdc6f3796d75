#!/usr/bin/env node
// What shipping the audit trail costs per call, in-process CPU time of the gateway's side: the
// per-tick audit writer alone, then with a syslog sink and with an OTLP logs sink (each through
// its disk spool) to a receiver in a child process, whose own CPU is not counted.
//
//   node bench/auditShippingCost.mjs [--calls N]
//
// Prints CPU µs per call for each and the ratio to the writer alone.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { values } = parseArgs({ options: { calls: { type: 'string' } } });
const calls = Number(values.calls ?? 4000);
const load = (file) => import(pathToFileURL(path.join(ROOT, 'dist', file)).href);
const { openAuditLog } = await load('features/audit/auditWriter.js');
const { openShipper } = await load('features/audit/shipping/shipper.js');

// One receiver process for both protocols: OTLP/HTTP answers 200, TCP reads and drops.
const receiver = spawn(
  process.execPath,
  [
    '-e',
    `const http=require('http'),net=require('net');
     const h=http.createServer((q,s)=>{q.resume();q.on('end',()=>s.end('{}'))}).listen(0,'127.0.0.1',()=>{
       const t=net.createServer((c)=>c.resume()).listen(0,'127.0.0.1',()=>{
         console.log(h.address().port+' '+t.address().port)})})`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const [httpPort, tcpPort] = await new Promise((resolve) =>
  receiver.stdout.once('data', (d) => resolve(String(d).trim().split(' ').map(Number))),
);

const logger = { info() {}, warn() {}, error() {}, debug() {} };
const event = (i) => ({
  type: 'call',
  session: 'bench-session',
  tool: 'up__echo',
  server: 'up',
  upstreamTool: 'echo',
  args: { text: `call ${i}`, path: '/home/ada/projects/app/src/index.ts' },
  decision: { effect: 'allow', rule: null },
  outcome: 'ok',
  ms: 1.234,
  resultBytes: 120,
});

async function run(sink) {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-bench-ship-'));
  const file = path.join(dir, 'audit.jsonl');
  const config = { file, onFailure: 'continue', sinks: sink === undefined ? [] : [sink] };
  const shipper = sink === undefined ? undefined : await openShipper(config, logger, { version: 'bench' });
  const log = await openAuditLog({
    file,
    onFailure: 'continue',
    writes: 'per-tick',
    ...(shipper && { onWritten: (lines) => shipper.accept(lines) }),
  });
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    log.append(event(i));
    await new Promise((resolve) => setImmediate(resolve));
  }
  log.close();
  if (shipper) await shipper.drain(30_000);
  const used = process.cpuUsage(start);
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / calls;
}

const common = { required: false, format: 'warden', spoolMaxBytes: 64 * 1024 * 1024 };
const syslog = {
  ...common,
  name: 'syslog',
  type: 'syslog',
  host: '127.0.0.1',
  port: tcpPort,
  tls: false,
  facility: 13,
  appName: 'mcp-warden',
};
const otlp = {
  ...common,
  name: 'otlp',
  type: 'otlp',
  endpoint: `http://127.0.0.1:${httpPort}/v1/logs`,
  headers: {},
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = { 'file only': [], 'file + syslog sink': [], 'file + OTLP logs sink': [] };
for (let round = 0; round < 5; round++) {
  rows['file only'].push(await run(undefined));
  rows['file + syslog sink'].push(await run(syslog));
  rows['file + OTLP logs sink'].push(await run(otlp));
}
receiver.kill();
const base = median(rows['file only']);
console.log(`${calls} calls per run, medians of 5 runs, CPU of the gateway's process (receiver excluded)`);
for (const [name, runs] of Object.entries(rows)) {
  const cpu = median(runs);
  console.log(`${name.padEnd(24)} cpu µs/call ${cpu.toFixed(1).padStart(7)}   x${(cpu / base).toFixed(2)}`);
}
