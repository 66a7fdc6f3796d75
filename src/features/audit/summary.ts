import { auditFileSet, LineTooLongError, readLinesSync } from './files.js';
import { plural } from '../../lib/plural.js';
import { describePrincipal, type Principal } from '../../core/principal.js';

/** One row of the summary: the calls of one exposed tool (or all of them, for the total). */
export interface ToolSummary {
  readonly tool: string;
  /** The server the tool belongs to; empty for the total, or if records disagree. */
  readonly server: string;
  readonly calls: number;
  readonly ok: number;
  /** Denied by policy or declined by a human (`outcome: denied`). */
  readonly denied: number;
  /** Every other outcome: tool errors, timeouts, cancellations, upstream and protocol failures, ... */
  readonly errors: number;
  /** Median duration in ms of the calls that were not denied (nearest rank); null when none. */
  readonly p50: number | null;
  /** 95th percentile duration in ms, likewise. */
  readonly p95: number | null;
}

export interface AuditSummary {
  /** The files read, oldest first. */
  readonly files: string[];
  /** Lines that were audit records. */
  readonly records: number;
  /** Lines that were not (garbled, cut, or not JSON objects); `audit verify` says more. */
  readonly unreadable: number;
  /** `ts` of the first and last record read. */
  readonly from: string | null;
  readonly to: string | null;
  /** By calls, most first, then by name. */
  readonly tools: ToolSummary[];
  /**
   * The same counts per principal (who made the calls: `alice@https://idp.example`, or the OS
   * user `bob@laptop`), most calls first; `tool` holds the principal, `server` is empty. Calls
   * recorded before records named their principal count as `(unknown)`.
   */
  readonly principals: ToolSummary[];
  readonly total: ToolSummary;
  /** Count per non-`ok`, non-`denied` outcome (`timeout`, `tool_error`, ...), over all tools. */
  readonly errorOutcomes: Readonly<Record<string, number>>;
  /** Count per record type other than `call` and `call_start` (`gateway_start`, `upstream_restart`, ...). */
  readonly events: Readonly<Record<string, number>>;
  /**
   * Calls whose `call_start` (written ahead with `audit.onFailure: block`) has no `call` record:
   * they were running when the gateway stopped (killed, crashed, or out of disk).
   */
  readonly unfinished: number;
}

/** Reads an audit log (the base file and its rotated files, or a list oldest first) and summarises it. */
export function summarizeAudit(files: string[] | string): AuditSummary {
  const { files: list, records, unreadable } = readAuditRecords(files);
  return { ...summarizeRecords(records), files: list, unreadable };
}

/**
 * Every record of an audit log parsed, oldest first (the base file and its rotated files, or a
 * list oldest first), and how many lines were not records. The chain is not checked here:
 * `verifyAuditFiles` does that.
 */
export function readAuditRecords(
  files: string[] | string,
  options: { readonly maxLineBytes?: number } = {},
): {
  readonly files: string[];
  readonly records: Record<string, unknown>[];
  readonly unreadable: number;
} {
  const list = typeof files === 'string' ? auditFileSet(files).files : files;
  let unreadable = 0;
  const records: Record<string, unknown>[] = [];
  for (const file of list) {
    try {
      for (const { text } of readLinesSync(file, options)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          unreadable++;
          continue;
        }
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) unreadable++;
        else records.push(parsed as Record<string, unknown>);
      }
    } catch (error) {
      // The rest of the file cannot be read past such a line: a report without it would be
      // short with no sign of it, so the report fails, naming where.
      if (error instanceof LineTooLongError) throw new Error(`${file}: ${error.message}`, { cause: error });
      throw error;
    }
  }
  return { files: list, records, unreadable };
}

interface Accumulator {
  tool: string;
  server: string | undefined;
  calls: number;
  ok: number;
  denied: number;
  errors: number;
  durations: number[];
}

/** The summary of parsed records (anything that is not an object with a string `type` is skipped). */
export function summarizeRecords(records: Iterable<unknown>): Omit<AuditSummary, 'files' | 'unreadable'> {
  const byTool = new Map<string, Accumulator>();
  const byPrincipal = new Map<string, Accumulator>();
  const total = emptyRow('total', '');
  // Maps, not object literals: `type` and `outcome` come from the file and may be `__proto__`.
  const errorOutcomes = new Map<string, number>();
  const events = new Map<string, number>();
  /** `session` + `call` of each call_start not yet matched by its call record. */
  const started = new Set<string>();
  let count = 0;
  let from: string | null = null;
  let to: string | null = null;
  for (const value of records) {
    if (typeof value !== 'object' || value === null) continue;
    const record = value as Record<string, unknown>;
    if (typeof record.type !== 'string') continue;
    count++;
    if (typeof record.ts === 'string') {
      from ??= record.ts;
      to = record.ts;
    }
    if (record.type === 'call_start') {
      started.add(callKey(record));
      continue;
    }
    if (record.type !== 'call') {
      events.set(record.type, (events.get(record.type) ?? 0) + 1);
      continue;
    }
    if (record.call !== undefined) started.delete(callKey(record));
    const outcome = typeof record.outcome === 'string' ? record.outcome : 'unknown';
    const targets = [toolRow(byTool, record), principalRow(byPrincipal, record), total];
    for (const target of targets) countCall(target, outcome, record.ms);
    if (outcome !== 'ok' && outcome !== 'denied')
      errorOutcomes.set(outcome, (errorOutcomes.get(outcome) ?? 0) + 1);
  }
  const byCalls = (rows: Iterable<Accumulator>) =>
    [...rows]
      .sort((a, b) => b.calls - a.calls || (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0))
      .map(finish);
  const tools = byCalls(byTool.values());
  return {
    records: count,
    from,
    to,
    tools,
    principals: byCalls(byPrincipal.values()),
    total: finish(total),
    errorOutcomes: Object.fromEntries(errorOutcomes),
    events: Object.fromEntries(events),
    unfinished: started.size,
  };
}

