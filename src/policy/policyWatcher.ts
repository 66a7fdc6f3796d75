import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { describeError } from '../errors.js';
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
 * Reloads the policy files when they change on disk (issue 5). Watches their folders, not the
 * files: editors and `mv` replace a file by renaming over it, which a watch on the old inode
 * never sees. Never falls back to allow-all: a bad version is reported and ignored.
 */
export function watchPolicies(options: PolicyWatcherOptions): PolicyWatcher {
  const names = new Map<string, Set<string>>();
  for (const file of options.files) {
    const dir = path.dirname(file);
    names.set(dir, (names.get(dir) ?? new Set()).add(path.basename(file)));
  }
  let timer: NodeJS.Timeout | undefined;
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
  const watchers: FSWatcher[] = [];
  for (const [dir, files] of names) {
    try {
      const watcher = watch(dir, { persistent: false }, (_event, name) => {
        if (name !== null && !files.has(name.toString())) return;
        clearTimeout(timer);
        timer = setTimeout(() => void reload(), options.debounceMs ?? 100);
      });
      watcher.on('error', (error) =>
        options.onReject(`cannot watch ${dir} for policy changes: ${error.message}`),
      );
      watchers.push(watcher);
    } catch (error) {
      options.onReject(`cannot watch ${dir} for policy changes: ${describeError(error)}`);
    }
  }
  return {
    close() {
      clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
}
