import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import { createRateLimitStage, type RateLimitRecord } from './rateLimits.js';

/** The `rateLimits:` token buckets: a stage only when the config has a rule. */
export function createRateLimits(
  config: WardenConfig,
  deps: { readonly record: (event: RateLimitRecord) => void },
): Feature {
  const rules = config.rateLimits;
  if (rules === undefined) return {};
  return { stage: { name: 'rateLimit', run: createRateLimitStage({ rules, record: deps.record }) } };
}
