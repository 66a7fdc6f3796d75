import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import type { Logger } from '../../core/logger.js';
import { createInputValidator, type InputValidator } from './inputValidator.js';
import { createValidateStage } from './stage.js';

/**
 * Input validation: each tool call's arguments are checked against the tool's own `inputSchema`
 * before the policy judges them, per each server's `validateArguments` (default on). No stage at
 * all when every server has it off.
 */
export function createValidate(
  config: WardenConfig,
  deps: {
    readonly logger: Logger;
    /** Shared by the stages made for each settings in force, so compiled schemas are kept. */
    readonly validator?: InputValidator;
  },
): Feature {
  const enabled = new Map(config.servers.map((s) => [s.name, s.validateArguments]));
  if (![...enabled.values()].some(Boolean)) return {};
  return {
    stage: {
      name: 'validate',
      run: createValidateStage({
        enabledFor: (server) => enabled.get(server) ?? config.gateway.validateArguments,
        validator: deps.validator ?? createInputValidator(),
        logger: deps.logger,
      }),
    },
  };
}
