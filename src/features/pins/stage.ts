import { ToolChangedError } from '../../core/errors.js';
import type { Stage } from '../../core/pipeline/types.js';
import type { BlockedTool } from './pinGuard.js';

export interface PinStageOptions {
  /** Why a tool is blocked by its pin; undefined when it is not. One Map lookup (pinGuard.ts). */
  readonly refusal: (server: string, tool: string) => BlockedTool | undefined;
}

/**
 * Refuses calls to tools whose definition no longer matches its pin under `pins.onChange: block`
 * (or that have none under `onNew: block`). Such tools are already left out of `tools/list`;
 * this answers a host that calls one anyway (from an older list, or by name), as a policy
 * denial is answered: an `isError` result the model can read, and a `denied` audit record.
 * Only in the pipeline when the config has `pins:`.
 */
export function createPinStage(options: PinStageOptions): Stage {
  return function pins(call, next) {
    if (call.kind !== 'tools/call') return next(call);
    const blocked = options.refusal(call.server, call.target);
    if (blocked === undefined) return next(call);
    // The policy is not asked about a definition nobody approved.
    call.record.decision = { effect: 'deny', rule: null };
    call.record.pin = blocked.status;
    return Promise.reject(new ToolChangedError(call.server, call.target, blocked.message));
  };
}
