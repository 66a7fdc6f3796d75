import { readFileSync } from 'node:fs';
import { formatConfigIssue } from '../../config/issues.js';
import type { WardenConfig } from '../../config/types.js';
import type { PolicyLoadEvent, PolicyRejectEvent } from '../../core/events.js';
import type { Feature } from '../../core/routing/feature.js';
import type { Logger } from '../../core/logger.js';
import type { RoutedMessage } from '../../core/pipeline/types.js';
import { sha256Hex } from '../../lib/hash.js';
import { lintPolicies } from './deadRules.js';
import { createPolicyEngine, type GuardrailsFound, type LabelsFound, type PolicyEngine } from './engine.js';
import { loadPolicies } from './loadPolicies.js';
import { policyVersion, watchPolicies } from './policyWatcher.js';
import { createPolicyStage, policyInput, type JudgedMessage, type PolicyStageOptions } from './stage.js';
import type { PolicySet } from './types.js';
import { shownByPolicy } from './visibility.js';

export interface PolicyDeps {
  /** The policies loaded at start (an invalid set never gets this far). */
  readonly policies: PolicySet;
  readonly logger: Logger;
  /** A refusal the config makes before any rule is asked (see PolicyStageOptions). */
  readonly refusedByConfig?: PolicyStageOptions['refusedByConfig'];
  /** What each host session has seen, for rules with a `session` condition (flow control). */
  readonly sessionLabels?: PolicyStageOptions['sessionLabels'];
  /** Writes a policy record to the audit trail (the gateway adds its session). */
  readonly record: (event: Omit<PolicyLoadEvent, 'session'> | Omit<PolicyRejectEvent, 'session'>) => void;
}

/** The policy feature: its stage, and what the gateway's other parts ask of the rules in force. */
export interface PolicyFeature extends Feature {
  engine(): PolicyEngine;
  /** The flow labels the policy files' `labels:` entries give a request, and which entries gave them. */
  labelsOf(message: RoutedMessage): LabelsFound;
  /**
   * The `guardrails:` entries that hold for the result of `message`, in order (a task's result
   * as its tool's); empty when none does, or for a message that brings no result to scan.
   */
  guardrailsOf(message: RoutedMessage): readonly GuardrailsFound[];
  /** Whether the policies in force have `guardrails:` entries at all. */
  guarded(): boolean;
  /**
   * The managed settings now name `managed` as their policy files (tried before the user's): loads
   * them with the user's, puts them in force and watches them. Throws `ConfigError` when they
   * cannot be used; the policies in force then stay.
   */
  retarget(managed: readonly string[]): Promise<void>;
  /** The policy set in force. */
  set(): PolicySet;
  /** Calls `listener` with the set that was in force and the new one, each time other policies come into force. */
  onReload(listener: (before: PolicySet, after: PolicySet) => void): void;
}

/**
 * Allow, deny or confirm by the rules of the policy files, reloaded while serving. Tools the
 * policy denies whatever the arguments are left out of the host's list.
 */
