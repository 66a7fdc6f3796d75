/**
 * Finding a tool's structured output in its text blocks (`structuredFromText`). Only an
 * unambiguous find counts: exactly one distinct JSON object among the text blocks that validates
 * against the tool's `outputSchema`. Two different valid objects mean we would be guessing.
 */
import type { ContentBlock, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { OutputValidator } from './outputSchemaValidator.js';
import { isPlainObject, jsonEqual, parseJsonObject } from './resultParts.js';

/**
 * Results carry one or two text blocks; a result with more JSON objects than this is a list of
 * records, not one structured output, and checking each against the schema would cost time.
 */
const MAX_CANDIDATES = 8;

export type TextSearch =
  | { kind: 'found'; value: Record<string, unknown>; index: number }
  | { kind: 'none'; ambiguous: boolean }
  | { kind: 'unverifiable'; reason: string };

export function findStructuredInText(
  content: readonly ContentBlock[],
  tool: Pick<Tool, 'outputSchema'>,
  validator: OutputValidator,
): TextSearch {
  let found: { value: Record<string, unknown>; index: number } | undefined;
  let ambiguous = false;
  let candidates = 0;
  for (const [index, block] of content.entries()) {
    if (!isPlainObject(block) || block.type !== 'text' || typeof block.text !== 'string') continue;
    const value = parseJsonObject(block.text);
    if (value === undefined) continue;
    if (++candidates > MAX_CANDIDATES) return { kind: 'none', ambiguous: true };
    const verdict = validator.check(tool, value);
    // One candidate we cannot judge could be the valid one, or a second distinct one: give up.
    if (verdict.kind === 'unverifiable') return verdict;
    if (verdict.kind === 'invalid') continue;
    if (found === undefined) found = { value, index };
    else if (!jsonEqual(found.value, value)) ambiguous = true;
  }
  return found !== undefined && !ambiguous ? { kind: 'found', ...found } : { kind: 'none', ambiguous };
}
