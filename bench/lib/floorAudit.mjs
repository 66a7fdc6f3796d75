// The least audit trail with the guarantees of mcp-warden's default one (`onFailure: block`),
// for bench/floor.mjs (FLOOR_AUDIT=FILE). Not the gateway's code: written as plainly as Node
// allows, so that the floor with it shows what those guarantees cost any gateway, whoever wrote
// it. Per request the floor forwards:
//
// - a write-ahead record (`call_start`) in the file before the request is forwarded: all those
//   of one turn of the event loop in one write(2) ahead of that turn's forwards, and a request
//   whose record could not be written is answered with an error instead of being forwarded, so
//   no call reaches the server unrecorded;
// - a record of its answer (`call`, or `request` for a method other than tools/call: outcome,
//   duration, bytes, error) in the file before the answer is forwarded, batched per turn alike;
// - every record chained: its `prev` is the hash of the record before it, and its `hash` the
//   SHA-256 (hex) of its own line up to that member, as warden seals a line; the chain goes on
//   from the last record already in the file;
// - the file's name stat'ed before each write, and the file reopened when it is no longer the
//   one open (moved by logrotate or another writer), and rotated at 50 MiB (5 files kept), as
//   warden's defaults are;
// - secrets redacted in the arguments (see `redactArgs`);
// - after a failed write, the first record that gets written is an `audit_gap` counting the
//   records lost (`torn: true` when a short write left part of a line).
//
// What it leaves out, none of it per-call work: the rotation lock warden takes against a second
// writer, the retry timer, fsync (off by default in warden), checkpoints, the lifecycle records,
// and records of requests a server makes of the host.

import { hash, randomBytes, randomUUID } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname, userInfo } from 'node:os';

const GENESIS = '0'.repeat(64);
/** warden's default `audit.maxSize` and `audit.maxFiles`. */
const MAX_BYTES = 50 * 1024 * 1024;
const MAX_FILES = 5;
/** The host requests warden routes to a server and records (its MessageKind, host side). */
const RECORDED = new Set([
  'tools/call',
  'prompts/get',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
]);

// Redaction in its least form. One case-insensitive expression holds every name and prefix
// that can begin a secret warden's redactor catches (secret key names in the languages it
// knows, the known token formats, URLs, command lines, markup): the arguments' JSON text is
// scanned with it once, and arguments it does not match, most of them, are written as they
// are. Those it matches are copied with the two rules applied: a value under a secret-looking
// key replaced whole, and the known credential formats in every string replaced.
const SECRET_HINT =
  /token|pass|secret|auth|key|cookie|credential|session|bearer|jwt|pin|pwd|otp|sig|-----begin|eyj|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|akia|asia|abia|acca|aiza|npm_|hf_|[sr]k[-_]|:\/\/|hooks\.slack|mysql|mariadb|curl|<\/|kennwort|wachtwoord|contrase|clave|senha|has[łl]o|l[öo]senord|passord|adgangskode|salasana|[şs]ifre|пароль|密[码碼]|パスワード|비밀번호/i;
/**
 * Keys whose values are secrets. A substring test, so it takes more than warden's word rule
 * does (`max_tokens`, `monkey`, `public_key`): the floor may redact too much, never too little.
 */
const SECRET_KEY =
  /token|pass|secret|auth|cookie|credential|session|bearer|jwt|pwd|otp|kennwort|wachtwoord|contrase|clave|senha|has[łl]o|l[öo]senord|passord|adgangskode|salasana|[şs]ifre|пароль|密[码碼]|パスワード|비밀번호|(?:key|pin|sig|signature)$/i;
