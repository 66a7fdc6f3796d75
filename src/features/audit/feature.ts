import type { AuditConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import { createAuditStage, type AuditStageOptions } from './stage.js';

/**
 * The audit trail of every routed request. Its records of a turn's answers are written before
 * those answers leave (`beforeHostWrite`): the writer batches a turn's records into one write.
 */
export function createAudit(
  config: { readonly audit: AuditConfig },
  deps: Omit<AuditStageOptions, 'config'>,
): Feature {
  return {
    stage: { name: 'audit', run: createAuditStage({ ...deps, config: config.audit }) },
    beforeHostWrite: () => deps.log.flush(),
  };
}
