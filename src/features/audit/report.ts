import { readAuditRecords } from './summary.js';
import { verifyAuditFiles, type VerifyResult } from './verify.js';

/**
 * What `mcp-warden audit report` shows, computed from an audit log: the numbers behind each
 * chart and table of the page (reportHtml.ts draws them). Kept apart from the page so that it
 * can be tested as data.
 */
export interface AuditReport {
  readonly files: string[];
  readonly records: number;
  readonly unreadable: number;
  /** `ts` of the first and last record. */
  readonly from: string | null;
  readonly to: string | null;
  /** The hash chain, checked by the same verifier as `audit verify`. */
  readonly verify: VerifyResult;
  /** The last signed checkpoint record, when the trail has any; null when it has none. */
  readonly checkpoint: { readonly seq: unknown; readonly ts: unknown; readonly count: number } | null;
  /** Calls and requests per time bucket, split by how they ended. */
  readonly timeline: {
    readonly bucketMs: number;
    readonly starts: string[];
    readonly ok: number[];
    readonly denied: number[];
    readonly errors: number[];
  };
  /** Decisions by effect (`allow`, `deny`, `confirm`), over calls and requests. */
  readonly effects: Readonly<Record<string, number>>;
  /** Decisions by rule (`(default)` when no rule matched), most first. */
  readonly rules: readonly { readonly rule: string; readonly effect: string; readonly count: number }[];
  /** Tools by calls, most first. */
  readonly tools: readonly Row[];
  /** Servers by calls and requests, most first. */
  readonly servers: readonly Row[];
  /** Denied calls and requests, each with its record (at most `LISTED` of them). */
  readonly denials: Listed;
  /** Calls and requests that ended in any other way than ok or denied, each with its record. */
  readonly errors: Listed;
  /**
   * Who made the calls: the records' `principal` (a string, or an object named by its
   * `subject`, `sub`, `user` or `name`), with `host` when records have one; records without a
   * principal are counted under `(not recorded)`.
   */
  readonly principals: readonly {
    readonly principal: string;
    readonly host: string;
    readonly calls: number;
  }[];
  /** The host applications (`client.name`) seen, by calls. */
  readonly clients: readonly { readonly client: string; readonly calls: number }[];
}

export interface Row {
  readonly name: string;
  readonly calls: number;
  readonly denied: number;
  readonly errors: number;
}

export interface Listed {
  readonly total: number;
  /** The most recent ones, newest first. */
  readonly records: readonly Record<string, unknown>[];
}

/** Denials and errors listed with their records: enough to investigate, bounded for the page. */
export const LISTED = 200;

/** Bucket widths tried in order: the first that keeps the timeline within MAX_BUCKETS is used. */
const BUCKET_SIZES_MS = [60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000, 604_800_000];
const MAX_BUCKETS = 120;

/** Reads and verifies an audit log (base file and rotated files) and computes its report. */
export function buildAuditReport(base: string): AuditReport {
  const { files, records, unreadable } = readAuditRecords(base);
  return reportOf(records, { files, unreadable, verify: verifyAuditFiles(files) });
}

/** The report of parsed records, with the verification and file facts given. */
export function reportOf(
  records: readonly Record<string, unknown>[],
  facts: { readonly files: string[]; readonly unreadable: number; readonly verify: VerifyResult },
): AuditReport {
  const tally = emptyTally();
  for (const record of records) {
    if (typeof record.ts === 'string') {
      tally.from ??= record.ts;
      tally.to = record.ts;
    }
    if (record.type === 'checkpoint') {
      tally.checkpoints++;
      tally.lastCheckpoint = record;
    } else if (record.type === 'call' || record.type === 'request') tallyRouted(tally, record);
  }
  const { lastCheckpoint, rules, principals, clients } = tally;
  return {
    files: facts.files,
    records: records.length,
    unreadable: facts.unreadable,
    from: tally.from,
    to: tally.to,
    verify: facts.verify,
    checkpoint:
      lastCheckpoint === undefined
        ? null
        : { seq: lastCheckpoint.seq, ts: lastCheckpoint.ts, count: tally.checkpoints },
    timeline: timelineOf(tally.routed),
    effects: Object.fromEntries(tally.effects),
    rules: [...rules.values()].sort((a, b) => b.count - a.count || compare(a.rule, b.rule)),
    tools: ranked(tally.tools),
    servers: ranked(tally.servers),
    denials: { total: tally.denialCount, records: tally.denials.reverse() },
    errors: { total: tally.errorCount, records: tally.errors.reverse() },
    principals: [...principals.values()].sort(
      (a, b) => b.calls - a.calls || compare(a.principal, b.principal),
    ),
    clients: [...clients].map(([client, calls]) => ({ client, calls })).sort((a, b) => b.calls - a.calls),
  };
}

type CountedRow = Row & { calls: number; denied: number; errors: number };

/** What the report counts, as the records are read in order. */
interface Tally {
  readonly effects: Map<string, number>;
  readonly rules: Map<string, { rule: string; effect: string; count: number }>;
  readonly tools: Map<string, CountedRow>;
  readonly servers: Map<string, CountedRow>;
  readonly principals: Map<string, { principal: string; host: string; calls: number }>;
  readonly clients: Map<string, number>;
  /** The latest LISTED denials and errors. */
  readonly denials: Record<string, unknown>[];
  readonly errors: Record<string, unknown>[];
  denialCount: number;
  errorCount: number;
  readonly routed: { ms: number; outcome: string }[];
  checkpoints: number;
  lastCheckpoint: Record<string, unknown> | undefined;
  from: string | null;
  to: string | null;
}

