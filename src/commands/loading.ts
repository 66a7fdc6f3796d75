/**
 * How the commands load what the config names: the managed settings, the config file, its policy
 * files and its pins file. Each problem stops the command with every problem found (never half
 * a gateway), as a `CommandError` naming the file.
 */
import path from 'node:path';
import type { WardenConfig } from '../config/types.js';
import type { LoadedConfig } from '../config/load.js';
import type { ManagedLocation, ManagedSettings } from '../config/managed.js';
import { ConfigError, type ConfigIssue } from '../config/issues.js';
import type { Redactor } from '../features/audit/redact.js';
import type { PolicySet } from '../features/policy/index.js';
import type { PinSet } from '../features/pins/pinFile.js';
import type { CredentialStore } from '../lib/credentials/index.js';
import { CommandError, UsageError } from './support.js';

export interface Loaded {
  readonly config: WardenConfig;
  readonly policies: PolicySet;
  /** The one redactor for the audit trail, the diagnostic log and confirmation questions. */
  readonly redactor: Redactor;
  /**
   * What the config file holds that was ignored, and each user setting the managed settings
   * refused (those are in `refusals` too); shown by every command, never fatal.
   */
  readonly warnings: readonly ConfigIssue[];
  readonly refusals: readonly ConfigIssue[];
  /** The organisation's managed settings in force, when the machine has them. */
  readonly managed?: ManagedSettings;
  /**
   * The config file as read at start (or `text`, an edit of it since), loaded again under other
   * managed settings (an edit of `managed.yaml` while serving). Throws `ConfigError` as loading
   * does.
   */
  readonly reload: (managed: ManagedSettings, text?: string) => Promise<LoadedConfig>;
  /** The config file's text as read. */
  readonly text: string;
}

/** The config and its policy files, or an exit with every problem found (never half a gateway). */
export async function load(file: string | undefined, options: LoadConfigOptions = {}): Promise<Loaded> {
  const loaded = await loadConfigFile(file, options);
  return { ...loaded, policies: await loadPolicyFiles(loaded.config) };
}

/** How the commands load the config: serving and `tools` go on without a server whose entry is bad. */
export interface LoadConfigOptions {
  readonly badServers?: 'refuse' | 'mark-failed';
  /** A managed settings file to use instead of the machine's (`check --managed FILE`). */
  readonly managedFile?: string;
  /** Whether the command line serves over HTTP (`--http`); see `LoadOptions.listening`. */
  readonly listening?: boolean;
}

/**
 * The machine's managed settings (or the file given), or an exit: a managed file that is there
 * but cannot be used stops everything, because an organisation's settings must never be
 * skipped silently.
 */
export async function loadManaged(
  managedFile: string | undefined,
): Promise<{ managed?: ManagedSettings; location: ManagedLocation }> {
  const { loadManagedSettings, locateManaged } = await import('../config/managed.js');
  const location: ManagedLocation =
    managedFile !== undefined
      ? { dir: path.dirname(path.resolve(managedFile)), fromVariable: false }
      : await locateManaged(process.env);
  try {
    const managed = await loadManagedSettings(
      managedFile !== undefined ? { file: path.resolve(managedFile) } : { dir: location.dir },
    );
    return { location, ...(managed && { managed }) };
  } catch (error) {
    if (error instanceof ConfigError)
      throw new CommandError(
        `invalid managed settings (nothing is started until they are fixed):\n${error.message}`,
      );
    throw error;
  }
}

/** An ignored `MCP_WARDEN_MANAGED_DIR`, as an issue said as loudly as a refused user setting. */
export function ignoredOverride(location: ManagedLocation): ConfigIssue[] {
  return location.ignored === undefined
    ? []
    : [
        {
          file: path.join(location.dir, 'managed.yaml'),
          line: 0,
          column: 0,
          path: '',
          message: location.ignored,
        },
      ];
}

