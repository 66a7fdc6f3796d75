import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { WardenConfig } from '../config/types.js';
import { WardenError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { describePrincipal, type Principal } from '../core/principal.js';
import {
  createPolicyEngine,
  describeGuardrailEntry,
  readAnnotations,
  type Explanation,
  type PolicySet,
} from '../features/policy/index.js';
import { collectTools } from './tools.js';
import type { FlowLabel } from '../config/types.js';
import { requestLabels } from '../features/flowControl/feature.js';
import { configLevels, summarizeGuardrails, type GuardrailsSummary } from '../features/guardrails/feature.js';

export interface ExplainRequest {
  readonly config: WardenConfig;
  readonly policies: PolicySet;
  readonly exposedName: string;
  readonly arguments: Record<string, unknown> | undefined;
  readonly logger: Logger;
  readonly version: string;
  /** Who the call is explained for (rules may match on the principal); default: nobody known. */
  readonly principal?: Principal;
}

export interface ExplainReport {
  readonly exposedName: string;
  readonly server: string;
  readonly tool: string;
  /** Whether the tool's definition came from the running upstream (else: not known, cautious defaults). */
  readonly definitionFrom: 'upstream' | 'name';
  readonly trusted: boolean;
  readonly annotations: ReturnType<typeof readAnnotations>;
  readonly hiddenFromList: boolean;
  readonly explanation: Explanation;
  readonly principal?: Principal;
  /** The tool's flow labels (its server's, the policy files' `labels:` entries', its annotations'). */
  readonly labels: readonly FlowLabel[];
  /** The `labels:` entries that gave some of them. */
  readonly labelEntries: readonly string[];
  /** What result guardrails do with the tool's result, and which setting or entry says so. */
  readonly guardrails: GuardrailsSummary;
}

/**
 * Which server and tool an exposed name means, from the config alone: `<namespace><sep><tool>`
 * for the longest matching namespace. Names the gateway sanitized or shortened cannot be read
 * back this way; those need the upstream's list.
 */
function resolveByName(config: WardenConfig, exposed: string): { server: string; tool: string } | undefined {
  const { separator } = config.gateway.naming;
  const candidates = config.servers
    .filter((s) => s.namespace !== null && exposed.startsWith(s.namespace + separator))
    .sort((a, b) => b.namespace!.length - a.namespace!.length);
  const match = candidates[0];
  if (match !== undefined)
    return { server: match.name, tool: exposed.slice(match.namespace!.length + separator.length) };
  const bare = config.servers.filter((s) => s.namespace === null);
  return bare.length === 1 ? { server: bare[0]!.name, tool: exposed } : undefined;
}

/**
 * `mcp-warden policy explain`: a dry run of the policy for one call. The upstreams are started
 * only when the answer depends on them: a trusted server's annotations (untrusted ones are read
 * cautiously whatever they say), or a name that cannot be read back from the config.
 */
export async function explainPolicy(request: ExplainRequest): Promise<ExplainReport> {
  const { config, exposedName } = request;
  const byName = resolveByName(config, exposedName);
  const needsUpstream =
    byName === undefined || config.servers.find((s) => s.name === byName.server)?.trusted === true;
  let server = byName?.server;
  let tool = byName?.tool;
  let definition: Tool | undefined;
  if (needsUpstream) {
    const { entries } = await collectTools({ config, logger: request.logger, version: request.version });
    const entry = entries.find((e) => e.exposed === exposedName);
    if (entry !== undefined) {
      server = entry.server;
      tool = entry.item.name;
      definition = entry.item;
    }
  }
  if (server === undefined || tool === undefined)
    throw new WardenError('UNKNOWN_TOOL', `no tool is exposed as "${exposedName}" by this config`);
  const entry = config.servers.find((s) => s.name === server);
  const trusted = entry?.trusted ?? false;
  const engine = createPolicyEngine(request.policies);
  const input = { server, tool, annotations: definition?.annotations, trusted };
  const byPolicy = engine.labelsOf({ ...input, arguments: request.arguments });
  return {
    exposedName,
    server,
    tool,
    definitionFrom: definition === undefined ? 'name' : 'upstream',
    trusted,
    annotations: readAnnotations(definition?.annotations, trusted),
    hiddenFromList: engine.isHiddenFromList(input),
    explanation: engine.explain({
      ...input,
      arguments: request.arguments,
      ...(request.principal && { principal: request.principal }),
    }),
    ...(request.principal && { principal: request.principal }),
    labels: requestLabels(entry?.labels, byPolicy.labels, { kind: 'tools/call', definition }),
    labelEntries: byPolicy.entries,
    guardrails: summarizeGuardrails([
      ...engine
        .guardrailsOf({
          ...input,
          arguments: request.arguments,
          ...(request.principal && { principal: request.principal }),
        })
        .map((found) => ({ settings: found.rule.settings, from: describeGuardrailEntry(found) })),
      ...configLevels(config.guardrails, entry, tool),
    ]),
  };
}

export function formatExplanation(report: ExplainReport): string {
  const { decision, trace } = report.explanation;
  const where = decision.source === null ? '' : ` (${decision.source.file}:${decision.source.line})`;
  const hints = Object.entries(report.annotations)
    .map(([name, reading]) => `${name}=${String((reading as { value: boolean }).value)}`)
    .join(', ');
  const lines = [
    `${report.exposedName} → server "${report.server}", tool "${report.tool}"`,
    `annotations: ${hints} (${report.trusted ? 'trusted server' : 'untrusted server: cautious defaults'}${
      report.definitionFrom === 'name' ? '; tool definition not fetched' : ''
    })`,
    ...(report.principal === undefined
      ? []
      : [
          `principal: ${describePrincipal(report.principal)}${
            report.principal.claims === undefined ? '' : ` ${JSON.stringify(report.principal.claims)}`
          }`,
        ]),
    `decision: ${decision.effect.toUpperCase()} by ${decision.ruleId === null ? 'the default' : `rule "${decision.ruleId}"`}${where}${decision.layer === undefined ? '' : `, ${decision.layer} layer`}`,
    `reason: ${decision.reason}`,
    `shown in tools/list: ${report.hiddenFromList ? 'no (denied whatever the arguments)' : 'yes'}`,
    `flow labels: ${report.labels.length === 0 ? 'none' : report.labels.join(', ')}${
      report.labelEntries.length === 0 ? '' : ` (labels entries: ${report.labelEntries.join(', ')})`
    }`,
    `guardrails: ${describeGuardrails(report.guardrails)}`,
    'rules tried:',
    ...(trace.length === 0
      ? ['  (none)']
      : trace.map(
          (t, i) =>
            `  ${i + 1}. ${t.matched ? 'MATCH   ' : 'no match'} rule "${t.ruleId}" (${t.source.file}:${t.source.line}): ${t.why}`,
        )),
  ];
  return `${lines.join('\n')}\n`;
}

/** `secrets redact (guardrails); pii audit (guardrails); email off (policy entry "x" (p.yaml:3))` */
function describeGuardrails(summary: GuardrailsSummary): string {
  const from = (where: string | undefined) => (where === undefined ? '' : ` (${where})`);
  if (summary.groups.every((g) => g.from === undefined) && summary.categories.length === 0)
    return 'off (no guardrails section in the config, no policy entry)';
  return [
    ...summary.groups.map((g) => `${g.group} ${g.action}${from(g.from)}`),
    ...summary.categories.map((c) => `${c.category} ${c.action}${from(c.from)}`),
  ].join('; ');
}
