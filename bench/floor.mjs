#!/usr/bin/env node
// The "JSON floor": the least a gateway that reads each message can do. It starts the command
// it is given and, both ways, splits newline-delimited JSON-RPC into lines, parses each line,
// gives requests ids of its own (and answers back their host ids), serialises the message again
// and writes what one turn of the event loop produced in one write. No validation, no
// namespacing, no pipeline: nothing a real gateway could leave out is left in. What this costs
// beyond the byte pipe is the cost of handling messages in Node at all on this machine, so
// it shows how far below any message-reading gateway a ratio to the byte pipe can go.
//
// With FLOOR_MODERN=1 in its environment it is the floor for a host of MCP 2026-07-28 in front
// of a server of the handshake revisions: besides the above, it leaves the per-request envelope
// out of what it forwards (such a server has no use for it) and writes the two members every
// modern result needs (`resultType`, and the server's name in `_meta`) into each answer to an
// enveloped request. That is the least any gateway must do for a modern host, so what it costs
// over the plain floor is what the revision's larger messages cost by themselves
// (bench/modernCost.mjs --floor compares the two).
//
// With FLOOR_AUDIT=FILE in its environment it also keeps an audit trail in FILE with the
// guarantees of mcp-warden's default one (`onFailure: block`), in the least form they allow
// (bench/lib/floorAudit.mjs): each routed request's record written before the request is
// forwarded (a request whose record cannot be written is answered with an error, not
// forwarded), its answer's record written before the answer is, one write per turn each way,
// every record SHA-256-chained to the one before, the file's name checked before each write,
// secrets in the arguments redacted. What that costs over the plain floor is what those
// guarantees cost any gateway (bench/run.mjs reports it as json-floor-audit).
//
// With FLOOR_FULL=POLICYFILE as well (it needs FLOOR_AUDIT) it also does, for each tool call,
// what mcp-warden's full configuration does with one, in the least form it allows
// (bench/lib/floorFull.mjs): the tools exposed as `bench__NAME`, the arguments validated against
// the tool's inputSchema, the policy of POLICYFILE decided, a deadline and a concurrency slot
// per call, the result repaired, and the decision, outcome and repairs in the call's record.
// What that costs over the plain floor is the least any gateway doing warden-full's per-call
// work pays (bench/run.mjs reports it as json-floor-full). FLOOR_TIMEOUT_MS sets its idle
// deadline (warden's default, 5 minutes, without it).
//
//   node bench/floor.mjs COMMAND [ARGS...]

import { spawn } from 'node:child_process';

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  process.stderr.write('usage: node bench/floor.mjs COMMAND [ARGS...]\n');
  process.exit(2);
}

const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });

/** Calls `onLine` with each complete line of `stream`. */
function readLines(stream, onLine) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const text = rest + chunk;
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      onLine(text.slice(start, nl));
      start = nl + 1;
    }
    rest = text.slice(start);
  });
}

/**
 * Sends lines to `stream`, all those of one turn in one write; `before`, when given, is told the
 * turn's text before it goes and returns what is to go instead (the audit trail's hook).
 */
function lineWriter(stream, before) {
  let pending = '';
  const flush = () => {
    const text = pending;
    pending = '';
    stream.write(before === undefined ? text : before(text));
  };
  return (line) => {
    if (pending === '') process.nextTick(flush);
    pending += `${line}\n`;
  };
}

const MODERN = process.env.FLOOR_MODERN === '1';
const VERSION = 'io.modelcontextprotocol/protocolVersion';
const ENVELOPE = [
  VERSION,
  'io.modelcontextprotocol/clientCapabilities',
  'io.modelcontextprotocol/clientInfo',
];
const SERVER_INFO = { name: 'floor', version: '1' };
/** The ids (the floor's own) of enveloped requests, whose answers are reshaped. */
const modernIds = new Set();

/**
 * Takes the envelope out of a request's params (copying them, as `delete` would leave objects
 * slow to serialise); true when it had one.
 */
function dropEnvelope(message) {
  const params = message.params;
  const meta = params?._meta;
  if (meta === undefined || meta[VERSION] === undefined) return false;
  const sent = {};
  for (const key in params) if (key !== '_meta') sent[key] = params[key];
  const rest = {};
  let kept = false;
  for (const key in meta)
    if (!ENVELOPE.includes(key)) {
      rest[key] = meta[key];
      kept = true;
    }
  if (kept) sent._meta = rest;
  message.params = sent;
  return true;
}

