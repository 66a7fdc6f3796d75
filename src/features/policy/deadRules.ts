import type { ConfigIssue } from '../../config/issues.js';
import type { WardenConfig } from '../../config/types.js';
import { didYouMean } from '../../lib/didYouMean.js';
import { matchesGlob } from '../../lib/glob.js';
import type { PolicyRule, PolicySet } from './types.js';

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

/** Visits every rule of every file, with a way to place an issue at one of its keys. */
export function forEachRule(
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
