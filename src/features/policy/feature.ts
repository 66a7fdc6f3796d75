import { readFileSync } from 'node:fs';
import { formatConfigIssue } from '../../config/issues.js';
import type { WardenConfig } from '../../config/types.js';
import type { PolicyLoadEvent, PolicyRejectEvent } from '../../core/events.js';
import type { Feature } from '../../core/routing/feature.js';
import type { Logger } from '../../core/logger.js';
import { sha256Hex } from '../../lib/hash.js';
import { lintPolicies } from './deadRules.js';
import { createPolicyEngine, type PolicyEngine } from './engine.js';
import { loadPolicies } from './loadPolicies.js';
import { policyVersion, watchPolicies } from './policyWatcher.js';
import { createPolicyStage, type PolicyStageOptions } from './stage.js';
import type { PolicySet } from './types.js';
import { shownByPolicy } from './visibility.js';

export interface PolicyDeps {
  /** The policies loaded at start (an invalid set never gets this far). */
  readonly policies: PolicySet;
  readonly logger: Logger;
  /** A refusal the config makes before any rule is asked (see PolicyStageOptions). */
  readonly refusedByConfig?: PolicyStageOptions['refusedByConfig'];
  /** Writes a policy record to the audit trail (the gateway adds its session). */
  readonly record: (event: Omit<PolicyLoadEvent, 'session'> | Omit<PolicyRejectEvent, 'session'>) => void;
}

/**
 * Allow, deny or confirm by the rules of the policy files, reloaded while serving. Tools the
 * policy denies whatever the arguments are left out of the host's list.
 */
export function createPolicy(
  config: WardenConfig,
  deps: PolicyDeps,
): Feature & {
  engine(): PolicyEngine;
  /**
   * The managed settings now name `managed` as their policy files (tried before the user's): loads
   * them with the user's, puts them in force and watches them. Throws `ConfigError` when they
   * cannot be used; the policies in force then stay.
   */
  retarget(managed: readonly string[]): Promise<void>;
} {
  let engine = createPolicyEngine(deps.policies);
  warnDeadRules(deps.policies);
  /** Every policy file in force, the managed ones first, and which of them are managed. */
  let files = config.policies;
  let managedFiles = config.managed?.policies;
  let relistHost: () => void = () => {};
  let watcher: { close(): void } | undefined;
  let closed = false;
  const current = () => engine;
  const trusted = new Map(config.servers.map((s) => [s.name, s.trusted]));
  const shown = shownByPolicy(current, config.servers);
  const recordPolicies = (set: PolicySet): void => {
    for (const file of set.files)
      deps.record({
        type: 'policy_load',
        file: file.file,
        sha256: fileSha256(file.file),
        rules: file.rules.length,
      });
  };
  return {
    engine: current,
    stage: {
      name: 'policy',
      run: createPolicyStage({
        engine: current,
        trusted: (server) => trusted.get(server) ?? false,
        ...(deps.refusedByConfig && { refusedByConfig: deps.refusedByConfig }),
      }),
    },
    visible: shown,
    started: () => recordPolicies(deps.policies),
    watch: ({ relist }) => {
      relistHost = relist;
      watch();
      return {
        close() {
          closed = true;
          watcher?.close();
        },
      };
    },
    async retarget(managed) {
      const next = [...managed, ...files.slice(managedFiles?.length ?? 0)];
      const set = await loadPolicies(next, { managed });
      files = next;
      managedFiles = managed;
      inForce(createPolicyEngine(set), set, policyVersion(set));
      if (!closed) watch();
    },
  };

  /**
   * Rules that can never match, the findings `check` refuses with exit 2. Served with a warning,
   * not refused: such a rule allows and denies nothing, so the rules around it still decide
   * every call as written, and refusing would take every server from the host (or, on reload,
   * keep rules the user meant to replace) over a rule that changes nothing. The warning names
   * the file and line so the rule can be fixed.
   */
  function warnDeadRules(set: PolicySet): void {
    for (const issue of lintPolicies(config, set))
      deps.logger.warn(
        `policy rule can never match (mcp-warden check fails on it): ${formatConfigIssue(issue)}`,
      );
  }

  function inForce(next: PolicyEngine, set: PolicySet, version: string): void {
    engine = next;
    warnDeadRules(set);
    recordPolicies(set);
    deps.logger.info(`policies reloaded from ${files.join(', ')}; in force: ${version}`);
    relistHost();
  }

  function watch(): void {
    watcher?.close();
    watcher =
      files.length === 0
        ? undefined
        : watchPolicies({
            files,
            ...(managedFiles && { managed: managedFiles }),
            onReload: inForce,
            onReject: (message) => {
              deps.logger.error(
                `a policy change was rejected; the previous policies stay in force:\n${message}`,
              );
              deps.record({ type: 'policy_reject', file: files.join(', '), error: message });
            },
          });
  }
}

/** The content hash of a config or policy file, so the trail shows exactly which version ruled. */
export function fileSha256(file: string): string {
  try {
    return sha256Hex(readFileSync(file, 'utf8'));
  } catch {
    return 'unreadable';
  }
}
