/**
 * Rule 5: `structuredContent` with no text block. Hosts that read only `content` (and models
 * shown only text) would see nothing, so its JSON is added as text, as the spec recommends for
 * backwards compatibility. Applies to error results too: a lenient host still needs to see them.
 */
import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import type { RepairConfig } from '../../config/types.js';
import {
  contentOf,
  hasTextBlock,
  isPlainObject,
  jsonEqual,
  jsonText,
  parseJsonObject,
  structuredOf,
  textBlock,
  unchanged,
  withBlocks,
  type StepOutcome,
} from './resultParts.js';

export function addTextForStructured(result: CallToolResult, config: RepairConfig): StepOutcome {
  const value = structuredOf(result);
  // null only reaches here with invalidStructured off; its JSON "null" would tell a reader nothing.
  if (!config.textForStructured || value === undefined || value === null) return unchanged(result);
  const content = contentOf(result);
  if (hasTextBlock(content) || embedsSameJson(content, value)) return unchanged(result);
  return {
    result: withBlocks(result, textBlock(jsonText(value))),
    changes: ['text-added'],
    notes: ['structuredContent had no text block: its JSON was added as one'],
  };
}

/** An embedded resource already carrying the same JSON as text: adding it again would duplicate it. */
function embedsSameJson(content: readonly ContentBlock[], value: unknown): boolean {
  return content.some((block) => {
    if (!isPlainObject(block) || block.type !== 'resource') return false;
    const resource: unknown = block.resource;
    const text = isPlainObject(resource) ? resource.text : undefined;
    return typeof text === 'string' && jsonEqual(parseJsonObject(text), value);
  });
}