/** The credential formats warden's pattern rule knows, each replaced by `[REDACTED]`. */
const SECRET_TEXT = new RegExp(
  [
    /-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/,
    /eyJ[\w-]{5,}\.eyJ[\w-]{5,}\.[\w-]*/,
    /gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|glpat-[\w-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}/,
    /(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}|AIza[\w-]{35}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}/,
    /sk-[\w-]{20,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/,
    /(?<=[Bb]earer\s+)[\w\-.~+/]{8,}=*/,
    // The password in `scheme://user:password@host`, or a long token as the whole user part.
    /(?<=:\/\/[^\s/:@]*:)[^\s/@]+(?=@)|(?<=:\/\/)[\w~.%+-]{16,}(?=@)/,
    /(?<=hooks\.slack\.com\/(?:services|workflows|triggers)\/)[\w/-]{8,}|(?<=discord(?:app)?\.com\/api\/webhooks\/)\d+\/[\w-]{20,}/,
    // `name=value`, `name: value` and `--name value` in text, for the secret key names above.
    /(?<=(?:token|passw\w*|secret|api[_-]?key|auth\w*|credential\w*|cookie)["']?[ \t]*[:=][ \t]*["']?)[^\s"'\\&,;}\]<]+/,
    /(?<=--?(?:password|passwd|pass|token|secret|api-key|apikey|auth)[ \t=]+["']?)[^\s"'-][^\s"']*/,
    /(?<=(?:mysql|mariadb)[^\n|;&]{0,300}[ \t]-p)[^\s'"]+|(?<=curl[^\n|;&]{0,300}[ \t](?:-u|--user)[ \t=]+['"]?[^\s:'"@]{1,100}:)[^\s'"]+/,
    /(?<=<(?:password|passwd|secret|token|api_key|apikey)>)[^<]{1,4000}/,
  ]
    .map((part) => part.source)
    .join('|'),
  'g',
);
const REDACTED = '[REDACTED]';

/** The arguments' JSON text with secrets redacted (see above); `undefined` stays undefined. */
export function redactArgs(args) {
  if (args === undefined) return undefined;
  const text = JSON.stringify(args);
  return SECRET_HINT.test(text) ? JSON.stringify(redact(args)) : text;
}

/** `text` with the credential formats replaced, after the one scan that most text fails. */
function redactText(text) {
  return SECRET_HINT.test(text) ? text.replace(SECRET_TEXT, REDACTED) : text;
}

function redact(value) {
  if (typeof value === 'string') return redactText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(redact);
  const copy = {};
  for (const key of Object.keys(value)) {
    const item = value[key];
    // As warden: null, booleans and the empty string say whether a secret was given, not which.
    const kept = item === null || item === '' || typeof item === 'boolean';
    copy[key] = !kept && SECRET_KEY.test(key) ? REDACTED : redact(item);
  }
  return copy;
}

/**
 * The trail. `refuse(id)` is told of each request (by the floor's own id) whose write-ahead
 * record could not be written: the floor answers it and must not forward it.
 */
export class FloorAudit {
  constructor(file, refuse) {
    this.file = file;
    this.refuse = refuse;
    this.fd = undefined;
    this.ino = 0;
    this.dev = 0;
    this.seq = -1;
    this.prev = undefined;
    /** Records not yet written: their `ts` and the JSON members between `ts` and `host`. */
    this.queue = [];
    /** The floor's ids of this turn's requests whose `call_start` is queued. */
    this.ahead = [];
    /** Per request in flight (the floor's id): what its answer's record repeats. */
    this.calls = new Map();
    this.number = 0;
    this.lost = 0;
    this.lostSince = undefined;
    this.torn = false;
    this.error = '';
    this.nowMs = NaN;
    this.nowIso = '';
    this.second = NaN;
    this.secondText = '';
    /** Per route of json-floor-full (one per tool), its names' record text. */
    this.routes = new WeakMap();
    this.size = 0;
    const user = userInfo().username;
    const host = hostname();
    // Written into every record: the same for the life of the process, so made once.
    this.shared = `"session":${JSON.stringify(randomUUID())},"principal":${JSON.stringify({ source: 'os', subject: user, hostname: host })}`;
    this.writerMembers = `"host":${JSON.stringify(host)},"writer":"${randomBytes(6).toString('hex')}"`;
    this.client = '';
  }

