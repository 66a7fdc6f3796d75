import { DeniedError } from '../../core/errors.js';
import type { Interceptor } from '../../core/pipeline/types.js';
import { describeDecision } from '../../core/pipeline/decision.js';
import type { PolicyEngine } from './index.js';

export interface PolicyInterceptorOptions {
  /** The engine in force; a getter because policy files are reloaded while serving. */
  readonly engine: () => PolicyEngine;
  /** Whether a server's annotations may be believed (`trusted:` in the config). */
  readonly trusted: (server: string) => boolean;
}

/**
 * Decides every call before anything else can cost time or a human's attention (ARCHITECTURE
 * "The flow": after audit, before confirmation). A denied call never reaches the upstream.
 * Arguments are judged as the upstream will receive them: nothing between here and the upstream
 * changes them.
 */
export function createPolicyInterceptor(options: PolicyInterceptorOptions): Interceptor {
  return function policy(call, next) {
    const decision = options.engine().decide({
      server: call.server,
      tool: call.tool,
      annotations: call.definition.annotations,
      trusted: options.trusted(call.server),
      arguments: call.arguments,
    });
    call.record.decision = { effect: decision.effect, rule: decision.ruleId };
    if (decision.effect === 'deny') {
      return Promise.reject(
        new DeniedError(
          `${decision.reason} (${describeDecision(decision)}) The call to tool "${call.tool}" on server ` +
            `"${call.server}" was not run.`,
          decision.ruleId,
        ),
      );
    }
    call.decision = decision;
    return next(call);
  };
}
