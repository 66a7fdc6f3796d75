import type { FlowConfig, FlowLabel } from '../../config/types.js';
import { DeniedError } from '../../core/errors.js';
import type { FlowLineage, FlowRecord } from '../../core/events.js';
import type { Decision } from '../../core/pipeline/decision.js';
import type { RoutedMessage, Stage } from '../../core/pipeline/types.js';
import { principalKey } from '../../core/principal.js';
import { completesTrifecta, type FlowSessions } from './sessions.js';

export interface FlowStageOptions {
  readonly sessions: FlowSessions;
  /** The labels a request carries (its server's, the policy files', its annotations'). */
  readonly labelsOf: (message: RoutedMessage) => readonly FlowLabel[];
  /** `flow.trifecta` in force. */
  readonly trifecta: FlowConfig['trifecta'];
  /** Names the setting in reasons: `flow.trifecta in proxy.config.yaml`. */
  readonly setting: string;
}

/** The requests whose results bring content into the host session. */
const BRINGS_CONTENT = new Set<RoutedMessage['kind']>(['tools/call', 'resources/read', 'prompts/get']);

/**
 * The host session a message belongs to: its principal's on a listener (every connection of one
 * principal shares what it has read), the one host connection's otherwise.
 */
export function sessionKey(message: RoutedMessage): string {
  return message.principal === undefined ? '' : principalKey(message.principal);
}

/**
 * Tracks which labels reach each host session through results, and decides a tool call that
 * would complete the lethal trifecta (untrusted content, private data, a way out), as
 * `flow.trifecta` says: ask the user (through the confirmation stage inside this one), refuse, or
 * only record. A request without labels passes untouched.
 */
export function createFlowStage(options: FlowStageOptions): Stage {
  const { sessions } = options;
  return function flow(message, next) {
    if (!BRINGS_CONTENT.has(message.kind)) return next(message);
    const labels = options.labelsOf(message);
    if (labels.length === 0) return next(message);
    const key = sessionKey(message);
    const record: FlowRecord = { labels: [...labels], ...(key !== '' && { sessionKey: key }) };
    message.record.flow = record;
    if (message.kind === 'tools/call' && completesTrifecta(sessions.seen(key), labels)) {
      const lineage = sessions.lineage(key, [...(sessions.seen(key) ?? [])]);
      record.trifecta = options.trifecta;
      record.lineage = lineage;
      const why = trifectaReason(message, labels, lineage);
      if (options.trifecta === 'deny') {
        message.record.decision = { effect: 'deny', rule: null };
        return Promise.reject(
          new DeniedError(`${why} Refused by ${options.setting}: the call was not run.`, null),
        );
      }
      if (options.trifecta === 'confirm') {
        message.decision = trifectaDecision(message.decision, why, options.setting);
        message.record.decision = { effect: 'confirm', rule: null };
      }
    }
    return next(message).then((outcome) => {
      if (broughtContent(message.kind, outcome.result))
        record.source = sessions.record(key, labels, {
          server: message.server,
          target: message.target,
          method: message.kind,
        });
      return outcome;
    });
  };
}

/** Whether a result is one whose content reached the host (not an error, a question or a task). */
function broughtContent(kind: RoutedMessage['kind'], result: Record<string, unknown>): boolean {
  if (result['resultType'] !== undefined && result['resultType'] !== 'complete') return false;
  switch (kind) {
    case 'tools/call':
      return (
        result['isError'] !== true &&
        (Array.isArray(result['content']) || result['structuredContent'] !== undefined)
      );
    case 'resources/read':
      return Array.isArray(result['contents']);
    default:
      return Array.isArray(result['messages']);
  }
}

/** The decision that asks the user, keeping the policy's own reason when it asked too. */
function trifectaDecision(policy: Decision | undefined, why: string, setting: string): Decision {
  const also = policy?.effect === 'confirm' ? ` The policy asks too: ${policy.reason}` : '';
  return { effect: 'confirm', ruleId: null, reason: `${why}${also}`, source: null, by: setting };
}

const WHAT: Record<FlowLabel, string> = {
  untrusted: 'untrusted content (which may carry someone else’s instructions)',
  private: 'private data',
  egress: 'a way to send data out',
};

/** Why a call completes the trifecta, naming the earlier requests that brought each label. */
function trifectaReason(
  message: RoutedMessage,
  labels: readonly FlowLabel[],
  lineage: readonly FlowLineage[],
): string {
  const parts: string[] = [];
  for (const label of ['untrusted', 'private', 'egress'] as const) {
    const from = lineage.filter((entry) => entry.label === label);
    if (from.length > 0) parts.push(`${WHAT[label]} from ${from.map(describeSource).join(', ')}`);
    else if (labels.includes(label)) parts.push(`${WHAT[label]} through this call`);
  }
  return (
    `This call of tool "${message.target}" on server "${message.server}" would complete the lethal trifecta in this session: ` +
    `${parts.join('; ')}. Together these let instructions hidden in that content send your private data out.`
  );
}

function describeSource(entry: FlowLineage): string {
  const what =
    entry.method === 'tools/call'
      ? `tool "${entry.target}"`
      : entry.method === 'resources/read'
        ? `resource "${entry.target}"`
        : `prompt "${entry.target}"`;
  return `${what} on server "${entry.server}" (source #${entry.source}, ${entry.at})`;
}
