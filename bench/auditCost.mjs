#!/usr/bin/env node
// What the audit trail costs per call, measured in-process (CPU time, so a busy neighbour on a
// shared machine skews it less than wall-clock latency through processes):
//
//   redact      redacting a call record's fields (RecordFields.members: redaction and JSON),
//               for arguments with no secret in them (strings of paths, prose, code, numbers);
//               and a call's two records one after the other (`call_start` then `call`, the
//               same arguments object), as a gateway writes them for sequential calls
//   write-ahead the per-tick audit writer, one call per turn of the event loop, as in the
//               gateway: the `call` record alone (onFailure: continue), and a `call_start`
//               written ahead and awaited before it (onFailure: block)
//   burst       the audit stage and the writer together (onFailure: block, redaction on), calls
//               arriving 16 per turn of the event loop, as they do at 32 in flight
//   least       not our code: the least any trail with the same guarantees must do per call at
//               16 calls per turn, written as plainly as Node allows: two records per call
//               (JSON.stringify), each chained with SHA-256, written in two batches per turn
//               (the write-ahead records, then the answers'), the file's name checked before
//               each write. No redaction, no canonical field order, no promises, no stage
//
//   node bench/auditCost.mjs [--dist DIR] [--calls N]
//
// --dist: another build (e.g. of the commit before a change) to compare with; default ./dist.

import { hash } from 'node:crypto';
import { mkdtempSync, openSync, closeSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { values } = parseArgs({ options: { dist: { type: 'string' }, calls: { type: 'string' } } });
const dist = path.resolve(values.dist ?? path.join(ROOT, 'dist'));
const calls = Number(values.calls ?? 20000);
const load = (file) => import(pathToFileURL(path.join(dist, file)).href);

const { createRedactor } = await load('features/audit/redact.js');
const { RecordFields } = await load('features/audit/recordFields.js');
const { openAuditLog } = await load('features/audit/auditWriter.js');
const { createAuditStage } = await load('features/audit/stage.js');

const argsSets = [
  { path: '/home/ada/projects/app/src/index.ts', head: 40 },
  { query: 'SELECT id, name FROM users WHERE created_at > $1 ORDER BY id LIMIT 20', params: ['2025-01-01'] },
  { text: 'Summarise the following meeting notes: the team agreed to ship on Friday after review.' },
  { owner: 'modelcontextprotocol', repo: 'servers', issue_number: 1234, labels: ['bug', 'p1'] },
  { x: 1, y: 2, zoom: 3.5, visible: true },
];

function callEvent(i) {
  return {
    type: 'call',
    session: 'bench-session',
    client: { name: 'bench', version: '1.0.0' },
    tool: 'up__echo',
    server: 'up',
    upstreamTool: 'echo',
    args: argsSets[i % argsSets.length],
    decision: { effect: 'allow', rule: null },
    outcome: 'ok',
    ms: 1.234,
    repairs: [],
    resultBytes: 120,
  };
}

/** The `call_start` record of a call event, with the members the gateway's stage gives it. */
function startEvent(event) {
  return {
    type: 'call_start',
    session: event.session,
    principal: undefined,
    call: event.call,
    tool: event.tool,
    server: event.server,
    upstreamTool: event.upstreamTool,
    args: event.args,
  };
}

function cpuMicros(fn, n) {
  for (let i = 0; i < Math.min(n, 2000); i++) fn(i); // warm-up
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) fn(i);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const fields = new RecordFields(createRedactor());
const redactRuns = [];
for (let round = 0; round < 7; round++)
  redactRuns.push(cpuMicros((i) => fields.members(callEvent(i)), calls));
const pairFields = new RecordFields(createRedactor());
const pairRuns = [];
for (let round = 0; round < 7; round++)
  pairRuns.push(
    cpuMicros((i) => {
      const event = { ...callEvent(i), call: i + 1 };
      pairFields.members(startEvent(event));
      pairFields.members(event);
    }, calls),
  );
const redactor = createRedactor();
const textRuns = [];
const prose = 'The build on 2025-06-18 passed; see /var/log/build.log and commit 3f2c1a9e for details.';
for (let round = 0; round < 7; round++) textRuns.push(cpuMicros(() => redactor.redactText(prose), calls));

async function writerRun(mode) {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-bench-audit-'));
  const log = await openAuditLog({
    file: path.join(dir, 'audit.jsonl'),
    onFailure: mode === 'ahead' ? 'block' : 'continue',
    writes: 'per-tick',
  });
  const n = Math.floor(calls / 4);
  const start = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const event = callEvent(i);
    if (mode === 'ahead') {
      await log.writeAhead({
        type: 'call_start',
        session: event.session,
        call: i + 1,
        tool: event.tool,
        server: event.server,
        upstreamTool: event.upstreamTool,
        args: event.args,
      });
    }
    log.append(mode === 'ahead' ? { ...event, call: i + 1 } : event);
    // The next call arrives in a later turn, as calls from a host do.
    await new Promise((resolve) => setImmediate(resolve));
  }
  const wall = ((performance.now() - t0) * 1000) / n;
  const used = process.cpuUsage(start);
  log.close();
  rmSync(dir, { recursive: true, force: true });
  return { cpu: (used.user + used.system) / n, wall };
}

