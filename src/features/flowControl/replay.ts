/**
 * Replays a session's audit records for `mcp-warden policy explain --session`: which requests
 * brought which labels into the session, and for each call that would have completed the lethal
 * trifecta, what was decided and which earlier requests (by their audit `seq` and time) made it so.
 */
import type { FlowLabel } from '../../config/types.js';
import type { FlowLineage, FlowRecord } from '../../core/events.js';

/** One earlier request behind a decision, found in the trail. */
export interface ReplayedSource {
  readonly label: FlowLabel;
  readonly source: number;
  /** What the host called it (`web__fetch`), or the target when its record was not found. */
  readonly name: string;
  /** Its record's `seq` and `ts`; absent when the record is not in the files read. */
  readonly seq?: number;
  readonly ts?: string;
  /** When its result arrived, as the deciding record says. */
  readonly at: string;
}

/** One request of the session that carried labels. */
export interface ReplayStep {
  readonly seq: number | undefined;
  readonly ts: string | undefined;
  /** The exposed tool name, or `method target` for another request. */
  readonly tool: string;
  readonly server: string;
  /** The host session within the run: a principal's key, or empty for the one host connection. */
  readonly sessionKey: string;
  readonly labels: readonly FlowLabel[];
  /** Its number among the session's sources, when its result brought its labels in. */
  readonly source?: number;
  readonly trifecta?: FlowRecord['trifecta'];
  /** The decision as recorded: allow, deny or confirm, and whether a confirmation was given. */
  readonly decision: { readonly effect: string; readonly confirmed?: boolean; readonly how?: string };
  readonly outcome: string;
  readonly lineage: readonly ReplayedSource[];
}

export interface FlowReplay {
  readonly session: string;
  readonly steps: readonly ReplayStep[];
}

type AuditRecord = Readonly<Record<string, unknown>>;

/** The steps of gateway run `session` (its audit `session` id), in the order they were written. */
export function replayFlow(records: readonly AuditRecord[], session: string): FlowReplay {
  const mine = records.filter(
    (r) => r['session'] === session && (r['type'] === 'call' || r['type'] === 'request') && isFlow(r['flow']),
  );
  const sources = new Map<string, AuditRecord>();
  for (const r of mine) {
    const flow = r['flow'] as FlowRecord;
    if (flow.source !== undefined) sources.set(`${flow.sessionKey ?? ''}\u0000${flow.source}`, r);
  }
  const steps = mine.map((r): ReplayStep => {
    const flow = r['flow'] as FlowRecord;
    const key = flow.sessionKey ?? '';
    const decision = (r['decision'] ?? { effect: 'allow' }) as ReplayStep['decision'];
    return {
      seq: typeof r['seq'] === 'number' ? r['seq'] : undefined,
      ts: typeof r['ts'] === 'string' ? r['ts'] : undefined,
      tool: nameOf(r),
      server: String(r['server'] ?? ''),
      sessionKey: key,
      labels: flow.labels,
      ...(flow.source !== undefined && { source: flow.source }),
      ...(flow.trifecta !== undefined && { trifecta: flow.trifecta }),
      decision,
      outcome: String(r['outcome'] ?? ''),
      lineage: (flow.lineage ?? []).map((entry) =>
        replayedSource(entry, sources.get(`${key}\u0000${entry.source}`)),
      ),
    };
  });
  return { session, steps };
}

function replayedSource(entry: FlowLineage, found: AuditRecord | undefined): ReplayedSource {
  return {
    label: entry.label,
    source: entry.source,
    name: found === undefined ? `${entry.server}: ${entry.target}` : nameOf(found),
    ...(typeof found?.['seq'] === 'number' && { seq: found['seq'] }),
    ...(typeof found?.['ts'] === 'string' && { ts: found['ts'] }),
    at: entry.at,
  };
}

function nameOf(record: AuditRecord): string {
  if (record['type'] === 'call') return String(record['tool']);
  return `${String(record['method'])} ${String(record['target'] ?? '')}`.trim();
}

function isFlow(value: unknown): value is FlowRecord {
  return typeof value === 'object' && value !== null && Array.isArray((value as FlowRecord).labels);
}

/** The replay as text, one line per step and one per source behind a decision. */
export function formatReplay(replay: FlowReplay): string {
  if (replay.steps.length === 0)
    return `session ${replay.session}: no request with flow labels in the audit trail\n`;
  const lines = [`session ${replay.session}: ${replay.steps.length} requests with flow labels`];
  let key: string | undefined;
  for (const step of replay.steps) {
    if (step.sessionKey !== key && step.sessionKey !== '')
      lines.push(`host session ${printable(step.sessionKey)}:`);
    key = step.sessionKey;
    const where = `seq ${step.seq ?? '?'} ${step.ts ?? ''}`.trim();
    const brought = step.source === undefined ? '' : ` → source #${step.source}`;
    const verdict =
      step.trifecta === undefined ? '' : `: trifecta ${step.trifecta.toUpperCase()}, ${settled(step)}`;
    lines.push(`  ${where} ${step.tool} [${step.labels.join(', ')}]${brought}${verdict}`);
    for (const source of step.lineage)
      lines.push(
        `      ${source.label} from #${source.source} ${source.name} (seq ${source.seq ?? '?'}, ${source.ts ?? source.at})`,
      );
  }
  return `${lines.join('\n')}\n`;
}

/** How a trifecta decision ended for the call. */
function settled(step: ReplayStep): string {
  if (step.trifecta === 'deny') return 'refused';
  if (step.trifecta === 'audit') return `ran (${step.outcome})`;
  if (step.decision.confirmed === true)
    return `approved (${step.decision.how ?? 'asked'}), ran (${step.outcome})`;
  return `not approved (${step.decision.how ?? 'asked'}), not run`;
}

/** A principal key's parts joined readably (they are separated by NUL characters). */
function printable(key: string): string {
  return key
    .split('\u0000')
    .filter((part) => part !== '')
    .join(' ');
}
