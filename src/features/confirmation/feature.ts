import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import type { Logger } from '../../core/logger.js';
import { createConfirmationStage, type ConfirmationOptions } from './stage.js';

/** Asks a human before a request the policy marked `confirm` goes on. */
export function createConfirmation(
  config: WardenConfig,
  deps: Pick<ConfirmationOptions, 'askHost' | 'redact'> & { readonly logger: Logger },
): Feature {
  return {
    stage: {
      name: 'confirmation',
      run: createConfirmationStage({ config: config.confirmation, ...deps }),
    },
  };
}
