import type { GuardrailAction } from '../../config/types.js';
import type { Detector, Finding } from './detector.js';
import {
  describePath,
  encodedAs,
  segmentsOf,
  withStrings,
  type ScannedKind,
  type Segment,
} from './resultText.js';

/** What was found in one place of a result, and what was done: never the value itself. */
export interface GuardFinding {
  readonly category: string;
  readonly action: Exclude<GuardrailAction, 'off'>;
  /** Where: `content[0].text`, `structuredContent.user.token`, `contents[0].text`. */
  readonly location: string;
  /** How many matches of this category in this place. */
  readonly count: number;
}

export interface GuardedResult {
  /** Empty when no rule fired (or every rule that fired is off here). */
  readonly findings: readonly GuardFinding[];
  /** Some finding's action is `block`: the result must not reach the host. */
  readonly blocked: boolean;
  /** The result with each `redact` finding replaced by its marker; undefined when none was. */
  readonly redacted: object | undefined;
}

/**
 * Segments are scanned as one text, joined by a separator no rule's pattern crosses (a NUL is
 * neither base64, nor a word character, nor white space), so a rule set with a fixed cost per
 * scan pays it once per result rather than once per string.
 */
const SEPARATOR = '\n\u0000\n';

/** The marker a redacted match is replaced with: it names what was there, never the value. */
export function redactionMarker(category: string): string {
  return `[redacted:${category}]`;
}

/**
 * Scans the text of `result` and decides each finding by `actionFor(category)`. The result is
 * never changed here; `redacted` is a new result when something is to be redacted.
 */
export async function guardResult(
  kind: ScannedKind,
  result: object,
  detector: Detector,
  actionFor: (category: string) => GuardrailAction,
): Promise<GuardedResult> {
  const segments = segmentsOf(kind, result);
  if (segments.length === 0) return NOTHING;
  const starts: number[] = [];
  let offset = 0;
  for (const segment of segments) {
    starts.push(offset);
    offset += segment.text.length + SEPARATOR.length;
  }
  const text = segments.length === 1 ? segments[0]!.text : segments.map((s) => s.text).join(SEPARATOR);
  const found = await detector.detect(text);
  if (found.length === 0) return NOTHING;

  const perSegment = new Map<number, { finding: Finding; action: Exclude<GuardrailAction, 'off'> }[]>();
  for (const finding of found) {
    const action = actionFor(finding.category);
    if (action === 'off') continue;
    // The segments the match overlaps (one, unless a rule's pattern spans a separator).
    for (let i = segmentAt(starts, finding.start); i < segments.length && starts[i]! < finding.end; i++) {
      const start = Math.max(0, finding.start - starts[i]!);
      const end = Math.min(segments[i]!.text.length, finding.end - starts[i]!);
      if (end <= start) continue;
      const list = perSegment.get(i) ?? [];
      list.push({ finding: { category: finding.category, start, end }, action });
      perSegment.set(i, list);
    }
  }
  if (perSegment.size === 0) return NOTHING;

  const findings: GuardFinding[] = [];
  const replacements: { path: Segment['path']; text: string }[] = [];
  for (const [index, hits] of [...perSegment].sort(([a], [b]) => a - b)) {
    const segment = segments[index]!;
    const location = describePath(segment.path);
    const counts = new Map<string, { action: GuardFinding['action']; count: number }>();
    for (const { finding, action } of hits) {
      const seen = counts.get(finding.category);
      counts.set(finding.category, { action: stronger(seen?.action, action), count: (seen?.count ?? 0) + 1 });
    }
    for (const [category, { action, count }] of counts) findings.push({ category, action, location, count });
    const toRedact = hits.filter((h) => h.action === 'redact').map((h) => h.finding);
    if (toRedact.length > 0)
      replacements.push({ path: segment.path, text: encodedAs(segment, redact(segment.text, toRedact)) });
  }
  const blocked = findings.some((f) => f.action === 'block');
  return {
    findings,
    blocked,
    redacted: blocked || replacements.length === 0 ? undefined : withStrings(result, replacements),
  };
}

const NOTHING: GuardedResult = { findings: [], blocked: false, redacted: undefined };

const STRENGTH = { audit: 0, redact: 1, block: 2 } as const;

function stronger(a: GuardFinding['action'] | undefined, b: GuardFinding['action']): GuardFinding['action'] {
  return a !== undefined && STRENGTH[a] > STRENGTH[b] ? a : b;
}

/** The index of the segment that holds offset `at` of the joined text. */
function segmentAt(starts: readonly number[], at: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (starts[mid]! <= at) low = mid;
    else high = mid - 1;
  }
  return low;
}

/**
 * `text` with each match replaced by its marker. Overlapping matches become one marker, named
 * after the match that starts first (the longer, when two start together).
 */
function redact(text: string, matches: readonly Finding[]): string {
  const sorted = [...matches].sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let at = 0;
  let current: Finding | undefined;
  for (const match of sorted) {
    if (current !== undefined && match.start < current.end) {
      current = { ...current, end: Math.max(current.end, match.end) };
      continue;
    }
    if (current !== undefined) {
      out += text.slice(at, current.start) + redactionMarker(current.category);
      at = current.end;
    }
    current = match;
  }
  if (current !== undefined) out += text.slice(at, current.start) + redactionMarker(current.category);
  return out + text.slice(current === undefined ? 0 : current.end);
}
