/**
 * Puts edits of the config file in force while serving: the file (and each `envFile` its stdio
 * servers name) is watched, and once an edit has settled it is read, checked whole, and either
 * applied whole (servers added, removed or changed; the call settings) or refused whole, the
 * config in force staying as it was. An edit of `managed.yaml` reads the config as last applied
 * from here, so the two kinds of edit never undo each other.
 */
import { diffServers, restartNeeded } from '../config/configDiff.js';
import { ConfigError } from '../config/issues.js';
import { keychainFor, parseConfigText } from '../config/load.js';
import type { ManagedSettings } from '../config/managed.js';
import { listenFrom } from '../config/team.js';
import type { ServerConfig, WardenConfig } from '../config/types.js';
import { readSourceFile } from '../config/yamlSource.js';
import type { Logger } from '../core/logger.js';
import type { Gateway } from '../gateway/gateway.js';
import { openCommandCredentials } from './loading.js';
import { describeError } from '../lib/describeError.js';
import { sha256Hex } from '../lib/hash.js';
import { watchFiles, type FileWatcher } from '../lib/watchFiles.js';

/** The config as the gateway serves it now: what both kinds of edit start from. */
export interface LiveConfig {
  /** The config file's text as last put in force. */
  text: string;
  /** The config in force, with the managed settings applied to it. */
  config: WardenConfig;
  /** The managed settings in force, when the machine has them. */
  managed: ManagedSettings | undefined;
  /**
   * Settles when the edit being applied (of either file) is done: each kind of edit reads and
   * writes this state, so one waits for the other (see `oneAtATime`).
   */
  applying?: Promise<void>;
}

/** Runs `work` once no other edit of `live` is being applied, and holds the others off meanwhile. */
export function oneAtATime(live: LiveConfig, work: () => Promise<void>): Promise<void> {
  const run = (live.applying ?? Promise.resolve()).then(work);
  live.applying = run.catch(() => {});
  return run;
}

