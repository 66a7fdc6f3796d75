import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import { createConcurrencyLimitStage } from './stage.js';

/** At most `maxConcurrency` requests at once per upstream, and a bounded queue behind them. */
export function createLimits(config: WardenConfig): Feature {
  const run = createConcurrencyLimitStage({ servers: config.servers });
  return { stage: { name: 'concurrencyLimit', run }, serversChanged: run.serversChanged };
}
