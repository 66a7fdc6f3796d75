import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import { createTimeoutStage, timeoutLimitsFromConfig } from './stage.js';

/** Time limits on every request sent upstream: per tool, per server, and the gateway's. */
export function createTimeout(config: WardenConfig): Feature {
  return {
    stage: { name: 'timeout', run: createTimeoutStage({ limitsFor: timeoutLimitsFromConfig(config) }) },
  };
}
