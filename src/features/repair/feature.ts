import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import type { Logger } from '../../core/logger.js';
import { createOutputValidator, type OutputValidator } from './outputSchemaValidator.js';
import { createResultRepairStage } from './stage.js';

/** Repairs tool results a strict host would reject, per each server's `repair` settings. */
export function createRepair(
  config: WardenConfig,
  deps: {
    readonly logger: Logger;
    /** Shared by the stages made for each settings in force, so compiled schemas are kept. */
    readonly validator?: OutputValidator;
  },
): Feature {
  const repairs = new Map(config.servers.map((s) => [s.name, s.repair]));
  return {
    stage: {
      name: 'resultRepair',
      run: createResultRepairStage({
        repairFor: (server) => repairs.get(server) ?? config.gateway.repair,
        validator: deps.validator ?? createOutputValidator(),
        logger: deps.logger,
      }),
    },
  };
}
