/**
 * Small readers and builders over a `CallToolResult` shared by the repair steps. They read
 * defensively (`content` missing or not an array, `structuredContent` of any type): the result
 * comes from an upstream, and a repair must never throw on what it is asked to repair.
 */
import type { CallToolResult, ContentBlock, Tool } from '@modelcontextprotocol/sdk/types.js';

export type RepairChange =
  | 'structured-not-object'
  | 'structured-invalid'
  | 'structured-from-text'
  | 'structured-missing'
  | 'text-added'
  | 'schema-unverifiable';

/** What one repair step did. A step that did nothing returns the very result it was given. */
export interface StepOutcome {
  readonly result: CallToolResult;
  readonly changes: readonly RepairChange[];
  readonly notes: readonly string[];
}

export function unchanged(result: CallToolResult, notes: readonly string[] = []): StepOutcome {
  return { result, changes: [], notes };
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Whether the tool declares an output schema the SDK's host would enforce. */
export function declaresOutputSchema(tool: Pick<Tool, 'outputSchema'>): boolean {
  return isPlainObject(tool.outputSchema);
}

/** `structuredContent` as it really is, not as the type claims it is. */
export function structuredOf(result: CallToolResult): unknown {
  return (result as { structuredContent?: unknown }).structuredContent;
}

export function contentOf(result: CallToolResult): readonly ContentBlock[] {
  const content: unknown = (result as { content?: unknown }).content;
  return Array.isArray(content) ? (content as ContentBlock[]) : [];
}

export function hasTextBlock(content: readonly ContentBlock[]): boolean {
  return content.some((block) => isPlainObject(block) && block.type === 'text');
}

export function isErrorResult(result: CallToolResult): boolean {
  return result.isError === true;
}

export function textBlock(text: string): ContentBlock {
  return { type: 'text', text };
}

/** The result with `blocks` appended to its content (creating `content` if it had none). */
export function withBlocks(result: CallToolResult, ...blocks: ContentBlock[]): CallToolResult {
  return { ...result, content: [...contentOf(result), ...blocks] };
}

/** The result without its `structuredContent` key; every other key keeps its place. */
export function withoutStructured(result: CallToolResult): CallToolResult {
  const { structuredContent: _removed, ...rest } = result;
  return rest as CallToolResult;
}

/** JSON text for a value that came from JSON; never throws (a value that cannot be serialised gets a placeholder). */
export function jsonText(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    if (typeof text === 'string') return text;
  } catch {
    // Too deep for the stack, or not JSON at all: fall through.
  }
  return '[mcp-warden] (this structured value could not be written as JSON)';
}

/** The JSON object a text holds, or undefined. Cheap rejection first: most text is not JSON. */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') || !trimmed.endsWith('}')) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isPlainObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/**
 * Deep equality of JSON values (key order ignored). Iterative: the values come from upstream
 * text and may nest deeper than the call stack allows.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  const pending: [unknown, unknown][] = [[a, b]];
  for (let pair = pending.pop(); pair !== undefined; pair = pending.pop()) {
    const [x, y] = pair;
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length) return false;
      x.forEach((element, i) => pending.push([element, y[i]]));
      continue;
    }
    const xKeys = Object.keys(x);
    if (xKeys.length !== Object.keys(y).length) return false;
    for (const key of xKeys) {
      if (!Object.prototype.hasOwnProperty.call(y, key)) return false;
      pending.push([(x as Record<string, unknown>)[key], (y as Record<string, unknown>)[key]]);
    }
  }
  return true;
}
