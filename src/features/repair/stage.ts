import type { RepairConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { Interceptor } from '../../core/pipeline/types.js';
import type { OutputValidator } from './outputSchemaValidator.js';
import { mayNeedRepair, repairResult } from './repairResult.js';

export interface ResultRepairOptions {
  /** Each server's repair settings (the gateway's, with the server's overrides). */
  readonly repairFor: (server: string) => RepairConfig;
  /** Shared so each tool's output schema is compiled once. */
  readonly validator: OutputValidator;
  readonly logger: Logger;
}

/**
 * Innermost stage that sees results (ARCHITECTURE "The flow"): everything outside it, audit
 * included, sees the repaired result. A result needing no repair comes back as the same object,
 * which is what lets the router forward the upstream's bytes unchanged.
 */
export function createResultRepairInterceptor(options: ResultRepairOptions): Interceptor {
  return function resultRepair(call, next) {
    return next(call).then((result) => {
      if (!mayNeedRepair(result, call.definition)) return result;
      const outcome = repairResult(
        result,
        call.definition,
        options.repairFor(call.server),
        options.validator,
      );
      if (outcome.changes.length > 0) {
        call.record.repairs.push(...outcome.changes);
        options.logger.info(`repaired the result of ${call.exposedName}: ${outcome.changes.join(', ')}`, {
          ...(outcome.notes.length > 0 && { notes: outcome.notes }),
        });
      }
      return outcome.result;
    });
  };
}
