import type { Interceptor } from './types.js';

/**
 * The stages of the `tools/call` pipeline, outermost first. This is the one place the order is
 * written (ARCHITECTURE "The flow"); `test/unit/pipelineOrder.test.ts` pins it.
 *
 * 1. audit: outermost, so it sees every outcome (denials and timeouts included) and the duration.
 * 2. policy: cheap and deterministic; deny before bothering a human.
 * 3. confirmation: only for calls the policy marked `confirm`; outside the timeout, so a human's
 *    wait does not count against the tool's limit.
 * 4. timeout: bounds the upstream part, queueing included; cancels upstream when it fires.
 * 5. resultRepair: everything outside sees repaired results.
 * 6. concurrencyLimit: innermost, so a slot is held only while the upstream works.
 */
export const STAGE_ORDER = [
  'audit',
  'policy',
  'confirmation',
  'timeout',
  'resultRepair',
  'concurrencyLimit',
] as const;

export type StageName = (typeof STAGE_ORDER)[number];

/** Orders whichever stages are configured; a stage that is absent (not built yet, or off) is skipped. */
export function orderStages(stages: Partial<Record<StageName, Interceptor>>): Interceptor[] {
  return STAGE_ORDER.flatMap((name) => {
    const stage = stages[name];
    return stage === undefined ? [] : [stage];
  });
}
