import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson, MAX_CANONICAL_DEPTH } from '../../lib/canonicalJson.js';
import { sha256Hex } from '../../lib/hash.js';

/**
 * The parts of a tool definition that are pinned: what reaches the model, and so what a server
 * could change to steer it. The description is instructions to the model; the schemas and their
 * descriptions are read by it too; the title and annotations are shown to the user and decide
 * policy for trusted servers.
 *
 * Of `_meta`, only `_meta.ui` is pinned: it names the MCP App (`resourceUri`) whose HTML the
 * host runs for this tool, and who may call the tool (`visibility`), so a server that points a
 * tool at another App or opens it to other callers has changed what the user approved. The rest
 * of `_meta` is for clients and implementations, never shown to the model, and servers put
 * things there that change from run to run (build ids, timestamps); pinning it would flag
 * changes nobody needs to review and teach users to accept changes without reading them.
 */
export const PINNED_FIELDS = [
  'name',
  'title',
  'description',
  'inputSchema',
  'outputSchema',
  'annotations',
  '_meta',
] as const;

export type PinnedField = (typeof PINNED_FIELDS)[number];

/** The pinned parts of one tool definition, as stored in the pins file. */
export type PinnedDefinition = { readonly [K in PinnedField]?: unknown };

/** The pinned parts of `tool`: only those it has (an absent field stays absent). */
export function pinnedDefinition(tool: Tool | PinnedDefinition): PinnedDefinition {
  const source = tool as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const field of PINNED_FIELDS) if (source[field] !== undefined) picked[field] = source[field];
  const meta = source._meta;
  const ui = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>).ui : undefined;
  if (ui === undefined) delete picked._meta;
  else picked._meta = { ui };
  return picked;
}

/**
 * SHA-256 (hex) of the canonical JSON of the pinned parts (src/audit/canonical.ts: keys sorted,
 * no whitespace), so the order in which a server writes keys never counts as a change.
 */
export function definitionHash(definition: PinnedDefinition): string {
  return sha256Hex(canonicalJson(pinnedDefinition(definition)));
}

/**
 * Whether the definition nests deeper than the canonical form writes out. Below that depth the
 * canonical form writes `"[Truncated]"`, so two definitions differing only there would hash the
 * same: such a definition cannot be pinned faithfully (a server could hide a change in it).
 */
export function tooDeepToPin(definition: PinnedDefinition): boolean {
  // Iterative, so a definition thousands of levels deep cannot overflow the stack here.
  const stack: { value: unknown; depth: number }[] = [{ value: definition, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= MAX_CANONICAL_DEPTH) return true;
    for (const child of Object.values(value)) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/** The pinned fields whose values differ between two definitions, in PINNED_FIELDS order. */
export function changedFields(before: PinnedDefinition, after: PinnedDefinition): PinnedField[] {
  // Through pinnedDefinition, so that of `_meta` only `_meta.ui` counts.
  const [old, now] = [pinnedDefinition(before), pinnedDefinition(after)];
  return PINNED_FIELDS.filter((field) => fieldJson(old[field]) !== fieldJson(now[field]));
}

function fieldJson(value: unknown): string | undefined {
  return value === undefined ? undefined : canonicalJson(value);
}