export function createPolicy(config: WardenConfig, deps: PolicyDeps): PolicyFeature {
  const state: PolicyState = {
    config,
    deps,
    engine: createPolicyEngine(deps.policies),
    set: deps.policies,
    listeners: [],
    files: config.policies,
    managedFiles: config.managed?.policies,
    relistHost: () => {},
    watcher: undefined,
    closed: false,
  };
  warnDeadRules(state, deps.policies);
  const current = () => state.engine;
  // Whether each server's annotations are believed: an edit of the config may change it.
  let trusted = new Map(config.servers.map((s) => [s.name, s.trusted]));
  let shown = shownByPolicy(current, config.servers);
  return {
    engine: current,
    stage: {
      name: 'policy',
      run: createPolicyStage({
        engine: current,
        trusted: (server) => trusted.get(server) ?? false,
        ...(deps.refusedByConfig && { refusedByConfig: deps.refusedByConfig }),
        ...(deps.sessionLabels && { sessionLabels: deps.sessionLabels }),
      }),
    },
    labelsOf: (message) =>
      !state.engine.labelled || message.kind.startsWith('tasks/')
        ? NO_LABELS
        : state.engine.labelsOf(policyInput(message as JudgedMessage, trusted.get(message.server) ?? false)),
    guardrailsOf(message) {
      if (!state.engine.guarded) return NO_GUARDRAILS;
      const judged: JudgedMessage | undefined =
        message.kind === 'tasks/result'
          ? ({ ...message, kind: 'tools/call' } as JudgedMessage)
          : message.kind.startsWith('tasks/')
            ? undefined
            : (message as JudgedMessage);
      if (judged === undefined) return NO_GUARDRAILS;
      return state.engine.guardrailsOf(policyInput(judged, trusted.get(message.server) ?? false));
    },
    guarded: () => state.engine.guarded,
    visible: (item) => shown(item),
    serversChanged: (servers) => {
      trusted = new Map(servers.map((s) => [s.name, s.trusted]));
      shown = shownByPolicy(current, servers);
    },
    started: () => recordPolicies(deps, deps.policies),
    watch: ({ relist }) => {
      state.relistHost = relist;
      watch(state);
      return {
        close() {
          state.closed = true;
          state.watcher?.close();
        },
      };
    },
    set: () => state.set,
    onReload: (listener) => {
      state.listeners.push(listener);
    },
    async retarget(managed) {
      const next = [...managed, ...state.files.slice(state.managedFiles?.length ?? 0)];
      const set = await loadPolicies(next, { managed });
      state.files = next;
      state.managedFiles = managed;
      inForce(state, createPolicyEngine(set), set, policyVersion(set));
      if (!state.closed) watch(state);
    },
  };
}

const NO_LABELS: LabelsFound = Object.freeze({ labels: [], entries: [] });
const NO_GUARDRAILS: readonly GuardrailsFound[] = Object.freeze([]);

/** What the feature keeps while serving: the engine in force and the files it came from. */
interface PolicyState {
  readonly config: WardenConfig;
  readonly deps: PolicyDeps;
  engine: PolicyEngine;
  set: PolicySet;
  readonly listeners: ((before: PolicySet, after: PolicySet) => void)[];
  /** Every policy file in force, the managed ones first, and which of them are managed. */
  files: readonly string[];
  managedFiles: readonly string[] | undefined;
  relistHost: () => void;
  watcher: { close(): void } | undefined;
  closed: boolean;
}

/** One `policy_load` record per file of the set, with the hash of what was read. */
function recordPolicies(deps: PolicyDeps, set: PolicySet): void {
  for (const file of set.files)
    deps.record({
      type: 'policy_load',
      file: file.file,
      sha256: fileSha256(file.file),
      rules: file.rules.length,
    });
}

/**
 * Rules that can never match, the findings `check` refuses with exit 2. Served with a warning,
 * not refused: such a rule allows and denies nothing, so the rules around it still decide
 * every call as written, and refusing would take every server from the host (or, on reload,
 * keep rules the user meant to replace) over a rule that changes nothing. The warning names
 * the file and line so the rule can be fixed.
 */
function warnDeadRules(state: PolicyState, set: PolicySet): void {
  for (const issue of lintPolicies(state.config, set))
    state.deps.logger.warn(
      `policy rule can never match (mcp-warden check fails on it): ${formatConfigIssue(issue)}`,
    );
}

function inForce(state: PolicyState, next: PolicyEngine, set: PolicySet, version: string): void {
  const before = state.set;
  state.engine = next;
  state.set = set;
  warnDeadRules(state, set);
  recordPolicies(state.deps, set);
  state.deps.logger.info(`policies reloaded from ${state.files.join(', ')}; in force: ${version}`);
  state.relistHost();
  for (const listener of state.listeners) listener(before, set);
}

function watch(state: PolicyState): void {
  const { files, managedFiles, deps } = state;
  state.watcher?.close();
  state.watcher =
    files.length === 0
      ? undefined
      : watchPolicies({
          files,
          ...(managedFiles && { managed: managedFiles }),
          onReload: (next, set, version) => inForce(state, next, set, version),
          onReject: (message) => {
            deps.logger.error(
              `a policy change was rejected; the previous policies stay in force:\n${message}`,
            );
            deps.record({ type: 'policy_reject', file: state.files.join(', '), error: message });
          },
        });
}

/** The content hash of a config or policy file, so the trail shows exactly which version ruled. */
export function fileSha256(file: string): string {
  try {
    return sha256Hex(readFileSync(file, 'utf8'));
  } catch {
    return 'unreadable';
  }
}