  /**
   * A request from the host, before it is forwarded, by the floor's id for it. `route` and
   * `decision` are json-floor-full's (floorFull.mjs): the exposed and upstream names, and the
   * policy's decision as JSON; without them the request is recorded by the name it was sent with
   * on server `upstream`, allowed, as by a gateway without policy or namespaces.
   */
  request(message, id = message.id, route = undefined, decision = '{"effect":"allow","rule":null}') {
    const method = message.method;
    if (method === 'initialize') {
      const info = message.params?.clientInfo;
      if (info !== undefined)
        this.client = `,"client":${JSON.stringify(redact({ name: info.name, version: info.version }))}`;
      return;
    }
    if (!RECORDED.has(method)) return;
    const params = message.params ?? {};
    const call = ++this.number;
    const args = redactArgs(params.arguments);
    const kind = method === 'tools/call' ? '' : `,"method":"${method}"`;
    let named;
    if (route === undefined) {
      const target = JSON.stringify(redactText(String(params.name ?? params.uri ?? params.ref?.name ?? '')));
      named = `"tool":${target},"server":"upstream","upstreamTool":${target}`;
    } else {
      named = this.routes.get(route);
      if (named === undefined) {
        named = `"tool":${JSON.stringify(redactText(route.tool))},"server":${JSON.stringify(route.server)},"upstreamTool":${JSON.stringify(redactText(route.upstreamTool))}`;
        this.routes.set(route, named);
      }
    }
    this.queue.push({
      ts: this.now(),
      members: `"type":"call_start",${this.shared},"call":${call}${kind},${named}${args === undefined ? '' : `,"args":${args}`}`,
    });
    this.ahead.push(id);
    this.calls.set(id, {
      call,
      start: performance.now(),
      // The answer's record: all but what the answer tells, made now from the same texts.
      members: `${this.shared}${this.client}${kind},${named}${args === undefined ? '' : `,"args":${args}`},"decision":${decision}`,
      type: method === 'tools/call' ? 'call' : 'request',
    });
  }

  /**
   * An answer from the server (`line` as read), before its id is mapped back; `repairs` the JSON
   * of the repairs json-floor-full made to its result.
   */
  answer(message, line, repairs = '[]') {
    const error = message.error;
    const outcome =
      error !== undefined ? 'protocol_error' : message.result?.isError === true ? 'tool_error' : 'ok';
    const failure = error === undefined ? undefined : String(error?.message ?? error);
    this.finish(message.id, outcome, Buffer.byteLength(line), failure, repairs);
  }

  /**
   * A request's end, by the floor's id: its outcome, the bytes of its answer (undefined when the
   * floor answered it itself), the error's message, and the JSON of the repairs made.
   */
  finish(id, outcome, bytes, error, repairs = '[]') {
    const call = this.calls.get(id);
    if (call === undefined) return;
    this.calls.delete(id);
    const ms = Math.round((performance.now() - call.start) * 1000) / 1000;
    const size = bytes === undefined ? '' : `,"resultBytes":${bytes}`;
    const failure = error === undefined ? '' : `,"error":${JSON.stringify(redactText(error))}`;
    this.queue.push({
      ts: this.now(),
      members: `"type":"${call.type}",${call.members},"outcome":"${outcome}","ms":${ms},"repairs":${repairs}${size}${failure},"call":${call.call}`,
    });
  }