function emptyTally(): Tally {
  return {
    effects: new Map(),
    rules: new Map(),
    tools: new Map(),
    servers: new Map(),
    principals: new Map(),
    clients: new Map(),
    denials: [],
    errors: [],
    denialCount: 0,
    errorCount: 0,
    routed: [],
    checkpoints: 0,
    lastCheckpoint: undefined,
    from: null,
    to: null,
  };
}

/** Counts one routed call or request: its decision, outcome, server, tool, principal and client. */
function tallyRouted(tally: Tally, record: Record<string, unknown>): void {
  const outcome = typeof record.outcome === 'string' ? record.outcome : 'unknown';
  const server = typeof record.server === 'string' ? record.server : '(unnamed)';
  tallyDecision(tally, record.decision as { effect?: unknown; rule?: unknown } | undefined);
  const denied = outcome === 'denied';
  const failed = !denied && outcome !== 'ok';
  count(tally.servers, server, denied, failed);
  if (record.type === 'call')
    count(tally.tools, typeof record.tool === 'string' ? record.tool : '(unnamed)', denied, failed);
  if (denied) {
    tally.denialCount++;
    tally.denials.push(record);
    if (tally.denials.length > LISTED) tally.denials.shift();
  } else if (failed) {
    tally.errorCount++;
    tally.errors.push(record);
    if (tally.errors.length > LISTED) tally.errors.shift();
  }
  const who = principalOf(record.principal);
  const host = typeof record.host === 'string' ? record.host : '';
  const whoKey = `${who}\u0000${host}`;
  const whoRow = tally.principals.get(whoKey) ?? { principal: who, host, calls: 0 };
  whoRow.calls++;
  tally.principals.set(whoKey, whoRow);
  const client = record.client as { name?: unknown } | undefined;
  bump(tally.clients, typeof client?.name === 'string' ? client.name : '(unknown)');
  const ms = typeof record.ts === 'string' ? Date.parse(record.ts) : NaN;
  if (Number.isFinite(ms)) tally.routed.push({ ms, outcome });
}

function tallyDecision(tally: Tally, decision: { effect?: unknown; rule?: unknown } | undefined): void {
  const effect = typeof decision?.effect === 'string' ? decision.effect : 'allow';
  const rule = typeof decision?.rule === 'string' ? decision.rule : '(default)';
  bump(tally.effects, effect);
  const ruleKey = `${rule}\u0000${effect}`;
  const ruleRow = tally.rules.get(ruleKey) ?? { rule, effect, count: 0 };
  ruleRow.count++;
  tally.rules.set(ruleKey, ruleRow);
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function count(
  map: Map<string, { name: string; calls: number; denied: number; errors: number }>,
  name: string,
  denied: boolean,
  failed: boolean,
): void {
  const row = map.get(name) ?? { name, calls: 0, denied: 0, errors: 0 };
  row.calls++;
  if (denied) row.denied++;
  if (failed) row.errors++;
  map.set(name, row);
}

function ranked(map: Map<string, Row>): Row[] {
  return [...map.values()].sort((a, b) => b.calls - a.calls || compare(a.name, b.name));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A principal as one line of text, whatever shape the record gives it. */
function principalOf(value: unknown): string {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'object' && value !== null) {
    const named = value as Record<string, unknown>;
    for (const key of ['subject', 'sub', 'user', 'name']) {
      const name = named[key];
      if (typeof name === 'string' && name !== '') return name;
    }
    return JSON.stringify(value);
  }
  return '(not recorded)';
}

/** Calls per bucket, the bucket as wide as needed to keep the chart readable. */
function timelineOf(routed: readonly { ms: number; outcome: string }[]): AuditReport['timeline'] {
  if (routed.length === 0)
    return { bucketMs: BUCKET_SIZES_MS[0]!, starts: [], ok: [], denied: [], errors: [] };
  let first = Infinity;
  let last = -Infinity;
  for (const { ms } of routed) {
    if (ms < first) first = ms;
    if (ms > last) last = ms;
  }
  // Beyond the widest size (a trail of years), buckets widen to keep their number bounded.
  const bucketMs =
    BUCKET_SIZES_MS.find((size) => (last - first) / size < MAX_BUCKETS) ??
    Math.ceil((last - first + 1) / (MAX_BUCKETS - 1));
  const start = Math.floor(first / bucketMs) * bucketMs;
  const buckets = Math.floor((last - start) / bucketMs) + 1;
  const ok = new Array<number>(buckets).fill(0);
  const denied = new Array<number>(buckets).fill(0);
  const errors = new Array<number>(buckets).fill(0);
  for (const call of routed) {
    const i = Math.floor((call.ms - start) / bucketMs);
    if (call.outcome === 'ok') ok[i]!++;
    else if (call.outcome === 'denied') denied[i]!++;
    else errors[i]!++;
  }
  const starts = Array.from({ length: buckets }, (_, i) => new Date(start + i * bucketMs).toISOString());
  return { bucketMs, starts, ok, denied, errors };
}
