import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { RepairConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { Stage } from '../../core/pipeline/types.js';
import type { OutputValidator } from './outputSchemaValidator.js';
import { LEGACY_HOST, mayNeedRepair, MODERN_HOST, repairResult } from './repairResult.js';

export interface ResultRepairOptions {
  /** Each server's repair settings (the gateway's, with the server's overrides). */
  readonly repairFor: (server: string) => RepairConfig;
  /** Shared so each tool's output schema is compiled once. */
  readonly validator: OutputValidator;
  readonly logger: Logger;
}

/**
 * The innermost stage that sees results: everything outside it, audit included, sees the
 * repaired result. It repairs tool results only, a task's included (fetched by `tasks/result`). A result needing no repair comes back as the
 * same outcome, so the host still gets the upstream's own bytes; a repaired one is a changed
 * outcome, which never carries them.
 */
export function createResultRepairStage(options: ResultRepairOptions): Stage {
  return function resultRepair(call, next) {
    const { definition } = call;
    // A call the host runs as a task is answered with the task, not the tool's result: the
    // result is repaired when `tasks/result` fetches it (which carries the tool's definition).
    const toolResult =
      (call.kind === 'tools/call' && call.task?.drivenBy !== 'host') || call.kind === 'tasks/result';
    if (!toolResult || definition === undefined || repairsNothing(options.repairFor(call.server)))
      return next(call);
    return next(call).then((outcome) => {
      const result = outcome.result as CallToolResult;
      if (!mayNeedRepair(result, definition)) return outcome;
      // An interim result (the server asks for input first, or answers with a task) has no content
      // to repair yet.
      const { resultType } = result as { resultType?: unknown };
      if (resultType === 'input_required' || resultType === 'task') return outcome;
      const era = call.hostEra === 'modern' ? MODERN_HOST : LEGACY_HOST;
      const repaired = repairResult(
        result,
        definition,
        options.repairFor(call.server),
        options.validator,
        era,
      );
      if (repaired.result === result) return outcome;
      if (repaired.changes.length > 0) {
        call.record.repairs.push(...repaired.changes);
        options.logger.info(`repaired the result of ${call.exposedName}: ${repaired.changes.join(', ')}`, {
          ...(repaired.notes.length > 0 && { notes: repaired.notes }),
        });
      }
      return outcome.changed(repaired.result);
    });
  };
}

/**
 * Every repair off: no step can change a result (each leaves it as it is, at most with a note,
 * and an unchanged result is passed on with nothing recorded or logged), so the stage passes
 * the call on without waiting for its answer: no promise step on every call for nothing.
 */
function repairsNothing(config: RepairConfig): boolean {
  return (
    !config.textForStructured &&
    config.invalidStructured === 'off' &&
    !config.structuredFromText &&
    config.missingStructured === 'off'
  );
}
