import type { Feature } from '../../core/routing/feature.js';
import { createTelemetryStages, type TelemetryStageOptions } from './stage.js';

/**
 * Traces and metrics of every routed request (see README, "Telemetry"). Two stages, one at
 * each end of the pipeline (`telemetry` outermost, `telemetryUpstream` innermost), and an
 * observer of the stages between them. Made only when the config has `telemetry:`; the SDK it
 * records into is started beforehand by `sdk.ts` and handed in as `runtime`.
 */
export function createTelemetry(options: TelemetryStageOptions): readonly Feature[] {
  const { outer, inner, observe } = createTelemetryStages(options);
  const { instruments } = options.runtime;
  return [
    {
      stage: { name: 'telemetry', run: outer },
      observeStage: observe,
      ...(instruments && {
        onUpstreamLifecycle: (event) => {
          if (event.type === 'upstream_restart')
            instruments.restarts.add(1, { 'mcp_warden.server': event.server });
        },
      }),
    },
    { stage: { name: 'telemetryUpstream', run: inner } },
  ];
}
