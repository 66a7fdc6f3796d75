/**
 * Result repair: makes a `tools/call` result one that a strict host (the SDK's `Client.callTool`)
 * accepts and a lenient host (one reading only `content`) can read. Pure: the input is never
 * mutated, and a result needing no repair comes back as the very same object, which is what lets
 * the router forward the upstream's bytes unchanged (src/protocol/rawJson.ts).
 *
 * The steps, in order (one file each):
 * 2. structuredContent that is not an object is removed (invalidStructured.ts);
 * 3. structuredContent that fails the outputSchema is removed, or flagged (invalidStructured.ts);
 * 4. missing structuredContent is found in the text, or the result flagged (missingStructured.ts);
 * 5. structuredContent without any text gets its JSON as text (textForStructured.ts).
 * Every new object is a spread of the previous one, so keys keep their order.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RepairConfig } from '../../config/types.js';
import { checkStructuredAgainstSchema, removeNonObjectStructured } from './invalidStructured.js';
import { supplyMissingStructured } from './missingStructured.js';
import type { OutputValidator } from './outputSchemaValidator.js';
import { declaresOutputSchema, structuredOf, type RepairChange, type StepOutcome } from './resultParts.js';
import { addTextForStructured } from './textForStructured.js';

export type { RepairChange } from './resultParts.js';

export interface RepairOutcome {
  readonly result: CallToolResult;
  readonly changes: readonly RepairChange[];
  readonly notes: readonly string[];
}

export function repairResult(
  result: CallToolResult,
  tool: Pick<Tool, 'outputSchema'>,
  config: RepairConfig,
  validator: OutputValidator,
  era: RepairEra = LEGACY_HOST,
): RepairOutcome {
  if (!mayNeedRepair(result, tool)) return untouched(result);
  return repairSteps(result, tool, config, validator, era);
}

/**
 * What the host's protocol revision allows: from 2026-07-28 `structuredContent` may be any JSON
 * value; before it, only an object.
 */
export interface RepairEra {
  readonly anyStructured: boolean;
}
export const LEGACY_HOST: RepairEra = { anyStructured: false };
export const MODERN_HOST: RepairEra = { anyStructured: true };

/**
 * False when no step can apply: every step needs structuredContent or an outputSchema, and most
 * results have neither. The hot path asks this first (measured), to skip even the outcome object.
 */
export function mayNeedRepair(result: CallToolResult, tool: Pick<Tool, 'outputSchema'>): boolean {
  return structuredOf(result) !== undefined || declaresOutputSchema(tool);
}

// Apart from repairResult so that its fast path does not allocate this function's closure context.
function repairSteps(
  result: CallToolResult,
  tool: Pick<Tool, 'outputSchema'>,
  config: RepairConfig,
  validator: OutputValidator,
  era: RepairEra,
): RepairOutcome {
  const changes: RepairChange[] = [];
  const notes: string[] = [];
  let current = result;
  const apply = (step: StepOutcome): void => {
    current = step.result;
    changes.push(...step.changes);
    notes.push(...step.notes);
  };

  // Step 4 is for results the upstream sent without structuredContent, and for a non-object one
  // removed in `error` mode. Not for what `strip` removed: `strip` means "no isError", and not for
  // what step 3 rejected either, which it has handled itself.
  const sentNone = structuredOf(result) === undefined;
  if (!era.anyStructured) apply(removeNonObjectStructured(current, config));
  const replaceRemoved = changes.includes('structured-not-object') && config.invalidStructured === 'error';
  apply(checkStructuredAgainstSchema(current, tool, config, validator));
  if (sentNone || replaceRemoved) apply(supplyMissingStructured(current, tool, config, validator));
  apply(addTextForStructured(current, config));
  return { result: current, changes, notes };
}

const NOTHING: readonly never[] = Object.freeze([]);

function untouched(result: CallToolResult): RepairOutcome {
  return { result, changes: NOTHING, notes: NOTHING };
}