export interface ConfigReloadOptions {
  readonly live: LiveConfig;
  readonly gateway: Pick<Gateway, 'applyConfig' | 'reloadRefused'>;
  readonly logger: Logger;
  /** The `--http` flag the gateway was started with: the listener it gives is no edit. */
  readonly http?: string;
  /** How long an edit must have settled before it is read. Default 200 ms, as for policies. */
  readonly debounceMs?: number;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Runs `work` at most once at a time. Asked again while it runs, it runs once more when done,
 * however many times it was asked meanwhile: fifty quick edits cost at most two reloads, and
 * the last one reads the file as the last edit left it.
 */
export function serialRunner(work: () => Promise<void>): { request(): Promise<void> } {
  /** Settles when the run last queued has ended. */
  let tail: Promise<void> = Promise.resolve();
  /** The run that has not started yet, which every request made meanwhile joins. */
  let queued: Promise<void> | undefined;
  return {
    request() {
      if (queued === undefined) {
        const run = tail.then(() => {
          queued = undefined;
          return work();
        });
        queued = run;
        tail = run.catch(() => {});
      }
      return queued;
    },
  };
}

/**
 * The files an edit of which reloads the config: the file itself and every env file its stdio
 * servers name, sorted so that an edit that lists them in another order watches the same set.
 */
export function reloadedFiles(config: WardenConfig): string[] {
  const envFiles = config.servers.flatMap((s) => (s.transport === 'stdio' && s.envFile ? [s.envFile] : []));
  return [config.file, ...[...new Set(envFiles)].sort()];
}

/**
 * Watches the config file and its env files while serving, and applies each edit (see the top
 * of this file). Returns the watcher and `reload`, which reads the file now as an edit would.
 */
export function watchConfigWhileServing(options: ConfigReloadOptions): {
  close(): void;
  reload(): Promise<void>;
} {
  const { live, logger } = options;
  const file = live.config.file;
  let watcher: FileWatcher | undefined;
  let watched = '';
  let closed = false;
  const runner = serialRunner(() =>
    oneAtATime(live, () => reloadOnce(options)).catch((error: unknown) =>
      logger.error(`config file ${file} changed, but reloading it failed: ${describeError(error)}`),
    ),
  );
  const rewatch = () => {
    if (closed) return;
    const files = reloadedFiles(live.config);
    if (files.join('\n') === watched) return;
    watcher?.close();
    watched = files.join('\n');
    watcher = watchFiles({
      files,
      what: 'config changes',
      onError: (message) => logger.error(message),
      onChange: () => void reload(),
      debounceMs: options.debounceMs ?? 200,
    });
  };
  // An edit may name other env files: watch those from then on.
  const reload = () => runner.request().then(rewatch);
  rewatch();
  logger.debug(`watching ${file} for edits (gateway.reload)`);
  return {
    close() {
      closed = true;
      watcher?.close();
    },
    reload,
  };
}

/** Reads the config file once and applies it whole, or refuses it whole (logged and audited). */
async function reloadOnce(options: ConfigReloadOptions): Promise<void> {
  const { live, gateway, logger } = options;
  const file = live.config.file;
  const env = options.env ?? process.env;
  let text: string;
  try {
    text = await readSourceFile(file, 'config file');
  } catch (error) {
    return refuse(options, undefined, describeError(error));
  }
  const sha256 = sha256Hex(text);
  if (!live.config.gateway.reload) {
    if (text !== live.text)
      logger.warn(
        `config file ${file} changed, but gateway.reload is false in the config in force (or locked so by the managed settings): restart needed for the edit to apply`,
      );
    return;
  }
  let next: WardenConfig;
  try {
    // Every server entry must be usable: a reload never starts part of what the file says.
    const keychain = await keychainFor(text, openCommandCredentials);
    const parsed = parseConfigText(text, {
      file,
      env,
      ...(keychain && { keychain }),
      badServers: 'refuse',
      listening: options.http !== undefined,
      ...(live.managed && { managed: live.managed }),
    });
    const listening = listenFrom(parsed.config, options.http);
    if (typeof listening === 'string') throw new Error(listening);
    next = listening;
  } catch (error) {
    return refuse(options, sha256, error instanceof ConfigError ? error.message : describeError(error));
  }
  const servers = await judged(next.servers, live.managed, env);
  const restart = restartNeeded(live.config, next);
  const changes = diffServers(live.config.servers, servers);
  // An editor saved the file as it was, and no env file changed: nothing to do or to record.
  if (text === live.text && changes.added.length + changes.removed.length + changes.changed.length === 0)
    return;
  try {
    await gateway.applyConfig({
      servers,
      // The audit trail is opened at start: an edit cannot open, close or move it.
      settings: { ...next, servers, audit: live.config.audit },
      sha256,
      restartNeeded: restart.map((r) => r.key),
    });
  } catch (error) {
    return refuse(options, sha256, describeError(error));
  }
  // What cannot change stays as it was; the next edit is compared with what is in force.
  live.text = text;
  live.config = Object.freeze({ ...next, servers, audit: live.config.audit });
  for (const r of restart)
    logger.error(
      `config file ${file}: ${r.key} changed, but it cannot change in a running gateway (${r.why}): restart needed for ${r.key}; the value in force since start stays`,
    );
  const said = [
    changes.added.length > 0 && `started ${changes.added.join(', ')}`,
    changes.removed.length > 0 && `stopped ${changes.removed.join(', ')}`,
    changes.changed.length > 0 && `restarted ${changes.changed.join(', ')} (entry changed)`,
  ].filter((part): part is string => part !== false);
  logger.info(
    `config file ${file} reloaded: ${said.length === 0 ? 'no server changed' : said.join('; ')}${changes.unchanged.length > 0 ? `; ${changes.unchanged.length} unchanged` : ''}`,
  );
}

/** `servers` with `blockedByManaged` as the managed settings say (loaded only when there are some). */
async function judged(
  servers: readonly ServerConfig[],
  managed: ManagedSettings | undefined,
  env: NodeJS.ProcessEnv,
): Promise<readonly ServerConfig[]> {
  if (managed === undefined) return servers;
  const { applyServerRules } = await import('../core/upstreams/managedServers.js');
  return applyServerRules(servers, managed, env);
}

function refuse(options: ConfigReloadOptions, sha256: string | undefined, error: string): void {
  options.logger.error(
    `config file ${options.live.config.file} changed but cannot be used; the config in force stays:\n${error}`,
  );
  options.gateway.reloadRefused({ ...(sha256 !== undefined && { sha256 }), error });
}
