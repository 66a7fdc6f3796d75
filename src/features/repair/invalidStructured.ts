/**
 * Repairs for `structuredContent` a strict host rejects: a value that is not an object (the SDK's
 * `CallToolResultSchema` refuses the whole result), and an object that fails the tool's
 * `outputSchema` (the SDK's `Client.callTool` throws). Both are governed by `invalidStructured`.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RepairConfig } from '../../config/types.js';
import { invalidStructuredNote } from './notes.js';
import type { OutputValidator } from './outputSchemaValidator.js';
import {
  contentOf,
  declaresOutputSchema,
  hasTextBlock,
  isErrorResult,
  isPlainObject,
  jsonText,
  kindOf,
  structuredOf,
  textBlock,
  unchanged,
  withBlocks,
  withoutStructured,
  type StepOutcome,
} from './resultParts.js';

/**
 * Rule 2: `structuredContent` present but not a plain object is removed; its JSON is kept as text
 * when the result has no text of its own. The caller then treats the result as having none.
 */
export function removeNonObjectStructured(result: CallToolResult, config: RepairConfig): StepOutcome {
  const value = structuredOf(result);
  if (value === undefined || isPlainObject(value)) return unchanged(result);
  if (config.invalidStructured === 'off') {
    return unchanged(result, [
      `structuredContent is ${kindOf(value)}, not an object; left as is (invalidStructured: off)`,
    ]);
  }
  const stripped = withoutStructured(result);
  const keepAsText = !hasTextBlock(contentOf(result));
  return {
    result: keepAsText ? withBlocks(stripped, textBlock(jsonText(value))) : stripped,
    changes: ['structured-not-object'],
    notes: [
      `structuredContent was ${kindOf(value)}, not an object: removed${keepAsText ? ', its JSON kept as a text block' : ''}`,
    ],
  };
}

/**
 * Rule 3: an object `structuredContent` is checked against the tool's `outputSchema`. This runs
 * on `isError` results too: the SDK's `Client.callTool` (1.32.2) validates `structuredContent`
 * whenever it is present, error or not, so an invalid one fails the call either way.
 */
export function checkStructuredAgainstSchema(
  result: CallToolResult,
  tool: Pick<Tool, 'outputSchema'>,
  config: RepairConfig,
  validator: OutputValidator,
): StepOutcome {
  const value = structuredOf(result);
  if (!declaresOutputSchema(tool) || !isPlainObject(value)) return unchanged(result);
  const verdict = validator.check(tool, value);
  if (verdict.kind === 'valid') return unchanged(result);
  if (verdict.kind === 'unverifiable') {
    return {
      result,
      changes: ['schema-unverifiable'],
      notes: [`structuredContent not checked: ${verdict.reason}`],
    };
  }
  if (config.invalidStructured === 'off') {
    return unchanged(result, [
      `structuredContent does not match the outputSchema (${verdict.message}); left as is (invalidStructured: off)`,
    ]);
  }
  // Setting isError on a result that already has it changes nothing, and its note must not
  // claim the error is ours.
  const markedError = config.invalidStructured === 'error' && !isErrorResult(result);
  const dataAddedAbove = !hasTextBlock(contentOf(result));
  const note = textBlock(invalidStructuredNote(verdict.message, { markedError, dataAddedAbove }));
  const stripped = withoutStructured(result);
  const withText = dataAddedAbove
    ? withBlocks(stripped, textBlock(jsonText(value)), note)
    : withBlocks(stripped, note);
  return {
    result: markedError ? { ...withText, isError: true } : withText,
    changes: ['structured-invalid'],
    notes: [
      `structuredContent does not match the outputSchema (${verdict.message}): removed${markedError ? ', result marked isError' : ''}`,
    ],
  };
}
