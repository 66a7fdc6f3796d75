import { InvalidArgumentsError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Stage } from '../../core/pipeline/types.js';
import type { InputValidator } from './inputValidator.js';

export interface ValidateStageOptions {
  /** Whether a server's calls are checked (its `validateArguments`, else the gateway's). */
  readonly enabledFor: (server: string) => boolean;
  readonly validator: InputValidator;
  readonly logger: Logger;
}

/** A call without arguments is checked as `{}`, which is what the upstream will see. */
const NO_ARGUMENTS: Record<string, unknown> = Object.freeze({});

/**
 * Refuses a tool call whose arguments do not match the tool's own `inputSchema`, before the
 * policy judges them and before the upstream sees them: an `isError` result naming the tool, the
 * property and what was wrong, and an `invalid_arguments` audit record. A valid call passes on as
 * the same message object.
 *
 * A schema the gateway cannot compile safely (too large or deep, a catastrophic pattern, a remote
 * `$ref`, not valid JSON Schema) leaves that tool's calls unchecked, with one warning per tool
 * definition in the log. That is fail-open, on purpose: the schema is the upstream's own, and an
 * upstream can always declare a lax schema for its own tool, so refusing gains nothing against
 * it, while it would make the tool unusable; the upstream still validates what it receives, and
 * the policy still judges the call. Data that cannot be checked (a pattern refuses a very long
 * string) is the caller's, not the upstream's, and is refused: validation stopped part-way, so a
 * string-for-number after that point would otherwise slip through.
 */
export function createValidateStage(options: ValidateStageOptions): Stage {
  const { validator, logger } = options;
  // One warning per tool definition (a refreshed list brings a new one), not one per call.
  const warned = new WeakSet<object>();
  return function validate(call, next) {
    const { definition } = call;
    if (call.kind !== 'tools/call' || definition === undefined || !options.enabledFor(call.server)) {
      return next(call);
    }
    const verdict = validator.check(definition.inputSchema, call.arguments ?? NO_ARGUMENTS);
    if (verdict.kind === 'valid') return next(call);
    if (verdict.kind === 'unverifiable') {
      if (!warned.has(definition)) {
        warned.add(definition);
        logger.warn(
          `tool "${call.target}" on server "${call.server}": its arguments are not validated ` +
            `(${verdict.reason}); its calls reach the policy and the upstream unchecked`,
        );
      }
      return next(call);
    }
    // Refused before the policy was asked, as a pin refusal is.
    call.record.decision = { effect: 'deny', rule: null };
    return Promise.reject(
      new InvalidArgumentsError({
        server: call.server,
        tool: call.target,
        problem: verdict.problem,
        kind: verdict.kind,
      }),
    );
  };
}