function emptyRow(tool: string, server: string): Accumulator {
  return { tool, server, calls: 0, ok: 0, denied: 0, errors: 0, durations: [] };
}

/** The row of the record's tool, created on first sight. */
function toolRow(byTool: Map<string, Accumulator>, record: Record<string, unknown>): Accumulator {
  const tool = typeof record.tool === 'string' ? record.tool : '(unnamed)';
  const server = typeof record.server === 'string' ? record.server : '';
  const row = byTool.get(tool);
  if (row === undefined) {
    const created = emptyRow(tool, server);
    byTool.set(tool, created);
    return created;
  }
  if (row.server !== server) row.server = ''; // one exposed name, several servers over time: say nothing rather than pick one
  return row;
}

/** The row of the record's principal, created on first sight. */
function principalRow(byPrincipal: Map<string, Accumulator>, record: Record<string, unknown>): Accumulator {
  const who = principalLabel(record.principal);
  let row = byPrincipal.get(who);
  if (row === undefined) {
    row = emptyRow(who, '');
    byPrincipal.set(who, row);
  }
  return row;
}

/** Counts one call record with its outcome and duration into a row. */
function countCall(target: Accumulator, outcome: string, ms: unknown): void {
  target.calls++;
  if (outcome === 'ok') target.ok++;
  else if (outcome === 'denied') target.denied++;
  else target.errors++;
  // Denials answer in microseconds; counting them would make a mostly denied tool look fast.
  if (outcome !== 'denied' && typeof ms === 'number' && Number.isFinite(ms)) target.durations.push(ms);
}

/** How a record's principal reads in the summary; `(unknown)` for records without one. */
function principalLabel(value: unknown): string {
  if (typeof value !== 'object' || value === null) return '(unknown)';
  const principal = value as Partial<Principal>;
  if (typeof principal.subject !== 'string') return '(unknown)';
  return describePrincipal(principal as Principal);
}

/** What pairs a `call_start` with its `call` record. */
function callKey(record: Record<string, unknown>): string {
  return JSON.stringify([record.session, record.call]);
}

function finish(row: Accumulator): ToolSummary {
  const sorted = [...row.durations].sort((a, b) => a - b);
  return {
    tool: row.tool,
    server: row.server ?? '',
    calls: row.calls,
    ok: row.ok,
    denied: row.denied,
    errors: row.errors,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
  };
}

/** Nearest-rank percentile of ascending values: the smallest value with at least p% at or below it. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? null;
}

/** The summary as a text table, for `mcp-warden audit summary`. */
export function formatSummary(summary: AuditSummary): string {
  const lines: string[] = [];
  const range = summary.from === null ? '' : ` from ${summary.from} to ${summary.to ?? summary.from}`;
  lines.push(`${plural(summary.records, 'record')} in ${plural(summary.files.length, 'file')}${range}`);
  if (summary.unreadable > 0) {
    lines.push(`${plural(summary.unreadable, 'unreadable line')} skipped (run "mcp-warden audit verify")`);
  }
  lines.push('');
  if (summary.total.calls === 0) {
    lines.push('no calls recorded');
  } else {
    const header = ['tool', 'server', 'calls', 'ok', 'denied', 'errors', 'p50 ms', 'p95 ms'];
    const toCells = (row: ToolSummary): string[] => [
      row.tool,
      row.server,
      String(row.calls),
      String(row.ok),
      String(row.denied),
      String(row.errors),
      formatMs(row.p50),
      formatMs(row.p95),
    ];
    lines.push(...table(header, summary.tools.map(toCells), toCells(summary.total), 2));
    // Who made the calls: the principal of each record (one row when everyone is the OS user).
    const byWho = (row: ToolSummary): string[] => [
      row.tool,
      String(row.calls),
      String(row.ok),
      String(row.denied),
      String(row.errors),
    ];
    lines.push(
      '',
      ...table(['principal', 'calls', 'ok', 'denied', 'errors'], summary.principals.map(byWho), undefined, 1),
    );
  }
  const outcomes = Object.entries(summary.errorOutcomes).sort(([a], [b]) => (a < b ? -1 : 1));
  if (outcomes.length > 0) {
    lines.push('', `errors by outcome: ${outcomes.map(([name, n]) => `${name} ${n}`).join(', ')}`);
  }
  const events = Object.entries(summary.events).sort(([a], [b]) => (a < b ? -1 : 1));
  if (events.length > 0) {
    lines.push(`other records: ${events.map(([name, n]) => `${name} ${n}`).join(', ')}`);
  }
  if (summary.unfinished > 0) {
    lines.push(
      `${summary.unfinished} call(s) started and never recorded as ended (the gateway stopped during them)`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Rows as aligned text: the first `names` columns left-aligned, numbers right-aligned, two
 * spaces between columns, a rule under the header and above the total (when there is one).
 */
function table(header: string[], body: string[][], total: string[] | undefined, names: number): string[] {
  const widths = header.map((title, column) =>
    Math.max(
      title.length,
      ...[...body, ...(total ? [total] : [])].map((cells) => (cells[column] ?? '').length),
    ),
  );
  const render = (cells: string[]): string =>
    cells
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        return column < names ? cell.padEnd(width) : cell.padStart(width);
      })
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [render(header), rule, ...body.map(render), ...(total ? [rule, render(total)] : [])];
}

function formatMs(ms: number | null): string {
  if (ms === null) return '-';
  if (Number.isInteger(ms) || ms >= 10) return String(Math.round(ms));
  return ms.toFixed(1);
}
