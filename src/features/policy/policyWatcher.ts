import path from 'node:path';
import { describeError } from '../../lib/describeError.js';
import { watchFiles } from '../../lib/watchFiles.js';
import { createPolicyEngine, type PolicyEngine } from './engine.js';
import { loadPolicies } from './loadPolicies.js';
import type { PolicySet } from './types.js';

export interface PolicyWatcherOptions {
  readonly files: readonly string[];
  /** Which of `files` are the managed settings' (see PolicySet.managedFiles). */
  readonly managed?: readonly string[];
  /** A new, valid set of policies is in force; `version` says which (see `policyVersion`). */
  readonly onReload: (engine: PolicyEngine, set: PolicySet, version: string) => void;
  /** A changed file is invalid: the previous policies stay in force. */
  readonly onReject: (message: string) => void;
  /**
   * How long the files must stay unchanged before they are read: editors and scripts write a
   * file in several steps, and a file caught half-written may be valid YAML that says less than
   * the whole (`default: allow` without the rules after it). Default 200 ms.
   */
  readonly debounceMs?: number;
  /** How often the folders are looked at, to follow a folder deleted and created again. Default 500 ms. */
  readonly pollMs?: number;
}

export interface PolicyWatcher {
  close(): void;
}

/**
 * Which policy files are in force, for the log: each file's name and the first 12 hex digits of
 * the SHA-256 of the text that was parsed (`policy_load` audit records carry the whole hash).
 */
export function policyVersion(set: PolicySet): string {
  return set.files.map((file) => `${path.basename(file.file)} sha256:${file.sha256.slice(0, 12)}`).join(', ');
}

/**
 * Reloads the policy files when they change on disk (see `watchFiles`: their folders are
 * watched, followed when deleted and created again or replaced, and a change is read only once
 * the files have been stable for `debounceMs`). Never falls back to allow-all: a version that
 * cannot be read or parsed is reported and ignored, and the previous one stays in force.
 */
export function watchPolicies(options: PolicyWatcherOptions): PolicyWatcher {
  let generation = 0;
  const reload = async () => {
    const mine = ++generation;
    try {
      const set = await loadPolicies(options.files, { managed: options.managed });
      // A newer change started loading meanwhile: let it decide.
      if (mine === generation) options.onReload(createPolicyEngine(set), set, policyVersion(set));
    } catch (error) {
      if (mine === generation) options.onReject(describeError(error));
    }
  };
  return watchFiles({
    files: options.files,
    what: 'policy changes',
    onChange: () => void reload(),
    onError: options.onReject,
    debounceMs: options.debounceMs ?? 200,
    ...(options.pollMs !== undefined && { pollMs: options.pollMs }),
  });
}