const hostIds = new Map();
let nextId = 1;

const AUDIT_FILE = process.env.FLOOR_AUDIT;
const { FloorAudit } =
  AUDIT_FILE === undefined || AUDIT_FILE === '' ? {} : await import('./lib/floorAudit.mjs');
const FULL_POLICY = process.env.FLOOR_FULL;
const FULL = FULL_POLICY !== undefined && FULL_POLICY !== '';
if (FULL && (FloorAudit === undefined || MODERN)) {
  process.stderr.write('bench floor: FLOOR_FULL needs FLOOR_AUDIT, and does not go with FLOOR_MODERN\n');
  process.exit(2);
}
const { FloorFull } = FULL ? await import('./lib/floorFull.mjs') : {};
/** Requests (the floor's ids) refused because their record was not written, until taken out. */
const refused = new Set();
const audit =
  FloorAudit === undefined
    ? undefined
    : new FloorAudit(AUDIT_FILE, (id) => {
        const call = full?.refused(id);
        const hostId = call === undefined ? hostIds.get(id) : call.hostId;
        if (hostId === undefined) return;
        hostIds.delete(id);
        // A tool call still waiting for a slot was never in the writes to the server.
        if (call === undefined || call.sent) refused.add(id);
        toHost(
          JSON.stringify({
            jsonrpc: '2.0',
            id: hostId,
            error: { code: -32603, message: 'Refused: the audit log cannot be written.' },
          }),
        );
      });

/** The turn's forwards to the server once their records are written: refused requests taken out. */
function aheadOfServer(text) {
  if (audit.flush() && refused.size === 0) return text;
  let kept = '';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const message = JSON.parse(line);
    if (message.method === undefined || message.id === undefined || !refused.delete(message.id))
      kept += `${line}\n`;
  }
  return kept;
}

/** The turn's answers to the host once their records are written (sent either way: they ran). */
function aheadOfHost(text) {
  audit.flush();
  return text;
}

const toChild = lineWriter(child.stdin, audit && aheadOfServer);
const toHost = lineWriter(process.stdout, audit && aheadOfHost);
const full = FULL
  ? new FloorFull({ policyFile: FULL_POLICY, audit, toChild, toHost, newId: () => nextId++, ...timeouts() })
  : undefined;

/** FLOOR_TIMEOUT_MS, for tests: the idle deadline (and the hard one, if shorter). */
function timeouts() {
  const ms = Number(process.env.FLOOR_TIMEOUT_MS);
  return Number.isInteger(ms) && ms > 0 ? { idleMs: ms } : {};
}

/** The host cancelled a request the floor forwarded: the server is told under the floor's id. */
function hostCancelled(message) {
  const hostId = message.params?.requestId;
  for (const [id, host] of hostIds)
    if (host === hostId) {
      message.params.requestId = id;
      return;
    }
}

readLines(process.stdin, (line) => {
  const message = JSON.parse(line);
  if (message.method !== undefined && message.id !== undefined) {
    const id = nextId++;
    if (full?.request(message, id)) return;
    hostIds.set(id, message.id);
    message.id = id;
    if (MODERN && dropEnvelope(message)) modernIds.add(id);
    audit?.request(message);
  } else if (full !== undefined && message.method === 'notifications/cancelled') {
    if (full.hostCancelled(message)) return;
    hostCancelled(message);
  }
  toChild(JSON.stringify(message));
  if (full !== undefined && message.method === 'notifications/initialized') full.initialized();
});
readLines(child.stdout, (line) => {
  const message = JSON.parse(line);
  if (full?.fromServer(message, line)) return;
  if (message.method === undefined && message.id !== undefined) {
    const id = message.id;
    audit?.answer(message, line);
    message.id = hostIds.get(id);
    hostIds.delete(id);
    if (MODERN && modernIds.delete(id) && message.result !== undefined)
      message.result = {
        resultType: 'complete',
        ...message.result,
        _meta: { ...message.result._meta, 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
      };
  }
  toHost(JSON.stringify(message));
});

process.stdin.on('end', () => child.stdin.end());
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
child.on('error', (error) => {
  process.stderr.write(`bench floor: cannot start ${command}: ${error.message}\n`);
  process.exit(1);
});
child.stdin.on('error', () => {});
process.stdout.on('error', () => child.kill());
