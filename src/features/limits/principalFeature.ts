import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import { createPrincipalLimitStage } from './principalLimits.js';

/**
 * Per-principal call bounds (`listen.perPrincipal.maxConcurrency`, `ratePerMinute`): a stage
 * only when a listener is configured with one of them.
 */
export function createPrincipalLimits(config: WardenConfig): Feature {
  const limits = config.listen?.perPrincipal;
  if (limits?.maxConcurrency === undefined && limits?.ratePerMinute === undefined) return {};
  return { stage: { name: 'principalLimit', run: createPrincipalLimitStage({ limits }) } };
}
