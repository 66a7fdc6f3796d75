import path from 'node:path';
import { FLOW_LABELS, type FlowLabel, type ServerConfig, type WardenConfig } from '../../config/types.js';
import { DEFAULTS } from '../../config/defaults.js';
import type { RoutedMessage } from '../../core/pipeline/types.js';
import type { Feature } from '../../core/routing/feature.js';
import type { FlowSessions } from './sessions.js';
import { createFlowStage } from './stage.js';

export interface FlowDeps {
  /** What each host session has seen; shared with the policy's `session` conditions. */
  readonly sessions: FlowSessions;
  /** The labels the policy files' `labels:` entries give a request. */
  readonly policyLabels: (message: RoutedMessage) => readonly FlowLabel[];
}

/**
 * Flow control: each request's labels are its server's (`labels:` in the config), the policy
 * files' and its annotations'; the labels of successful results are remembered per host session,
 * and a tool call that would complete the lethal trifecta is asked about, refused or recorded as
 * `flow.trifecta` says.
 */
export function createFlowControl(config: WardenConfig, deps: FlowDeps): Feature {
  let byServer = serverLabels(config.servers);
  const labelsOf = (message: RoutedMessage): readonly FlowLabel[] =>
    requestLabels(byServer.get(message.server), deps.policyLabels(message), message);
  return {
    stage: {
      name: 'flow',
      run: createFlowStage({
        sessions: deps.sessions,
        labelsOf,
        trifecta: (config.flow ?? DEFAULTS.flow).trifecta,
        setting: `flow.trifecta in ${path.basename(config.file)}`,
      }),
    },
    serversChanged: (servers) => {
      byServer = serverLabels(servers);
    },
  };
}

function serverLabels(servers: readonly ServerConfig[]): Map<string, readonly FlowLabel[]> {
  return new Map(
    servers.flatMap((s) => (s.labels && s.labels.length > 0 ? [[s.name, s.labels] as const] : [])),
  );
}

/**
 * A request's labels, in their fixed order. Annotations only ever add: a tool that says
 * `openWorldHint: true` reaches outside (it reads what others wrote, and what it sends leaves), so
 * it is untrusted and egress whoever says so, since a server that claims more reach only makes
 * the gateway more careful. A hint that is false or left out takes nothing away from the labels
 * of the config or the policy. (The spec reads a left-out openWorldHint as true; labelling every
 * tool without annotations so would make the trifecta ask about nearly every call, and questions
 * asked all the time stop being read.)
 */
export function requestLabels(
  server: readonly FlowLabel[] | undefined,
  policy: readonly FlowLabel[],
  message: Pick<RoutedMessage, 'kind' | 'definition'>,
): readonly FlowLabel[] {
  const openWorld = message.kind === 'tools/call' && message.definition?.annotations?.openWorldHint === true;
  if (!openWorld && policy.length === 0) return server ?? NONE;
  const all = new Set<FlowLabel>([...(server ?? []), ...policy]);
  if (openWorld) {
    all.add('untrusted');
    all.add('egress');
  }
  return FLOW_LABELS.filter((label) => all.has(label));
}

const NONE: readonly FlowLabel[] = Object.freeze([]);
