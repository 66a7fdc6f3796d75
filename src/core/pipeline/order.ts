import type { Stage } from './types.js';

/**
 * The stages of the pipeline every routed message passes, outermost first. This is the one place
 * the order is written; `test/unit/pipeline.test.ts` pins it. Each stage sees every kind of
 * message and acts on those it concerns (pins and repair act on tool calls only).
 *
 * 1. audit: outermost, so it sees every outcome (denials and timeouts included) and the duration.
 * 2. pins: a tool whose definition changed since it was pinned is refused before anything judges
 *    a call by that definition (the policy reads its annotations; confirmation shows it to a human).
 * 3. policy: cheap and deterministic; deny before bothering a human.
 * 4. confirmation: only for calls the policy marked `confirm`; outside the timeout, so a human's
 *    wait does not count against the tool's limit.
 * 5. timeout: bounds the upstream part, queueing included; cancels upstream when it fires.
 * 6. resultRepair: everything outside sees repaired results.
 * 7. concurrencyLimit: innermost, so a slot is held only while the upstream works.
 */
export const STAGE_ORDER = [
  'audit',
  'pins',
  'policy',
  'confirmation',
  'timeout',
  'resultRepair',
  'concurrencyLimit',
] as const;

export type StageName = (typeof STAGE_ORDER)[number];

/** Orders whichever stages are configured; a stage that is absent (not built yet, or off) is skipped. */
export function orderStages(stages: Partial<Record<StageName, Stage>>): Stage[] {
  return STAGE_ORDER.flatMap((name) => {
    const stage = stages[name];
    return stage === undefined ? [] : [stage];
  });
}
