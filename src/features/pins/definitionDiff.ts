import { canonicalJson } from '../../lib/canonicalJson.js';
import { PINNED_FIELDS, type PinnedDefinition, type PinnedField } from './toolDefinitionHash.js';

/**
 * What changed between a pinned definition and the one listed now, as lines for a person to
 * read before accepting it (`mcp-warden pins diff`). Text fields (name, title, description) are
 * shown line by line, `-` before and `+` after, because a description is instructions to the
 * model and its exact words are what needs reviewing; schemas as the keys and properties that
 * were added, removed or changed; annotations value by value. Without a pin (a new tool), the
 * whole definition is shown as added.
 */
export function describeChanges(before: PinnedDefinition | undefined, after: PinnedDefinition): string[] {
  const lines: string[] = [];
  for (const field of PINNED_FIELDS) {
    const old = before?.[field];
    const now = after[field];
    // A new tool's name is in the heading already.
    if (same(old, now) || (before === undefined && field === 'name')) continue;
    lines.push(`${field}:${summary(old, now)}`);
    lines.push(...fieldLines(field, old, now).map((line) => `  ${line}`));
  }
  return lines;
}

function summary(old: unknown, now: unknown): string {
  if (old === undefined) return ' (added)';
  if (now === undefined) return ' (removed)';
  return '';
}

function fieldLines(field: PinnedField, old: unknown, now: unknown): string[] {
  switch (field) {
    case 'name':
    case 'title':
    case 'description':
      return textDiff(asText(old), asText(now));
    case 'inputSchema':
    case 'outputSchema':
      return schemaChanges(old, now);
    case 'annotations':
      return valueChanges(asObject(old) ?? {}, asObject(now) ?? {});
    case '_meta':
      // Only `_meta.ui` is pinned: its values (App resource, visibility, ...) one by one.
      return valueChanges(asObject(asObject(old)?.ui) ?? {}, asObject(asObject(now)?.ui) ?? {}).map(
        (line) => `ui.${line}`,
      );
  }
}

/** A text value as lines; anything that is not a string (servers are not checked) as its JSON. */
function asText(value: unknown): string[] {
  if (value === undefined) return [];
  return (typeof value === 'string' ? value : canonicalJson(value)).split('\n');
}

/** Above this many line pairs, a diff is not worth computing: all before, then all after. */
const MAX_DIFF_CELLS = 1_000_000;

/** A line diff: `  ` unchanged, `- ` only before, `+ ` only after (longest common subsequence). */
export function textDiff(before: readonly string[], after: readonly string[]): string[] {
  const n = before.length;
  const m = after.length;
  if (n * m > MAX_DIFF_CELLS)
    return [...before.map((line) => `- ${line}`), ...after.map((line) => `+ ${line}`)];
  // common[i][j]: length of the longest common subsequence of before[i..] and after[j..].
  const common = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      common[i]![j] =
        before[i] === after[j]
          ? common[i + 1]![j + 1]! + 1
          : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && before[i] === after[j]) {
      out.push(`  ${before[i++]}`);
      j++;
    } else if (i < n && (j === m || common[i + 1]![j]! >= common[i]![j + 1]!)) {
      // On a tie the old line goes first: a replaced line reads as - then +.
      out.push(`- ${before[i++]}`);
    } else {
      out.push(`+ ${after[j++]}`);
    }
  }
  return out;
}

/**
 * A schema's changes: its `properties` added, removed and changed (with the keys that changed in
 * each, e.g. a property's own description), then its other top-level keys.
 */
function schemaChanges(old: unknown, now: unknown): string[] {
  const before = asObject(old) ?? {};
  const after = asObject(now) ?? {};
  const lines: string[] = [];
  const oldProperties = asObject(before['properties']) ?? {};
  const newProperties = asObject(after['properties']) ?? {};
  const { added, removed, changed } = compareKeys(oldProperties, newProperties);
  if (added.length > 0) lines.push(`properties added: ${added.join(', ')}`);
  if (removed.length > 0) lines.push(`properties removed: ${removed.join(', ')}`);
  for (const name of changed) {
    const inner = compareKeys(asObject(oldProperties[name]) ?? {}, asObject(newProperties[name]) ?? {});
    const keys = [...inner.added, ...inner.removed, ...inner.changed].sort();
    lines.push(`property ${name} changed${keys.length > 0 ? `: ${keys.join(', ')}` : ''}`);
    const description = (value: unknown) => asText(asObject(value)?.['description']);
    if (keys.includes('description'))
      lines.push(
        ...textDiff(description(oldProperties[name]), description(newProperties[name])).map((l) => `  ${l}`),
      );
  }
  const { properties: _old, ...oldRest } = before;
  const { properties: _new, ...newRest } = after;
  lines.push(...valueChanges(oldRest, newRest));
  return lines;
}

/** Each top-level key added, removed or changed, with its JSON before and after. */
function valueChanges(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const { added, removed, changed } = compareKeys(before, after);
  return [
    ...added.map((key) => `${key} added: ${canonicalJson(after[key])}`),
    ...removed.map((key) => `${key} removed (was ${canonicalJson(before[key])})`),
    ...changed.map((key) => `${key}: ${canonicalJson(before[key])} → ${canonicalJson(after[key])}`),
  ];
}

function compareKeys(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): { added: string[]; removed: string[]; changed: string[] } {
  const oldKeys = Object.keys(before).sort();
  const newKeys = Object.keys(after).sort();
  return {
    added: newKeys.filter((key) => !Object.hasOwn(before, key)),
    removed: oldKeys.filter((key) => !Object.hasOwn(after, key)),
    changed: newKeys.filter((key) => Object.hasOwn(before, key) && !same(before[key], after[key])),
  };
}

function same(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonicalJson(a) === canonicalJson(b);
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
