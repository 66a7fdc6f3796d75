import type { GuardrailAction } from '../../config/types.js';
import { DeniedError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Principal } from '../../core/principal.js';
import type { RoutedMessage, Stage } from '../../core/pipeline/types.js';
import { describeError } from '../../lib/describeError.js';
import type { Detector } from './detector.js';
import { guardResult, type GuardFinding } from './guardResult.js';
import type { ScannedKind } from './resultText.js';

/** What a guardrails record says (the gateway adds the session). */
export interface GuardedRecord {
  readonly type: 'result_guarded';
  readonly server: string;
  readonly kind: string;
  readonly target: string;
  readonly action: GuardFinding['action'];
  readonly findings: GuardFinding[];
}

export interface GuardrailsStageOptions {
  readonly detector: Detector;
  /**
   * The action for a category in the result of `message`; undefined when nothing in it is
   * scanned for.
   */
  readonly actionsFor: (message: RoutedMessage) => ((category: string) => GuardrailAction) | undefined;
  readonly record: (event: GuardedRecord, principal?: Principal) => void;
  readonly logger: Logger;
}

/** The id a block names as its rule, so the audit record of the call says what refused it. */
export const GUARDRAILS_RULE = 'guardrails';

/**
 * Scans each result on its way to the host, inside result repair (so a redacted
 * `structuredContent` that no longer fits its tool's `outputSchema` is repaired like any invalid
 * one) and outside the concurrency limit (the upstream's slot is free while the gateway scans).
 *
 * A result in which no rule fires, or only rules set to `audit`, is passed on as the same
 * outcome, so the host gets the upstream's own bytes; only a redacted result is a changed one.
 */
export function createGuardrailsStage(options: GuardrailsStageOptions): Stage {
  return function guardrails(message, next) {
    const kind = scannedKind(message);
    const actionFor = kind === undefined ? undefined : options.actionsFor(message);
    if (kind === undefined || actionFor === undefined) return next(message);
    return next(message).then(async (outcome) => {
      const { resultType } = outcome.result as { resultType?: unknown };
      // An interim answer (the server asks for input first, or answers with a task) is scanned
      // when its final result comes.
      if (resultType === 'input_required' || resultType === 'task') return outcome;
      let guarded;
      try {
        guarded = await guardResult(kind, outcome.result, options.detector, actionFor);
      } catch (error) {
        // A result that could not be scanned might hold anything: it is withheld, not passed.
        options.logger.error(`could not scan the result of ${message.exposedName}: ${describeError(error)}`);
        throw new DeniedError(
          `[mcp-warden] The result of ${message.exposedName} was withheld: it could not be checked for secrets.`,
          GUARDRAILS_RULE,
        );
      }
      if (guarded.findings.length === 0) return outcome;
      const action = guarded.blocked ? 'block' : guarded.redacted !== undefined ? 'redact' : 'audit';
      options.record(
        {
          type: 'result_guarded',
          server: message.server,
          kind,
          target: message.target,
          action,
          findings: [...guarded.findings],
        },
        message.principal,
      );
      if (action !== 'audit')
        options.logger.info(
          `guardrails: ${action} in the result of ${message.exposedName}: ${summary(guarded.findings)}`,
        );
      if (guarded.blocked) {
        const blocked = guarded.findings.filter((f) => f.action === 'block');
        throw new DeniedError(
          `[mcp-warden] The result of ${message.exposedName} was withheld: it holds ${summary(blocked)}. Ask the user to look at it outside the conversation.`,
          GUARDRAILS_RULE,
        );
      }
      return guarded.redacted === undefined
        ? outcome
        : outcome.changed(guarded.redacted as Record<string, unknown>);
    });
  };
}

/** The kind of answer a message gets, when it is one that carries text for the model. */
function scannedKind(message: RoutedMessage): ScannedKind | undefined {
  switch (message.kind) {
    // A call the host runs as a task is answered with the task: its result is scanned when
    // `tasks/result` fetches it.
    case 'tools/call':
      return message.task?.drivenBy === 'host' ? undefined : 'tools/call';
    case 'tasks/result':
    case 'resources/read':
    case 'prompts/get':
      return message.kind;
    default:
      return undefined;
  }
}

/** `an aws-access-key (content[0].text), 2 × email (structuredContent.to)`: never the values. */
function summary(findings: readonly GuardFinding[]): string {
  return findings.map((f) => `${f.count > 1 ? `${f.count} × ` : ''}${f.category} (${f.location})`).join(', ');
}