  /**
   * Writes the queued records in one write(2), before the turn's forwards. Returns false when
   * they could not be written; the requests written ahead in this batch are then refused.
   */
  flush() {
    const ahead = this.ahead;
    this.ahead = [];
    if (this.queue.length === 0) return true;
    const queue = this.queue;
    this.queue = [];
    try {
      this.ensureFile();
      let text = this.torn ? '\n' : '';
      let seq = this.seq;
      let prev = this.prev;
      const seal = (ts, members) => {
        const open = `{"seq":${++seq},"ts":"${ts}",${members},${this.writerMembers},"prev":"${prev}"`;
        prev = hash('sha256', open, 'hex');
        text += `${open},"hash":"${prev}"}\n`;
      };
      if (this.lost > 0 || this.torn)
        seal(
          queue[0].ts,
          `"type":"audit_gap","lost":${this.lost},"since":"${this.lostSince ?? queue[0].ts}","error":${JSON.stringify(this.error)}${this.torn ? ',"torn":true' : ''},${this.shared}`,
        );
      for (const { ts, members } of queue) seal(ts, members);
      const bytes = Buffer.byteLength(text);
      if (this.size > 0 && this.size + bytes > MAX_BYTES) this.rotate();
      const written = writeSync(this.fd, text);
      this.size += written;
      if (written !== bytes) {
        // Part of a line may be in the file: the next write starts on a new line.
        this.torn = written > 0;
        throw Object.assign(new Error(`short write: ${written} of ${bytes} bytes`), { code: 'SHORT_WRITE' });
      }
      this.seq = seq;
      this.prev = prev;
      this.lost = 0;
      this.lostSince = undefined;
      this.torn = false;
      return true;
    } catch (error) {
      this.lost += queue.length;
      this.lostSince ??= queue[0].ts;
      this.error = error instanceof Error ? error.message : String(error);
      for (const id of ahead) {
        this.calls.delete(id);
        this.refuse(id);
      }
      return false;
    }
  }

  /** Opens the file, or reopens it when its name no longer leads to the file open. */
  ensureFile() {
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (this.fd !== undefined) {
      if (stat !== undefined && stat.ino === this.ino && stat.dev === this.dev) {
        this.size = stat.size;
        return;
      }
      closeSync(this.fd);
      this.fd = undefined;
    }
    const fd = openSync(this.file, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT, 0o600);
    const opened = fstatSync(fd);
    this.fd = fd;
    this.ino = opened.ino;
    this.dev = opened.dev;
    this.size = opened.size;
    if (this.prev === undefined) this.continueChain(fd, opened.size);
  }

  /** Takes `seq` and `prev` from the last record in the file, or starts a chain. */
  continueChain(fd, size) {
    this.prev = GENESIS;
    const length = Math.min(size, 1024 * 1024);
    if (length === 0) return;
    const tail = Buffer.alloc(length);
    readSync(fd, tail, 0, length, size - length);
    const lines = tail.toString('utf8').split('\n');
    this.torn = lines.at(-1) !== '';
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        const record = JSON.parse(lines[i]);
        if (Number.isSafeInteger(record.seq) && /^[0-9a-f]{64}$/.test(record.hash)) {
          this.seq = record.seq;
          this.prev = record.hash;
          return;
        }
      } catch {
        // A torn or foreign line: look further back.
      }
    }
  }

  /** `file` becomes `file.1`, `file.1` `file.2`, ... the oldest beyond MAX_FILES deleted. */
  rotate() {
    try {
      unlinkSync(`${this.file}.${MAX_FILES}`);
    } catch {
      // Not there.
    }
    for (let n = MAX_FILES - 1; n >= 1; n--) {
      try {
        renameSync(`${this.file}.${n}`, `${this.file}.${n + 1}`);
      } catch {
        // Not there yet.
      }
    }
    renameSync(this.file, `${this.file}.1`);
    this.ensureFile();
  }

  /**
   * The time as ISO 8601 (`toISOString`'s text). V8 writes that text with an `snprintf` per
   * number, thousands of instructions, so it is made once per second and only the milliseconds
   * are written per record.
   */
  now() {
    const ms = Date.now();
    if (ms !== this.nowMs) {
      this.nowMs = ms;
      const inSecond = ms % 1000;
      if (ms - inSecond !== this.second) {
        this.second = ms - inSecond;
        this.secondText = new Date(this.second).toISOString().slice(0, 20);
      }
      this.nowIso = `${this.secondText}${inSecond < 10 ? '00' : inSecond < 100 ? '0' : ''}${inSecond}Z`;
    }
    return this.nowIso;
  }
}
