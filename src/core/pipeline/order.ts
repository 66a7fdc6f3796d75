import type { Stage } from './types.js';

/**
 * The stages of the pipeline every routed message passes, outermost first. This is the one place
 * the order is written; `test/unit/pipeline.test.ts` pins it. Each stage sees every kind of
 * message and acts on those it concerns (pins, validate and repair act on tool calls only).
 *
 * 0. telemetry: outermost, so the host-side span covers everything the gateway does with the
 *    request, and its trace id is on the message before the audit stage writes its records.
 * 0a. rateLimit: the `rateLimits:` buckets; outside audit on purpose, so a client hammering a
 *    limit does not write a record per refused request (the stage records each burst itself).
 * 1. audit: sees every outcome (denials and timeouts included) and the duration.
 * 1a. principalLimit: one principal's calls at once and per minute; refused before anything else
 *    works on the call (no question to a human, no upstream), and inside audit so the refusal is
 *    recorded.
 * 2. pins: a tool whose definition changed since it was pinned is refused before anything judges
 *    a call by that definition (the policy reads its annotations; confirmation shows it to a human).
 * 3. validate: a tool call's arguments are checked against the tool's own inputSchema, strictly.
 *    Policy judges arguments as the upstream will act on them, so arguments the upstream would
 *    reject or coerce (`"1000"` where a number is expected, which escapes a `minimum` rule and
 *    which a lenient server turns into 1000) must never reach policy's judgement or the
 *    upstream. After pins, so the schema it checks against is one that was approved.
 * 4. policy: cheap and deterministic; deny before bothering a human.
 * 4a. flow: after policy (a denied call brings nothing and completes nothing), before
 *    confirmation, which asks about a call that would complete the lethal trifecta the way it asks
 *    about any call marked `confirm`. Outside the timeout and repair, so the result it takes
 *    labels from is the one the host gets.
 * 5. confirmation: only for calls the policy marked `confirm`; outside the timeout, so a human's
 *    wait does not count against the tool's limit.
 * 6. timeout: bounds the upstream part, queueing included; cancels upstream when it fires.
 * 7. resultRepair: everything outside sees repaired results.
 * 7a. guardrails: secrets and personal data in a result are redacted (or the result withheld)
 *    before anything outside sees it; inside resultRepair, so a redacted structuredContent that
 *    no longer fits the tool's outputSchema is repaired like any invalid one; outside
 *    concurrencyLimit, so the upstream's slot is not held while the result is scanned.
 * 7b. replicaLease: with replicas sharing a store, a principal's own process of a stdio server
 *    serves one request at a time over all of them; inside timeout, so the wait for the turn
 *    ends with the call's own limit; outside concurrencyLimit, so a request waiting for another
 *    replica holds no slot of the server that other principals' requests need.
 * 8. concurrencyLimit: so a slot is held only while the upstream works.
 * 9. telemetryUpstream: innermost, so the span of the request sent on covers the other side's
 *    work alone (not the wait for a slot), and the trace context it injects is the one sent.
 */
export const STAGE_ORDER = [
  'telemetry',
  'rateLimit',
  'audit',
  'principalLimit',
  'pins',
  'validate',
  'policy',
  'flow',
  'confirmation',
  'timeout',
  'resultRepair',
  'guardrails',
  'replicaLease',
  'concurrencyLimit',
  'telemetryUpstream',
] as const;

export type StageName = (typeof STAGE_ORDER)[number];

/** Orders whichever stages are configured; a stage that is absent (not built yet, or off) is skipped. */
export function orderStages(stages: Partial<Record<StageName, Stage>>): Stage[] {
  return STAGE_ORDER.flatMap((name) => {
    const stage = stages[name];
    return stage === undefined ? [] : [stage];
  });
}
