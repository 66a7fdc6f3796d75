import { describeError } from '../../lib/describeError.js';
import { watchFiles } from '../../lib/watchFiles.js';
import { createPolicyEngine, type PolicyEngine } from './engine.js';
import { loadPolicies } from './loadPolicies.js';
import type { PolicySet } from './types.js';

export interface PolicyWatcherOptions {
  readonly files: readonly string[];
  /** A new, valid set of policies is in force. */
  readonly onReload: (engine: PolicyEngine, set: PolicySet) => void;
  /** A changed file is invalid: the previous policies stay in force. */
  readonly onReject: (message: string) => void;
  /** Quiet period after a change before reloading: editors write files in several steps. Default 100 ms. */
  readonly debounceMs?: number;
}

export interface PolicyWatcher {
  close(): void;
}

/**
 * Reloads the policy files when they change on disk (issue 5), watching them as `watchFiles`
 * does (their folders, so files replaced by renaming are seen). Never falls back to allow-all:
 * a bad version is reported and ignored.
 */
export function watchPolicies(options: PolicyWatcherOptions): PolicyWatcher {
  let generation = 0;
  const reload = async () => {
    const mine = ++generation;
    try {
      const set = await loadPolicies(options.files);
      // A newer change started loading meanwhile: let it decide.
      if (mine === generation) options.onReload(createPolicyEngine(set), set);
    } catch (error) {
      if (mine === generation) options.onReject(describeError(error));
    }
  };
  return watchFiles({
    files: options.files,
    what: 'policy changes',
    onChange: () => void reload(),
    onError: options.onReject,
    ...(options.debounceMs !== undefined && { debounceMs: options.debounceMs }),
  });
}