/** CPU per call of the audit stage and writer, `perTurn` calls arriving in each turn. */
async function burstRun(perTurn) {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-bench-audit-'));
  const log = await openAuditLog({
    file: path.join(dir, 'audit.jsonl'),
    onFailure: 'block',
    writes: 'per-tick',
    redactor: createRedactor(),
  });
  const quiet = () => {};
  const stage = createAuditStage({
    log,
    config: { onFailure: 'block', logResults: false },
    session: 'bench-session',
    client: () => ({ name: 'bench', version: '1.0.0' }),
    logger: { error: quiet, warn: quiet, info: quiet, debug: quiet },
  });
  const text = '{"content":[{"type":"text","text":"hello"}]}';
  const outcome = { result: JSON.parse(text), raw: { text } };
  const forward = () => Promise.resolve(outcome);
  const call = (i) =>
    stage(
      {
        kind: 'tools/call',
        direction: 'upstream',
        server: 'up',
        target: 'echo',
        exposedName: 'up__echo',
        arguments: argsSets[i % argsSets.length],
        record: { decision: { effect: 'allow', rule: 'bench' }, repairs: [] },
      },
      forward,
    );
  const burst = async (n) => {
    for (let i = 0; i < n; i += perTurn) {
      const turn = [];
      for (let j = 0; j < perTurn; j++) turn.push(call(i + j));
      await Promise.all(turn);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await burst(2000);
  const start = process.cpuUsage();
  await burst(calls);
  const used = process.cpuUsage(start);
  log.close();
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / calls;
}

/** CPU per call of the least a trail with the audit trail's guarantees can do (see the top). */
function leastRun(perTurn) {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-bench-audit-'));
  const file = path.join(dir, 'audit.jsonl');
  const fd = openSync(file, 'a');
  let previous = '0'.repeat(64);
  const seal = (record) => {
    const text = JSON.stringify(record);
    previous = hash('sha256', previous + text);
    return `${text.slice(0, -1)},"hash":"${previous}"}\n`;
  };
  const turn = (first) => {
    const ts = new Date().toISOString();
    let ahead = '';
    for (let j = 0; j < perTurn; j++) {
      const event = callEvent(first + j);
      ahead += seal({ ts, ...startEvent({ ...event, call: first + j }) });
    }
    statSync(file);
    writeSync(fd, ahead);
    let answers = '';
    for (let j = 0; j < perTurn; j++) answers += seal({ ts, ...callEvent(first + j), call: first + j });
    statSync(file);
    writeSync(fd, answers);
  };
  for (let i = 0; i < 2000; i += perTurn) turn(i);
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i += perTurn) turn(i);
  const used = process.cpuUsage(start);
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / calls;
}
const least = [];
for (let round = 0; round < 5; round++) least.push(leastRun(16));

const bursts = [];
for (let round = 0; round < 5; round++) bursts.push(await burstRun(16));

const plain = [];
const ahead = [];
// A build from before write-ahead records has no writeAhead: only the plain run is measured.
const canWriteAhead =
  typeof (
    await openAuditLog({ file: path.join(tmpdir(), 'warden-bench-probe', 'a.jsonl'), onFailure: 'continue' })
  ).writeAhead === 'function';
rmSync(path.join(tmpdir(), 'warden-bench-probe'), { recursive: true, force: true });
for (let round = 0; round < 5; round++) {
  plain.push(await writerRun('plain'));
  if (canWriteAhead) ahead.push(await writerRun('ahead'));
}
const fmt = (x) => x.toFixed(2).padStart(7);
console.log(`dist ${dist}, ${calls} calls per run, medians`);
console.log(`redact+JSON of a call record, no secrets   cpu µs/record ${fmt(median(redactRuns))}`);
console.log(`redact+JSON of a call's call_start + call     cpu µs/call ${fmt(median(pairRuns))}`);
console.log(`redactText of one line of prose            cpu µs/string ${fmt(median(textRuns))}`);
console.log(
  `audit writer, call record only              cpu µs/call ${fmt(median(plain.map((r) => r.cpu)))}  wall µs/call ${fmt(median(plain.map((r) => r.wall)))}`,
);
console.log(`audit stage + writer, 16 calls per turn      cpu µs/call ${fmt(median(bursts))}`);
console.log(`least the guarantees need, 16 per turn      cpu µs/call ${fmt(median(least))}`);
if (canWriteAhead) {
  console.log(
    `audit writer, call_start ahead + call       cpu µs/call ${fmt(median(ahead.map((r) => r.cpu)))}  wall µs/call ${fmt(median(ahead.map((r) => r.wall)))}`,
  );
}
