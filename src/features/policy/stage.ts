import { DeniedError } from '../../core/errors.js';
import type { Stage } from '../../core/pipeline/types.js';
import { describeDecision } from '../../core/pipeline/decision.js';
import type { PolicyEngine } from './index.js';

export interface PolicyStageOptions {
  /** The engine in force; a getter because policy files are reloaded while serving. */
  readonly engine: () => PolicyEngine;
  /** Whether a server's annotations may be believed (`trusted:` in the config). */
  readonly trusted: (server: string) => boolean;
}

/**
 * Decides every tool call before anything else can cost time or a human's attention (after
 * audit, before confirmation). A denied call never reaches the upstream. Arguments are judged
 * as the upstream will receive them: nothing between here and the upstream changes them.
 * Rules name tools only, so other kinds of request pass as allowed.
 */
export function createPolicyStage(options: PolicyStageOptions): Stage {
  return function policy(call, next) {
    if (call.kind !== 'tools/call') return next(call);
    const decision = options.engine().decide({
      server: call.server,
      tool: call.target,
      annotations: call.definition?.annotations,
      trusted: options.trusted(call.server),
      arguments: call.arguments,
    });
    call.record.decision = { effect: decision.effect, rule: decision.ruleId };
    if (decision.effect === 'deny') {
      return Promise.reject(
        new DeniedError(
          `${decision.reason} (${describeDecision(decision)}) The call to tool "${call.target}" on server ` +
            `"${call.server}" was not run.`,
          decision.ruleId,
        ),
      );
    }
    call.decision = decision;
    return next(call);
  };
}
