/**
 * Rule 4: the tool declares an `outputSchema` and the result, not an error, has no
 * `structuredContent`. The SDK's `Client.callTool` throws on that. First try to find the data in
 * the text (`structuredFromText`: servers often return their JSON only as text); failing that,
 * mark the result as an error with a note (`missingStructured: error`), which the SDK accepts.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RepairConfig } from '../../config/types.js';
import { missingStructuredNote } from './notes.js';
import type { OutputValidator } from './outputSchemaValidator.js';
import {
  contentOf,
  declaresOutputSchema,
  isErrorResult,
  structuredOf,
  textBlock,
  unchanged,
  withBlocks,
  type StepOutcome,
} from './resultParts.js';
import { findStructuredInText } from './structuredFromText.js';

export function supplyMissingStructured(
  result: CallToolResult,
  tool: Pick<Tool, 'outputSchema'>,
  config: RepairConfig,
  validator: OutputValidator,
): StepOutcome {
  if (!declaresOutputSchema(tool) || isErrorResult(result) || structuredOf(result) !== undefined) {
    return unchanged(result);
  }
  let ambiguous = false;
  let unverifiable: string | undefined;
  if (config.structuredFromText) {
    const found = findStructuredInText(contentOf(result), tool, validator);
    if (found.kind === 'unverifiable') unverifiable = found.reason;
    else if (found.kind === 'found') {
      return {
        result: { ...result, structuredContent: found.value },
        changes: ['structured-from-text'],
        notes: [`structuredContent taken from the JSON in text block ${found.index}`],
      };
    } else ambiguous = found.ambiguous;
  }
  const why = ambiguous ? ' (its text holds several different JSON objects that match; none was picked)' : '';
  if (config.missingStructured === 'off') {
    return unchanged(result, [
      `the tool declares an outputSchema but sent no structuredContent${why}; left as is (missingStructured: off)`,
    ]);
  }
  // Even when the schema cannot be judged (so no text could be offered as structuredContent),
  // the SDK's callTool rejects a missing structuredContent whatever the schema says: flag it.
  const hasOtherContent = contentOf(result).length > 0;
  return {
    result: { ...withBlocks(result, textBlock(missingStructuredNote({ hasOtherContent }))), isError: true },
    changes:
      unverifiable === undefined ? ['structured-missing'] : ['schema-unverifiable', 'structured-missing'],
    notes: [
      ...(unverifiable === undefined ? [] : [`structuredContent not derived: ${unverifiable}`]),
      `the tool declares an outputSchema but sent no structuredContent${why}: result marked isError`,
    ],
  };
}