/** The config and the redactor it sets up, or an exit with every problem found. */
export async function loadConfigFile(
  file: string | undefined,
  options: LoadConfigOptions = {},
): Promise<Omit<Loaded, 'policies'>> {
  const chosen = file ?? process.env.MCP_WARDEN_CONFIG;
  if (chosen === undefined || chosen === '')
    throw new UsageError('no config file given (use --config FILE)', 'general');
  const [
    { parseConfigText, keychainFor },
    { readSourceFile },
    { createRedactor, RedactorConfigError },
    found,
  ] = await Promise.all([
    import('../config/load.js'),
    import('../config/yamlSource.js'),
    import('../features/audit/redact.js'),
    loadManaged(options.managedFile),
  ]);
  const { managed } = found;
  const absolute = path.resolve(chosen);
  let loaded: LoadedConfig;
  let reload: Loaded['reload'];
  let text: string;
  try {
    text = await readSourceFile(absolute, 'config file');
    const read = text;
    const keychain = await keychainFor(read, openCommandCredentials);
    const parse = (under: ManagedSettings | undefined, edited: string, values: typeof keychain) =>
      parseConfigText(edited, {
        file: absolute,
        env: process.env,
        ...(values && { keychain: values }),
        ...(options.badServers && { badServers: options.badServers }),
        ...(options.listening !== undefined && { listening: options.listening }),
        ...(under && { managed: under }),
      });
    // An edited file may name secrets the first one did not: they are read afresh.
    reload = async (under, edited = read) =>
      parse(under, edited, edited === read ? keychain : await keychainFor(edited, openCommandCredentials));
    loaded = parse(managed, read, keychain);
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandError(`invalid config:\n${error.message}`);
    throw error;
  }
  let { config } = loaded;
  if (managed !== undefined) {
    const { applyServerRules } = await import('../core/upstreams/managedServers.js');
    config = Object.freeze({
      ...config,
      servers: await applyServerRules(config.servers, managed, process.env),
    });
  }
  // An ignored MCP_WARDEN_MANAGED_DIR is said as loudly as a refused user setting.
  const refusals = [...ignoredOverride(found.location), ...loaded.refusals];
  const warnings = [...refusals, ...loaded.warnings];
  if (config.audit !== undefined) {
    // The audit trail must never land in the protocol stream.
    const file = config.audit.file ?? '';
    if (['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1'].includes(file))
      throw new CommandError(
        `invalid config:\n${config.file}: audit.file: ${config.audit.file} is stdout, which carries JSON-RPC`,
      );
  }
  // Built here, once: the redactor refuses patterns the schema cannot judge (empty matches,
  // heavy backtracking), so a bad one stops start-up like any other config error.
  try {
    const redactor = createRedactor(
      config.audit
        ? { secretKeys: config.audit.redact.keys, secretPatterns: config.audit.redact.patterns }
        : {},
    );
    return { config, redactor, warnings, refusals, reload, text, ...(managed && { managed }) };
  } catch (error) {
    if (error instanceof RedactorConfigError)
      throw new CommandError(`invalid config:\n${config.file}: audit.redact: ${error.message}`);
    throw error;
  }
}

/**
 * The credential store as the commands open it: the one warning about the fallback file goes
 * to stderr, where a command's messages go (stdout may carry JSON-RPC). Opened once per process
 * and shared (the config's secrets at load and at every reload, and the OAuth client while
 * serving): opening probes the OS store, in a child process on Linux. A store that could not be
 * opened is tried again next time. The store kept is the one the environment chose: a process
 * that serves one config after another under other variables (the tests that serve in their own
 * process) must not keep reading the first one's secrets.
 */
export function openCommandCredentials(): Promise<CredentialStore> {
  const chosenBy = STORE_CHOOSERS.map((name) => process.env[name] ?? '').join('\0');
  if (opening?.chosenBy !== chosenBy) {
    const store = import('../lib/credentials/index.js')
      .then(({ openCredentialStore }) => openCredentialStore({ env: process.env, logger: stderrWarnings }))
      .catch((error: unknown) => {
        if (opening?.store === store) opening = undefined;
        throw error;
      });
    opening = { chosenBy, store };
  }
  return opening.store;
}

let opening: { readonly chosenBy: string; readonly store: Promise<CredentialStore> } | undefined;

/**
 * The variables that choose which store opens and where its file is (named here, not imported,
 * so the credentials module is loaded only when a store is first asked for).
 */
const STORE_CHOOSERS = [
  'MCP_WARDEN_CREDENTIALS',
  'MCP_WARDEN_CREDENTIALS_FILE',
  'XDG_CONFIG_HOME',
  'APPDATA',
] as const;

const stderrWarnings = {
  warn: (message: string) => process.stderr.write(`mcp-warden: warning: ${message}\n`),
};

/** The config's policy files, or an exit with every problem found. */
export async function loadPolicyFiles(config: WardenConfig): Promise<PolicySet> {
  const { loadPolicies } = await import('../features/policy/loadPolicies.js');
  try {
    return await loadPolicies(config.policies, config.managed && { managed: config.managed.policies });
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandError(`invalid policy:\n${error.message}`);
    throw error;
  }
}

/** The config's pins file as read now (missing: no pins), or an exit naming its problems. */
export async function loadPinsFile(
  config: WardenConfig,
): Promise<{ pins: PinSet; text: string | undefined }> {
  if (config.pins === undefined)
    throw new CommandError(
      `${config.file} has no pins: section; add one, e.g.\n  pins:\n    file: ./tool-pins.json`,
    );
  const { readPinFile } = await import('../features/pins/pinFile.js');
  try {
    return readPinFile(config.pins.file);
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandError(`invalid pins file:\n${error.message}`);
    throw error;
  }
}
