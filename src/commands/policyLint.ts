import type { Prompt, Resource, Tool } from '@modelcontextprotocol/sdk/types.js';
import { createSandboxes } from '../features/sandbox/index.js';
import type { ConfigIssue } from '../config/issues.js';
import type { WardenConfig } from '../config/types.js';
import { rebuildCatalogs } from '../core/catalog/catalogs.js';
import { NamedCatalog } from '../core/catalog/namedCatalog.js';
import type { Logger } from '../core/logger.js';
import { UpstreamPool } from '../core/upstreams/upstreamPool.js';
import type { Upstream } from '../core/upstreams/upstream.js';
import { announceStart, progressHooks, type StartupProgress } from './progress.js';
import { matchesGlob } from '../lib/glob.js';
import { createPolicyEngine } from '../features/policy/engine.js';
import { normalizeResourceUri } from '../features/policy/resourceUri.js';
import { forEachRule } from '../features/policy/deadRules.js';
import type { PolicyRule, PolicySet } from '../features/policy/types.js';

export { lintPolicies } from '../features/policy/deadRules.js';

/**
 * With the upstreams started (as `tools` starts them): tool, prompt and resource globs that
 * match nothing any server offers, and tools that no rule decides (the default does). Warnings:
 * a server may offer more later, or only to some clients.
 */
export async function lintPoliciesLive(
  config: WardenConfig,
  policies: PolicySet,
  options: { readonly logger: Logger; readonly version: string; readonly progress?: StartupProgress },
): Promise<ConfigIssue[]> {
  const { progress } = options;
  const sandboxes = createSandboxes({ policies: () => policies });
  const pool = new UpstreamPool({
    config,
    logger: options.logger,
    clientInfo: { name: 'mcp-warden', version: options.version },
    onListsChanged: () => {},
    ...(progress && progressHooks(progress)),
    wrapFor: sandboxes.wrapFor,
  });
  if (progress !== undefined) announceStart(pool.upstreams, progress);
  try {
    await pool.startEach();
    progress?.done();
    return liveIssues(config, policies, pool.upstreams);
  } finally {
    await pool.stop();
    await sandboxes.close();
  }
}

type Offered = Pick<Upstream, 'name' | 'config' | 'tools' | 'listed' | 'capabilities'>;

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
    check('prompt', rule.match.prompt, (u) => u.listed.prompts.map((p: Prompt) => p.name));
    check('resource', rule.match.resource, (u) =>
      u.listed.resources
        .map((r: Resource) => normalizeResourceUri(r.uri))
        .concat(u.listed.resourceTemplates.map((t) => t.uriTemplate)),
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
