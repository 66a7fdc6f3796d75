import type { Prompt, Resource, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ConfigIssue } from '../config/issues.js';
import type { WardenConfig } from '../config/types.js';
import { rebuildCatalogs } from '../core/catalog/catalogs.js';
import { NamedCatalog } from '../core/catalog/namedCatalog.js';
import type { Logger } from '../core/logger.js';
import { UpstreamPool } from '../core/upstreams/upstreamPool.js';
import type { Upstream } from '../core/upstreams/upstream.js';
import { didYouMean } from '../lib/didYouMean.js';
import { matchesGlob } from '../lib/glob.js';
import { createPolicyEngine } from '../features/policy/engine.js';
import { normalizeResourceUri } from '../features/policy/resourceUri.js';
import type { PolicyRule, PolicySet } from '../features/policy/types.js';

/**
 * Rules that can never match, found without starting anything: a server glob that names no
 * configured server, and a tool glob written as the exposed name (`memory__delete_*`) instead of
 * the server's own (`delete_*`), the most natural mistake to make. Each is an error: the rule
 * reads as if it protects something, and it protects nothing.
 */
export function lintPolicies(config: WardenConfig, policies: PolicySet): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const servers = config.servers.map((s) => s.name);
  const namespaces = config.servers.flatMap((s) =>
    s.namespace === null ? [] : [{ server: s.name, ns: s.namespace }],
  );
  const separator = config.gateway.naming.separator;
  forEachRule(policies, (rule, at) => {
    for (const glob of rule.match.server ?? []) {
      if (servers.some((name) => matchesGlob(glob, name))) continue;
      const guess = didYouMean(glob, servers);
      issues.push(
        at(
          'match.server',
          `"${glob}" matches no server in the config (${listOf(servers)})${guess ? `; did you mean "${guess}"?` : ''}: the rule can never match`,
        ),
      );
    }
    for (const glob of rule.match.tool ?? []) {
      const exposed = namespaces.find(({ ns }) => glob.startsWith(`${ns}${separator}`));
      if (exposed === undefined) continue;
      const own = glob.slice(exposed.ns.length + separator.length);
      issues.push(
        at(
          'match.tool',
          `"${glob}" is the name the host sees; rules match the server's own tool name: write server: ${exposed.server} and tool: "${own}"`,
        ),
      );
    }
    for (const glob of rule.match.prompt ?? []) {
      const exposed = namespaces.find(({ ns }) => glob.startsWith(`${ns}${separator}`));
      if (exposed === undefined) continue;
      issues.push(
        at(
          'match.prompt',
          `"${glob}" is the name the host sees; rules match the server's own prompt name: write server: ${exposed.server} and prompt: "${glob.slice(exposed.ns.length + separator.length)}"`,
        ),
      );
    }
  });
  return issues;
}

/**
 * With the upstreams started (as `tools` starts them): tool, prompt and resource globs that
 * match nothing any server offers, and tools that no rule decides (the default does). Warnings:
 * a server may offer more later, or only to some clients.
 */
export async function lintPoliciesLive(
  config: WardenConfig,
  policies: PolicySet,
  options: { readonly logger: Logger; readonly version: string },
): Promise<ConfigIssue[]> {
  const pool = new UpstreamPool({
    config,
    logger: options.logger,
    clientInfo: { name: 'mcp-warden', version: options.version },
    onListsChanged: () => {},
  });
  try {
    await pool.start();
    return liveIssues(config, policies, pool.upstreams);
  } finally {
    await pool.stop();
  }
}

type Offered = Pick<
  Upstream,
  'name' | 'config' | 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'capabilities'
>;

/** The live findings, from what each upstream listed. */
export function liveIssues(
  config: WardenConfig,
  policies: PolicySet,
  upstreams: readonly Offered[],
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const serversOf = (rule: PolicyRule) =>
    upstreams.filter(
      (u) => rule.match.server === null || rule.match.server.some((g) => matchesGlob(g, u.name)),
    );
  forEachRule(policies, (rule, at) => {
    const offered = serversOf(rule);
    const check = (
      key: string,
      globs: readonly string[] | null,
      names: (u: Offered) => readonly string[],
    ) => {
      for (const glob of globs ?? []) {
        if (offered.some((u) => names(u).some((name) => matchesGlob(glob, name)))) continue;
        issues.push(at(`match.${key}`, `"${glob}" matches no ${key} the servers it names offer now`));
      }
    };
    check('tool', rule.match.tool, (u) => u.tools.map((t: Tool) => t.name));
    check('prompt', rule.match.prompt, (u) => u.prompts.map((p: Prompt) => p.name));
    check('resource', rule.match.resource, (u) =>
      u.resources
        .map((r: Resource) => normalizeResourceUri(r.uri))
        .concat(u.resourceTemplates.map((t) => t.uriTemplate)),
    );
  });
  // Tools that reach the default: every rule passes them by, whatever the arguments.
  const engine = createPolicyEngine(policies);
  const catalog = new NamedCatalog<Tool>('tools', config.gateway.naming, () => {});
  rebuildCatalogs({ tools: catalog }, upstreams, ['tools']);
  const trusted = new Map(config.servers.map((s) => [s.name, s.trusted]));
  const defaulted = catalog.entries.filter(
    (entry) =>
      engine.candidates({
        server: entry.server,
        tool: entry.item.name,
        annotations: entry.item.annotations,
        trusted: trusted.get(entry.server) ?? false,
      }).length === 0,
  );
  if (defaulted.length > 0 && policies.files.length > 0) {
    const first = policies.files[0]!;
    issues.push({
      file: first.file,
      line: first.default?.source.line ?? 0,
      column: first.default?.source.column ?? 0,
      path: 'default',
      message: `no rule decides ${defaulted.length === 1 ? 'this tool' : `these ${defaulted.length} tools`}, so the default does: ${defaulted.map((e) => e.exposed).join(', ')}`,
    });
  }
  return issues;
}

function forEachRule(
  policies: PolicySet,
  visit: (rule: PolicyRule, at: (key: string, message: string) => ConfigIssue) => void,
): void {
  for (const file of policies.files) {
    file.rules.forEach((rule, index) =>
      visit(rule, (key, message) => ({
        file: rule.source.file,
        line: rule.source.line,
        column: rule.source.column,
        path: `rules[${index}].${key}`,
        message,
      })),
    );
  }
}

function listOf(names: readonly string[]): string {
  return names.length === 0 ? 'none' : names.join(', ');
}
