import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import type { SharedStore } from '../../lib/store/sharedStore.js';
import { createRateLimitStage, type RateLimitRecord } from './rateLimits.js';
import { sharedBuckets } from './sharedBuckets.js';

/**
 * The `rateLimits:` token buckets: a stage only when the config has a rule. With a store the
 * replicas share (`store:`), the buckets live there, so every replica counts the same burst.
 */
export function createRateLimits(
  config: WardenConfig,
  deps: { readonly record: (event: RateLimitRecord) => void; readonly store?: SharedStore },
): Feature {
  const rules = config.rateLimits;
  if (rules === undefined) return {};
  const run = createRateLimitStage({
    rules,
    record: deps.record,
    ...(deps.store !== undefined && { storage: sharedBuckets(deps.store) }),
  });
  return { stage: { name: 'rateLimit', run } };
}
