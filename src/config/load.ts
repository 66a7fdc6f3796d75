/**
 * Reads the config file and turns it into a validated, normalized, frozen `WardenConfig`.
 *
 * Stages: YAML parse (syntax errors stop here, since nothing after can be trusted) → other hosts'
 * keys set aside (hostKeys.ts) → interpolation of environment and editor variables → JSON Schema
 * check → normalization with the checks the schema cannot express (durations, regexes, name
 * clashes, ...) and the servers' env files read (envFile.ts). Every stage after
 * parsing keeps going past problems so the user sees all of them at once, each located in the
 * file. Warnings (keys ignored) never stop loading; they come back with the result.
 *
 * Longer than most modules because every key's normalisation and the checks a schema cannot
 * express are written beside each other, so one read shows what a config means.
 */
import { normalizeCatalog } from './catalog.js';
import path from 'node:path';
import { DEFAULTS } from './defaults.js';
import { bareNumberMessage, DURATION_FORMS, formatDuration, parseDuration } from './duration.js';
import { ConfigError, formatConfigIssue, type ConfigIssue } from './issues.js';
import { readEnvFile } from './envFile.js';
import { launcherOf } from '../lib/launchers.js';
import { deepFreeze } from '../lib/freeze.js';
import { setAsideHostKeys } from './hostKeys.js';
import { declaredInputs, workspaceFolder } from './hostVariables.js';
import { formatKeyPath, interpolate, type Env, type KeyPath, type TemplateFound } from './interpolate.js';
import { checkPrincipalTemplates, HOME_CWD, principalTemplatesOf } from './principalTemplates.js';
import { templateText } from './principalPlaceholders.js';
import { keychainReferences, readKeychainValues, type KeychainValues } from './keychain.js';
import type { CredentialStore } from '../lib/credentials/index.js';
import {
  applyManagedToData,
  holdManagedTrail,
  relocateManagedIssues,
  type ManagedSettings,
} from './managed.js';
import { parseByteSize } from './byteSize.js';
import { readSandbox } from './sandbox.js';
import { underManagedSandbox } from './managedSandbox.js';
import { checkDocumentShape, describeValue } from './schema.js';
import { normalizeRateLimits } from './rateLimits.js';
import { normalizeGuardrails } from './guardrails.js';
import { normalizeStore } from './store.js';
import { normalizeTeam } from './team.js';
import { normalizeTokenExchange } from './tokenExchange.js';
import {
  parseYamlSource,
  readSourceFile,
  requireTopLevelMapping,
  toPlainData,
  type IssueList,
  type Locator,
} from './yamlSource.js';
import type {
  StartMode,
  AuditCheckpointsConfig,
  AuditConfig,
  AuditSinkConfig,
  ConfirmationConfig,
  ConfirmationMethod,
  FlowConfig,
  GatewayConfig,
  HttpServerConfig,
  OAuthClientConfig,
  LogConfig,
  PinsConfig,
  TelemetryConfig,
  RepairConfig,
  SandboxConfig,
  ServerConfig,
  StdioServerConfig,
  AcrossReplicas,
  ToolFilter,
  WardenConfig,
} from './types.js';
import { FLOW_LABELS } from './types.js';

export type { Env } from './interpolate.js';
export { formatKeyPath } from './interpolate.js';

export interface LoadOptions {
  /** Where `${VAR}` and `${env:VAR}` references are looked up; usually `process.env`. */
  readonly env: Env;
  /**
   * What a problem in one server entry that comes from the environment or an unsupported
   * transport (an unset `${VAR}`, an unreadable `envFile`, `type: sse`) does. `refuse` (the
   * default, for `check`): it is an error like any other. `mark-failed` (serving, `tools`): that
   * server is kept with `failedAtLoad` saying why, and listed in `failedServers`, so the others
   * can serve. Every other problem (a mistake in the file, the gateway's settings, ...) is an
   * error either way.
   */
  readonly badServers?: 'refuse' | 'mark-failed';
  /**
   * The organisation's managed settings (managed.ts), when the machine has them: their policies
   * go first, their audit minimums and locks replace weaker user values, each such refusal
   * reported in `refusals`.
   */
  readonly managed?: ManagedSettings;
  /**
   * The secrets `${keychain:NAME}` references read (keychain.ts). Without them, every such
   * reference is a problem of its server: `loadConfig` reads them itself when given `credentials`.
   */
  readonly keychain?: KeychainValues;
  /**
   * Opens the credential store, for `loadConfig` to read the secrets the file refers to (only
   * when it refers to some).
   */
  readonly credentials?: () => Promise<CredentialStore>;
  /**
   * Whether the gateway being started serves hosts over HTTP: true when the command line adds a
   * listener (`--http`), false when it serves stdio unless the file has `listen:`. Undefined for
   * the commands that do not serve (`check`, `tools`): a file with `listen:` or `auth:` is then
   * taken to be served over HTTP. It decides which stdio servers run one process per principal,
   * and so where `${principal.…}` may stand.
   */
  readonly listening?: boolean;
}

export interface ParseOptions extends LoadOptions {
  /** Path of the file the text came from: used in messages and to resolve relative paths. */
  readonly file: string;
  /**
   * `built-in`: the text is a config mcp-warden wrote itself (the call path rehearsal's), not a
   * user's. Its shape is not checked against the config schema: that check loads half a
   * megabyte of generated code, which a gateway started on a file it served before skips, and
   * it remembers what it found valid in the user's state folder. The hand-written checks of
   * every value still run. Default `user`.
   */
  readonly author?: 'user' | 'built-in';
}

/** A loaded config, and what was found in its file that did not stop it being used. Frozen. */
export interface LoadedConfig {
  readonly config: WardenConfig;
  /**
   * Located like errors (file, line, column, key path), in file order; e.g. a Claude Desktop
   * setting next to `mcpServers`, ignored. Callers show them, and go on.
   */
  readonly warnings: readonly ConfigIssue[];
  /**
   * With `badServers: 'mark-failed'`, each server whose entry has problems, with them (in file
   * order); those servers carry `failedAtLoad`. Empty otherwise.
   */
  readonly failedServers: readonly { readonly name: string; readonly issues: readonly ConfigIssue[] }[];
  /**
   * Each user setting the managed settings overrode because it would weaken them, located in
   * the user's file. Serving logs them as errors and `check` prints them: never silent.
   */
  readonly refusals: readonly ConfigIssue[];
}

/** Reads and parses the config file. Throws `ConfigError` listing every problem found. */
export async function loadConfig(file: string, options: LoadOptions): Promise<LoadedConfig> {
  const absolute = path.resolve(file);
  const text = await readSourceFile(absolute, 'config file');
  const keychain = options.keychain ?? (await keychainFor(text, options.credentials));
  return parseConfigText(text, { ...options, file: absolute, ...(keychain && { keychain }) });
}

/** The secrets a config's text refers to, read from the credential store; none, nothing opened. */
export async function keychainFor(
  text: string,
  credentials: (() => Promise<CredentialStore>) | undefined,
): Promise<KeychainValues | undefined> {
  const names = keychainReferences(text);
  if (names.length === 0 || credentials === undefined) return undefined;
  return readKeychainValues(names, credentials);
}

/**
 * Parses config text (YAML or JSON). Pure apart from reading `options.env` and the env files
 * that stdio servers name (`envFile`); the config file itself is not read.
 */
export function parseConfigText(text: string, options: ParseOptions): LoadedConfig {
  const file = path.resolve(options.file);
  const source = parseYamlSource(text, file, 'config file');
  const { locator, issues } = source;

  requireTopLevelMapping(source, {
    empty: 'config file is empty; it needs at least a "servers" (or "mcpServers") section',
    expectedKeys: 'with a "servers" or "mcpServers" key',
  });
  issues.throwIfAny();

  const data = asRecord(toPlainData(source)) ?? {};
  const parsed = setAsideHostKeys(data, issues);

  const { expanded, applied, document } = expandUnderManaged(data, parsed, { options, file, issues });
  const managed = options.managed;

  const top = asRecord(document) ?? {};
  const ctx: Context = {
    file,
    dir: path.dirname(file),
    workspace: workspaceFolder(file),
    issues,
    locator,
    declaredIn: new Map(),
    templates: new Map(expanded.templates.map((found) => [formatKeyPath(found.path), found])),
    used: new Set(),
    listening: listeningOf(top, options.listening),
  };
  const normalized = normalize(top, ctx);
  checkPrincipalTemplates(normalized, {
    templates: expanded.templates,
    used: (keyPath) => ctx.used.has(formatKeyPath(keyPath)),
    listening: ctx.listening,
    declaredIn: (server) => ctx.declaredIn.get(server),
    add: (keyPath, message) => issues.add(keyPath, 'value', message),
  });
  const held =
    managed === undefined || normalized.audit === undefined
      ? undefined
      : holdManagedTrail(normalized.audit, managed, DEFAULTS.audit);
  const config = held === undefined ? normalized : { ...normalized, audit: held.audit };
  const failed =
    options.badServers === 'mark-failed' ? takeServerIssues(ctx) : new Map<string, ConfigIssue[]>();
  try {
    issues.throwIfAny();
  } catch (error) {
    // A problem in a value the managed file put there is the managed file's, at its line.
    if (error instanceof ConfigError && managed !== undefined && applied !== undefined)
      throw relocateManagedIssues(error, managed, applied);
    throw error;
  }
  const refusals = [...(applied?.refusals ?? []), ...(held?.refusals ?? [])].map((refusal): ConfigIssue => ({
    file,
    ...locator.position(refusal.path, 'value'),
    path: formatKeyPath(refusal.path),
    message: refusal.message,
  }));
  const servers = config.servers.map((entry) => servedEntry(entry, { ctx, managed, failed, refusals }));
  return deepFreeze({
    config: {
      ...config,
      servers,
      ...(managed && {
        policies: [...managed.policies, ...config.policies],
        managed: { file: managed.file, policies: managed.policies },
      }),
    },
    refusals,
    warnings: issues.warnings(),
    failedServers: [...failed].map(([name, found]) => ({ name, issues: found })),
  });
}

/**
 * The document as the rest of loading sees it: variables expanded, then the managed file's
 * settings laid over it, then its shape checked. A managed file that cannot be applied stops
 * loading at once: nothing after it would be the administrator's config.
 */
function expandUnderManaged(
  data: Record<string, unknown>,
  parsed: unknown,
  at: { options: ParseOptions; file: string; issues: Context['issues'] },
) {
  const { options, file, issues } = at;
  const expanded = interpolate(parsed, {
    env: options.env,
    configFile: file,
    inputs: declaredInputs(data['inputs']),
    ...(options.keychain && { keychain: options.keychain }),
    keepPrincipal: true,
  });
  for (const problem of expanded.problems) issues.addUnexpanded(problem.path, problem.message);
  const managed = options.managed;
  const applied =
    managed === undefined ? undefined : applyManagedToData(asRecord(expanded.value) ?? {}, managed);
  if (applied !== undefined && applied.errors.length > 0) throw new ConfigError(applied.errors);
  const document = applied?.data ?? expanded.value;
  if (options.author !== 'built-in')
    for (const problem of checkDocumentShape(document)) {
      issues.add(problem.path, problem.at, problem.message);
    }
  return { expanded, applied, document };
}

/**
 * One server entry as it is served: under the managed sandbox (a refusal is reported at the
 * entry's line and added to `refusals`), and marked failed when its own problems kept it out.
 */
function servedEntry(
  entry: ServerConfig,
  from: {
    ctx: Context;
    managed: ParseOptions['managed'];
    failed: Map<string, ConfigIssue[]>;
    refusals: ConfigIssue[];
  },
): ServerConfig {
  const { ctx, managed, failed, refusals } = from;
  const { server, refusal } = underManagedSandbox(entry, managed?.sandbox);
  if (refusal !== undefined) {
    const at = [ctx.declaredIn.get(server.name) ?? 'servers', server.name];
    refusals.push({
      file: ctx.file,
      ...ctx.locator.position(at, 'key'),
      path: formatKeyPath([...at, 'sandbox']),
      message: refusal,
    });
  }
  const found = failed.get(server.name);
  if (found === undefined) return server;
  return { ...server, failedAtLoad: found.map(formatConfigIssue).join('; ') };
}

/**
 * The problems of scope `server` (see IssueScope) in each server entry, by server, taken out of
 * the file's problems: each fails its own server only. Those in the second entry of a name
 * declared twice stay the file's: that entry is not served at all.
 */
function takeServerIssues(ctx: Context): Map<string, ConfigIssue[]> {
  return ctx.issues.takeWhere((keyPath) => {
    const [section, name] = keyPath;
    return typeof name === 'string' && ctx.declaredIn.get(name) === section ? name : undefined;
  });
}

// ---------------------------------------------------------------------------------------------
// Normalization

interface Context {
  readonly file: string;
  /** What relative paths in the file are resolved against: its folder. */
  readonly dir: string;
  /**
   * The folder the file belongs to (`${workspaceFolder}`): its own, or for a file in `.vscode/`
   * or `.cursor/` the folder around that one. Where a server runs when it has no `cwd`.
   */
  readonly workspace: string;
  readonly issues: IssueList;
  readonly locator: Locator;
  /** Each server name, and the section (`servers` or `mcpServers`) that declared it first. */
  readonly declaredIn: Map<string, string>;
  /** The strings that name the principal (`${principal.…}`), by dotted key path. */
  readonly templates: ReadonlyMap<string, TemplateFound>;
  /** Those a server entry took as its own (`args`, `env`, `cwd` of a stdio server). */
  readonly used: Set<string>;
  /** See `LoadOptions.listening`: true, false, or unknown for a command that does not serve. */
  readonly listening: boolean | undefined;
}

/**
 * Whether hosts are served over HTTP (see `LoadOptions.listening`): the command line's word, or
 * a `listen:` section; a command that does not serve also takes `auth:` to mean so, since tokens
 * are checked only by the listener.
 */
function listeningOf(data: Data, given: boolean | undefined): boolean | undefined {
  if (given === true || asRecord(data['listen']) !== undefined) return true;
  if (given === undefined) return asRecord(data['auth']) !== undefined ? true : undefined;
  return false;
}

type Data = Readonly<Record<string, unknown>>;

/**
 * Builds the output from data that may still have schema problems: wrongly typed values were
 * already reported, so here they just fall back to defaults (the result is then discarded).
 */
function normalize(data: Data, ctx: Context): WardenConfig {
  const guardrails = normalizeGuardrails(data, {
    add: (keyPath, at, message) => ctx.issues.add(keyPath, at, message),
  });
  const inherited = { ...normalizeGateway(data, ctx), guardrails: guardrails.server };
  const audit = normalizeAudit(data, ctx, inherited.gateway);
  const pins = normalizePins(data, ctx);
  const telemetry = normalizeTelemetry(data, ctx);
  const servers = normalizeServers(data, ctx, inherited);
  return {
    file: ctx.file,
    gateway: inherited.gateway,
    policies: normalizePolicies(data, ctx),
    confirmation: normalizeConfirmation(data, ctx),
    ...normalizeFlow(data),
    ...(audit === undefined ? {} : { audit }),
    ...(pins === undefined ? {} : { pins }),
    ...(guardrails.guardrails === undefined ? {} : { guardrails: guardrails.guardrails }),
    ...(telemetry === undefined ? {} : { telemetry }),
    ...normalizeTeam(data, {
      add: (keyPath, at, message) => ctx.issues.add(keyPath, at, message),
      duration: (keyPath, value) => duration(ctx, keyPath, value),
    }),
    ...normalizeCatalog(
      data,
      servers.map((s) => s.name),
      { add: (keyPath, at, message) => ctx.issues.add(keyPath, at, message) },
    ),
    ...normalizeRateLimits(data, (keyPath, message) => ctx.issues.add(keyPath, 'value', message)),
    ...normalizeStore(data, {
      add: (keyPath, message) => ctx.issues.add(keyPath, 'value', message),
      duration: (keyPath, value) => duration(ctx, keyPath, value),
    }),
    servers,
  };
}

/** The gateway section, and what servers need to know about it beyond its values. */
interface Inherited {
  readonly gateway: GatewayConfig;
  /**
   * False when `gateway.maxTimeout` is written but invalid (already reported): timeouts are then
   * not compared with the default that stands in for it, which would only add a misleading message.
   */
  readonly maxTimeoutValid: boolean;
  /**
   * `gateway.timeout` as written, else its default, before it is cut to `gateway.maxTimeout`:
   * a server with a limit of its own cuts this to that limit instead.
   */
  readonly idleMs: number;
  /** Reads a server's `guardrails:` entry (its categories checked against the section's patterns). */
  readonly guardrails: ReturnType<typeof normalizeGuardrails>['server'];
}

function normalizeGateway(data: Data, ctx: Context): Omit<Inherited, 'guardrails'> {
  const defaults = DEFAULTS.gateway;
  const gateway = asRecord(data['gateway']) ?? {};
  const naming = asRecord(gateway['naming']) ?? {};
  const restart = asRecord(gateway['restart']) ?? {};
  const log = asRecord(gateway['log']) ?? {};
  const at = (...keys: string[]): KeyPath => ['gateway', ...keys];

  const pattern = nonEmptyString(naming['pattern']) ?? defaults.naming.pattern;
  checkRegExp(ctx, at('naming', 'pattern'), pattern);

  const level = log['level'];
  const logFile = nonEmptyString(log['file']);
  const logConfig: LogConfig = {
    level:
      level === 'error' || level === 'warn' || level === 'info' || level === 'debug'
        ? level
        : defaults.log.level,
    ...(logFile === undefined ? {} : { file: path.resolve(ctx.dir, logFile) }),
  };

  // An idle timeout longer than the hard limit could never fire: one written so is an error, and
  // the default (when `timeout` is not written) is cut to the limit, so idle <= max always holds.
  const maxTimeout = duration(ctx, at('maxTimeout'), gateway['maxTimeout']);
  const maxTimeoutValid = gateway['maxTimeout'] === undefined || maxTimeout !== undefined;
  const maxCallTimeoutMs = maxTimeout ?? defaults.maxCallTimeoutMs;
  const timeout = duration(ctx, at('timeout'), gateway['timeout']);
  if (maxTimeoutValid) checkWithinLimit(ctx, at('timeout'), gateway['timeout'], timeout, maxCallTimeoutMs);
  const idleMs = timeout ?? defaults.callTimeoutMs;

  const config: GatewayConfig = {
    naming: {
      separator: nonEmptyString(naming['separator']) ?? defaults.naming.separator,
      pattern,
      maxLength: integer(naming['maxLength']) ?? defaults.naming.maxLength,
    },
    startupTimeoutMs:
      duration(ctx, at('startupTimeout'), gateway['startupTimeout']) ?? defaults.startupTimeoutMs,
    connectTimeoutMs:
      duration(ctx, at('connectTimeout'), gateway['connectTimeout']) ?? defaults.connectTimeoutMs,
    ...startSettings(ctx, gateway, at, undefined),
    callTimeoutMs: Math.min(idleMs, maxCallTimeoutMs),
    maxCallTimeoutMs,
    repair: { ...defaults.repair, ...repairOverrides(gateway['repair']) },
    validateArguments:
      typeof gateway['validateArguments'] === 'boolean'
        ? gateway['validateArguments']
        : defaults.validateArguments,
    reload: typeof gateway['reload'] === 'boolean' ? gateway['reload'] : defaults.reload,
    restart: {
      initialDelayMs:
        duration(ctx, at('restart', 'initialDelay'), restart['initialDelay']) ??
        defaults.restart.initialDelayMs,
      maxDelayMs:
        duration(ctx, at('restart', 'maxDelay'), restart['maxDelay']) ?? defaults.restart.maxDelayMs,
      maxRestarts: integer(restart['maxRestarts']) ?? defaults.restart.maxRestarts,
      windowMs: duration(ctx, at('restart', 'window'), restart['window']) ?? defaults.restart.windowMs,
    },
    log: logConfig,
    maxMessageBytes:
      byteSize(ctx, at('maxMessageSize'), gateway['maxMessageSize']) ?? defaults.maxMessageBytes,
    ...sandboxSetting(ctx, at('sandbox'), gateway['sandbox'], undefined),
  };
  return { gateway: config, maxTimeoutValid, idleMs };
}

/** `sandbox:` of the gateway or of a stdio server, as an optional property (absent: none). */
function sandboxSetting(ctx: Context, at: KeyPath, value: unknown, inherited: SandboxConfig | undefined) {
  const sandbox = readSandbox(value, at, {
    dir: ctx.dir,
    issues: ctx.issues,
    ...(inherited && { inherited }),
  });
  return sandbox === undefined ? {} : { sandbox };
}

/**
 * Policy files, absolute, in the order listed. Whether they exist is the policy loader's to say
 * (with its own message when one cannot be read): the config stays independent of other files.
 */
function normalizePolicies(data: Data, ctx: Context): string[] {
  if (data['policies'] === undefined) return [...DEFAULTS.policies];
  return strings(data['policies'])
    .filter((file) => file !== '')
    .map((file) => path.resolve(ctx.dir, file));
}

/** The `flow:` section, when written (its keys defaulted); absent otherwise, which means the defaults. */
function normalizeFlow(data: Data): { flow?: FlowConfig } {
  const section = asRecord(data['flow']);
  if (section === undefined) return {};
  const trifecta = section['trifecta'];
  // Anything else was reported by the schema; the result is then discarded.
  return {
    flow: {
      trifecta: trifecta === 'deny' || trifecta === 'audit' ? trifecta : DEFAULTS.flow.trifecta,
    },
  };
}

const CONFIRMATION_METHODS: readonly ConfirmationMethod[] = ['elicitation', 'command'];

/**
 * The `confirmation:` section, every key defaulted. `methods` may name `command` without a
 * `command` hook being configured: that method is then simply unavailable, which is no error.
 */
function normalizeConfirmation(data: Data, ctx: Context): ConfirmationConfig {
  const defaults = DEFAULTS.confirmation;
  const section = asRecord(data['confirmation']) ?? {};
  // Invalid, duplicate or missing entries were reported by the schema; the result is then discarded.
  const methods = strings(section['methods']).filter((method): method is ConfirmationMethod =>
    CONFIRMATION_METHODS.includes(method as ConfirmationMethod),
  );
  const hook = commandHook(ctx, section['command']);
  return {
    methods: methods.length > 0 ? methods : [...defaults.methods],
    timeoutMs: duration(ctx, ['confirmation', 'timeout'], section['timeout']) ?? defaults.timeoutMs,
    offerRemember:
      typeof section['offerRemember'] === 'boolean' ? section['offerRemember'] : defaults.offerRemember,
    ...(hook === undefined ? {} : { command: hook }),
  };
}

/**
 * `confirmation.command`: written like a stdio server (and checked by the same schema parts).
 * A relative program path (one with a slash) and `cwd` are resolved against the config's folder,
 * which is also the default `cwd`; a bare program name is left for a PATH lookup.
 */
function commandHook(ctx: Context, value: unknown): NonNullable<ConfirmationConfig['command']> | undefined {
  const hook = asRecord(value);
  const command = nonEmptyString(hook?.['command']);
  if (hook === undefined || command === undefined) return undefined; // the schema has reported it
  const isPath = command.includes('/') || command.includes(path.sep);
  return {
    command: isPath ? path.resolve(ctx.dir, command) : command,
    args: strings(hook['args']),
    env: stringMap(hook['env']),
    cwd: resolveCwd(ctx, hook['cwd'], ctx.dir),
  };
}

/** The `audit:` section, or undefined when the file has none (no audit trail). */
function normalizeAudit(data: Data, ctx: Context, gateway: GatewayConfig): AuditConfig | undefined {
  const section = asRecord(data['audit']);
  if (section === undefined) return undefined; // absent, or not a mapping (the schema has said so)
  const defaults = DEFAULTS.audit;
  const at = (...keys: (string | number)[]): KeyPath => ['audit', ...keys];

  // `file: false`: no local file, the records go to the sinks only (checked below: there must be one).
  const local = section['file'] !== false;
  const written = nonEmptyString(section['file']);
  const file = written === undefined ? '' : path.resolve(ctx.dir, written);
  const spool = nonEmptyString(section['spool']);
  // Log lines in the audit file would break its JSON lines and hash chain. Compared as resolved
  // paths, without touching the disk (a symlink or a case-insensitive file system can still hide one).
  if (file !== '' && file === gateway.log.file) {
    const { line } = ctx.locator.position(['gateway', 'log', 'file'], 'value');
    ctx.issues.add(
      at('file'),
      'value',
      `same file as gateway.log.file (line ${line}); the audit trail needs a file of its own`,
    );
  }

  const onFailure = section['onFailure'];
  const redact = asRecord(section['redact']) ?? {};
  const patterns = Array.isArray(redact['patterns']) ? (redact['patterns'] as unknown[]) : [];
  patterns.forEach((pattern, index) => {
    if (typeof pattern === 'string' && pattern !== '') {
      checkRedactPattern(ctx, at('redact', 'patterns', index), pattern);
    }
  });
  const shipping = auditSinks(section, ctx);
  if (!local && shipping.sinks === undefined)
    ctx.issues.add(
      at('file'),
      'value',
      'false keeps no local file, so the records need a sink: add one to audit.sinks, or give a file',
    );
  if (!local && spool === undefined)
    ctx.issues.add(
      at('file'),
      'value',
      'false keeps no local file, so the sinks need audit.spool: a folder where records wait until each sink took them',
    );
  return {
    ...(local && { file }),
    spoolDir: spool === undefined ? `${file}.spool` : path.resolve(ctx.dir, spool),
    maxBytes: byteSize(ctx, at('maxSize'), section['maxSize']) ?? defaults.maxBytes,
    maxFiles: integer(section['maxFiles']) ?? defaults.maxFiles,
    onFailure: onFailure === 'block' || onFailure === 'continue' ? onFailure : defaults.onFailure,
    fsync: typeof section['fsync'] === 'boolean' ? section['fsync'] : defaults.fsync,
    logResults: typeof section['logResults'] === 'boolean' ? section['logResults'] : defaults.logResults,
    redact: {
      keys: redact['keys'] === undefined ? [...defaults.redact.keys] : strings(redact['keys']),
      patterns: redact['patterns'] === undefined ? [...defaults.redact.patterns] : strings(patterns),
    },
    ...auditCheckpoints(section, ctx),
    ...shipping,
  };
}

/** The `telemetry:` section, or undefined when the file has none (no telemetry, no SDK loaded). */
function normalizeTelemetry(data: Data, ctx: Context): TelemetryConfig | undefined {
  const section = asRecord(data['telemetry']);
  if (section === undefined) return undefined; // absent, or not a mapping (the schema has said so)
  const defaults = DEFAULTS.telemetry;
  const flag = (key: 'traces' | 'metrics' | 'content'): boolean =>
    typeof section[key] === 'boolean' ? section[key] : defaults[key];
  const interval = duration(ctx, ['telemetry', 'metricsInterval'], section['metricsInterval']);
  // The SDK's reader refuses a zero interval; a tiny one would export on every turn.
  if (interval !== undefined && interval < 100)
    ctx.issues.add(['telemetry', 'metricsInterval'], 'value', 'must be at least 100ms');
  return {
    traces: flag('traces'),
    metrics: flag('metrics'),
    content: flag('content'),
    metricsIntervalMs: interval ?? defaults.metricsIntervalMs,
  };
}

/** `audit.checkpoints`, when set. */
function auditCheckpoints(section: Data, ctx: Context): { checkpoints?: AuditCheckpointsConfig } {
  const checkpoints = asRecord(section['checkpoints']);
  const key = nonEmptyString(checkpoints?.['key']);
  if (checkpoints === undefined || key === undefined) return {};
  const intervalMs = duration(ctx, ['audit', 'checkpoints', 'interval'], checkpoints['interval']);
  if (intervalMs === 0) ctx.issues.add(['audit', 'checkpoints', 'interval'], 'value', 'must be more than 0');
  return {
    checkpoints: {
      key: path.resolve(ctx.dir, key),
      intervalMs: intervalMs || DEFAULTS.auditShipping.checkpointIntervalMs,
    },
  };
}

/**
 * `audit.sinks`: the schema checked each key's own shape; here, what it cannot say: the keys each
 * type needs, keys that belong to the other type, and names that must be unique (each names a
 * spool folder).
 */
function auditSinks(section: Data, ctx: Context): { sinks?: AuditSinkConfig[] } {
  const list = Array.isArray(section['sinks']) ? (section['sinks'] as unknown[]) : [];
  const defaults = DEFAULTS.auditShipping;
  const names = new Set<string>();
  const sinks: AuditSinkConfig[] = [];
  const SYSLOG_ONLY = ['host', 'port', 'tls', 'ca', 'facility', 'appName'];
  const OTLP_ONLY = ['endpoint', 'headers'];
  list.forEach((item, index) => {
    const sink = asRecord(item);
    const type = sink?.['type'];
    if (sink === undefined || (type !== 'syslog' && type !== 'otlp')) return; // the schema has said so
    const at = (key: string): KeyPath => ['audit', 'sinks', index, key];
    for (const key of type === 'syslog' ? OTLP_ONLY : SYSLOG_ONLY) {
      if (sink[key] !== undefined)
        ctx.issues.add(at(key), 'key', `applies to ${type === 'syslog' ? 'otlp' : 'syslog'} sinks only`);
    }
    let name = nonEmptyString(sink['name']);
    if (name === undefined) {
      name = type;
      for (let n = 2; names.has(name); n++) name = `${type}-${n}`;
    } else if (names.has(name)) {
      ctx.issues.add(at('name'), 'value', `a second sink named "${name}"; each sink needs a name of its own`);
    }
    names.add(name);
    const format = sink['format'] === 'ocsf' ? 'ocsf' : 'warden';
    const common = {
      name,
      required: sink['required'] === true,
      format,
      spoolMaxBytes: byteSize(ctx, at('spoolMaxSize'), sink['spoolMaxSize']) ?? defaults.spoolMaxBytes,
    } as const;
    if (type === 'syslog') {
      const host = nonEmptyString(sink['host']);
      const port = integer(sink['port']);
      if (host === undefined) ctx.issues.add(['audit', 'sinks', index], 'value', 'a syslog sink needs host');
      if (port === undefined) ctx.issues.add(['audit', 'sinks', index], 'value', 'a syslog sink needs port');
      const ca = nonEmptyString(sink['ca']);
      if (ca !== undefined && sink['tls'] !== true)
        ctx.issues.add(at('ca'), 'key', 'applies with tls: true only');
      sinks.push({
        ...common,
        type,
        host: host ?? '',
        port: port ?? 0,
        tls: sink['tls'] === true,
        ...(ca !== undefined && { ca: path.resolve(ctx.dir, ca) }),
        facility: integer(sink['facility']) ?? defaults.facility,
        appName: nonEmptyString(sink['appName']) ?? defaults.appName,
      });
      return;
    }
    const endpoint = nonEmptyString(sink['endpoint']);
    if (endpoint === undefined) {
      ctx.issues.add(
        ['audit', 'sinks', index],
        'value',
        'an otlp sink needs endpoint (such as http://localhost:4318/v1/logs)',
      );
    } else if (!/^https?:\/\/[^/]/.test(endpoint) || !URL.canParse(endpoint)) {
      ctx.issues.add(at('endpoint'), 'value', 'not an http:// or https:// URL');
    }
    sinks.push({ ...common, type, endpoint: endpoint ?? '', headers: stringMap(sink['headers']) });
  });
  return sinks.length === 0 ? {} : { sinks };
}

/** The `pins:` section, or undefined when the file has none (tool definitions are not pinned). */
function normalizePins(data: Data, ctx: Context): PinsConfig | undefined {
  const section = asRecord(data['pins']);
  if (section === undefined) return undefined; // absent, or not a mapping (the schema has said so)
  const defaults = DEFAULTS.pins;
  const written = nonEmptyString(section['file']);
  const { onChange, onNew } = section;
  return {
    file: written === undefined ? '' : path.resolve(ctx.dir, written),
    onChange: onChange === 'block' || onChange === 'warn' ? onChange : defaults.onChange,
    onNew: onNew === 'pin' || onNew === 'block' ? onNew : defaults.onNew,
  };
}

/**
 * An extra redaction pattern, read the way the audit redactor reads it: JavaScript regular
 * expression source, or a literal `/source/flags` with flags among i, m, s and u.
 */
function checkRedactPattern(ctx: Context, keyPath: KeyPath, text: string): void {
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(text);
  const flags = literal?.[2] ?? '';
  if (/[^imsu]/.test(flags)) {
    ctx.issues.add(keyPath, 'value', `regular expression flags may be i, m, s and u, got "${flags}"`);
    return;
  }
  checkRegExp(ctx, keyPath, literal?.[1] ?? text, flags);
}

/** Reports `source` (with `flags`) at `keyPath` when it does not compile as a JavaScript RegExp. */
function checkRegExp(ctx: Context, keyPath: KeyPath, source: string, flags = ''): void {
  try {
    new RegExp(source, flags);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^Invalid regular expression: /, '') : '';
    ctx.issues.add(keyPath, 'value', `not a valid JavaScript regular expression: ${reason}`);
  }
}

const SECTIONS = ['servers', 'mcpServers'] as const;

function normalizeServers(data: Data, ctx: Context, inherited: Inherited): ServerConfig[] {
  const servers: ServerConfig[] = [];
  const declaredAt = new Map<string, number>();
  let malformedSection = false;
  for (const section of SECTIONS) {
    if (data[section] === undefined) continue;
    const entries = asRecord(data[section]);
    if (entries === undefined) {
      malformedSection = true; // the schema has reported it
      continue;
    }
    for (const name of ctx.locator.orderedKeys([section], entries)) {
      const line = ctx.locator.position([section, name], 'key').line;
      const earlier = declaredAt.get(name);
      if (earlier !== undefined) {
        ctx.issues.add(
          [section, name],
          'key',
          `server "${name}" is already defined under "servers" (line ${earlier}); server names must be unique`,
        );
        continue;
      }
      declaredAt.set(name, line);
      ctx.declaredIn.set(name, section);
      const server = normalizeServer(ctx, inherited, section, name, entries[name], line);
      if (server !== undefined) servers.push(server);
    }
  }
  if (declaredAt.size === 0 && !malformedSection) {
    ctx.issues.add([], 'value', 'no servers configured: add at least one under "servers" (or "mcpServers")');
  }
  return servers;
}

function normalizeServer(
  ctx: Context,
  inherited: Inherited,
  section: (typeof SECTIONS)[number],
  name: string,
  value: unknown,
  line: number,
): ServerConfig | undefined {
  const entry = asRecord(value);
  if (entry === undefined) return undefined;
  const at = (...keys: string[]): KeyPath => [section, name, ...keys];
  const hasCommand = entry['command'] !== undefined;
  const hasUrl = entry['url'] !== undefined;
  // Neither or both: the schema's oneOf has said so, naming the server.
  if (hasCommand === hasUrl) return undefined;
  const transport = hasCommand ? 'stdio' : 'http';
  checkTransportKeys(ctx, entry, transport, at);
  const namespace = entry['namespace'];
  const common = {
    name,
    namespace: namespace === false ? null : typeof namespace === 'string' ? namespace : name,
    ...commonServerFields(ctx, inherited, entry, at),
    source: { file: ctx.file, line },
  };

  if (transport === 'stdio') {
    const perPrincipal = principalTemplatesOf(
      {
        at: at(),
        args: entry['args'],
        env: entry['env'],
        hasCwd: nonEmptyString(entry['cwd']) !== undefined,
        perPrincipal: ctx.listening === true && !common.shared,
      },
      ctx,
    );
    const command = typeof entry['command'] === 'string' ? entry['command'] : '';
    const stdio: StdioServerConfig = {
      ...common,
      transport,
      // A per-principal process works in its principal's folder: a relative program path
      // still means the one beside the config, where it would run without a listener.
      command:
        perPrincipal?.cwd === HOME_CWD && /[\\/]/.test(command)
          ? path.resolve(ctx.workspace, command)
          : command,
      args: strings(entry['args']),
      env: serverEnv(ctx, at('envFile'), entry['envFile'], stringMap(entry['env'])),
      ...(typeof entry['envFile'] === 'string' &&
        entry['envFile'] !== '' && { envFile: path.resolve(ctx.dir, entry['envFile']) }),
      // The editors start a server without `cwd` in the workspace folder, not in `.vscode/`. A
      // cwd naming the principal is resolved when its process starts.
      cwd:
        perPrincipal?.cwd === undefined
          ? resolveCwd(ctx, entry['cwd'], ctx.workspace)
          : templateText(perPrincipal.cwd),
      ...sandboxSetting(ctx, at('sandbox'), entry['sandbox'], inherited.gateway.sandbox),
      ...(perPrincipal && { perPrincipal }),
      ...acrossReplicasOf(ctx, entry, at, common.shared),
    };
    checkNotItself(ctx, at('args'), entry['args'], stdio);
    return stdio;
  }

  const url = entry['url'];
  // The schema checked the scheme; this catches the rest (no host, bad port, stray spaces...).
  // The URL is not echoed: it may carry a token from the environment.
  if (typeof url === 'string' && /^https?:\/\//i.test(url) && !URL.canParse(url)) {
    ctx.issues.add(at('url'), 'value', 'not a valid URL');
  }
  const http: HttpServerConfig = {
    ...common,
    transport,
    url: typeof url === 'string' ? url : '',
    headers: stringMap(entry['headers']),
    ...oauthClient(ctx, entry['oauth'], at, typeof url === 'string' ? url : ''),
  };
  return http;
}

/**
 * An HTTP server entry's `oauth`. The schema checked each key's type; a secret without the client
 * it belongs to is the one mistake left to name.
 */
function oauthClient(
  ctx: Context,
  value: unknown,
  at: ServerKeyPath,
  url: string,
): { oauth?: OAuthClientConfig } {
  const oauth = asRecord(value);
  if (oauth === undefined) return {};
  const tokenExchange = normalizeTokenExchange(oauth['tokenExchange'], url, (key, message) =>
    ctx.issues.add(at('oauth', 'tokenExchange', key), 'value', message),
  );
  const text = (key: string) => (typeof oauth[key] === 'string' ? { [key]: oauth[key] as string } : {});
  if (oauth['clientSecret'] !== undefined && oauth['clientId'] === undefined)
    ctx.issues.add(at('oauth', 'clientSecret'), 'key', 'a client secret needs the clientId it belongs to');
  return {
    oauth: {
      ...text('clientId'),
      ...text('clientSecret'),
      ...text('clientMetadataUrl'),
      ...(Array.isArray(oauth['scopes']) && { scopes: strings(oauth['scopes']) }),
      ...(tokenExchange && { tokenExchange }),
    },
  };
}

/**
 * A stdio entry's `acrossReplicas` (the schema checked its value). It orders the calls of each
 * principal's own process; with `shared: true` there is no such process, and saying `serial` there
 * would promise an ordering that does not happen, so it is refused.
 */
function acrossReplicasOf(
  ctx: Context,
  entry: Data,
  at: ServerKeyPath,
  shared: boolean,
): { acrossReplicas?: AcrossReplicas } {
  const value = entry['acrossReplicas'];
  if (value !== 'serial' && value !== 'parallel') return {};
  if (shared) {
    ctx.issues.add(
      at('acrossReplicas'),
      'key',
      'applies only to a server that runs one process per principal, and this one has "shared: true"',
    );
    return {};
  }
  return { acrossReplicas: value };
}

/** Where a key of the server entry being read is: `servers.<name>.<keys>`. */
type ServerKeyPath = (...keys: string[]) => KeyPath;

/** Reports a `type` that contradicts `command` or `url`, and keys of the other transport. */
function checkTransportKeys(ctx: Context, entry: Data, transport: 'stdio' | 'http', at: ServerKeyPath): void {
  const declared = entry['type'];
  const declaredTransport =
    declared === 'stdio'
      ? 'stdio'
      : declared === 'http' || declared === 'streamable-http'
        ? 'http'
        : undefined;
  if (declaredTransport !== undefined && declaredTransport !== transport) {
    ctx.issues.add(
      at('type'),
      'value',
      transport === 'stdio'
        ? `type "${String(declared)}" does not match "command": a server with "command" is a stdio server`
        : `type "stdio" does not match "url": a server with "url" is an HTTP server`,
    );
  }
  // Silently ignoring e.g. `args` on an HTTP server would hide a mistake in the entry.
  const foreign =
    transport === 'stdio'
      ? ['headers', 'oauth']
      : ['args', 'env', 'envFile', 'cwd', 'sandbox', 'acrossReplicas'];
  for (const key of foreign.filter((k) => entry[k] !== undefined)) {
    ctx.issues.add(
      at(key),
      'key',
      transport === 'stdio'
        ? `"${key}" applies only to HTTP servers (with "url"), and this one has "command"`
        : `"${key}" applies only to stdio servers (with "command"), and this one has "url"`,
    );
  }
}

/** The settings every server has whatever its transport, from its entry and the gateway's. */
function commonServerFields(ctx: Context, inherited: Inherited, entry: Data, at: ServerKeyPath) {
  const defaults = DEFAULTS.server;
  const { gateway } = inherited;
  const { timeoutMs, maxTimeoutMs, tools } = serverTimeouts(ctx, inherited, entry, at);
  return {
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(maxTimeoutMs === undefined ? {} : { maxTimeoutMs }),
    startupTimeoutMs: startupTimeout(ctx, inherited, entry, at),
    repair: { ...gateway.repair, ...repairOverrides(entry['repair']) },
    ...guardrailsOf(inherited, entry, at),
    validateArguments:
      typeof entry['validateArguments'] === 'boolean'
        ? entry['validateArguments']
        : gateway.validateArguments,
    maxConcurrency: integer(entry['maxConcurrency']) ?? defaults.maxConcurrency,
    maxQueue: integer(entry['maxQueue']) ?? defaults.maxQueue,
    tools,
    disabled: typeof entry['disabled'] === 'boolean' ? entry['disabled'] : defaults.disabled,
    ...startSettings(ctx, entry, at, gateway),
    trusted: typeof entry['trusted'] === 'boolean' ? entry['trusted'] : defaults.trusted,
    // Unknown labels were reported by the schema; the result is then discarded.
    ...(Array.isArray(entry['labels']) && {
      labels: FLOW_LABELS.filter((label) => (entry['labels'] as unknown[]).includes(label)),
    }),
    shared: entry['shared'] === true,
    clientRequests: {
      sampling: entry['sampling'] !== false,
      elicitation: entry['elicitation'] !== false,
      // Folders resolve against the config file's folder, as `cwd` does.
      roots: Array.isArray(entry['roots'])
        ? strings(entry['roots']).map((folder) => path.resolve(ctx.dir, folder))
        : entry['roots'] !== false,
    },
    instructions:
      typeof entry['instructions'] === 'string' || typeof entry['instructions'] === 'boolean'
        ? entry['instructions']
        : true,
  };
}

/** The server's `guardrails:` overrides, when its entry has them. */
function guardrailsOf(inherited: Inherited, entry: Data, at: ServerKeyPath) {
  const guardrails = inherited.guardrails(entry['guardrails'], at('guardrails'));
  return guardrails === undefined ? {} : { guardrails };
}

/**
 * How long the server may take to start: its own `startupTimeout`, else 60 s for a package
 * launcher (never less than the gateway's window), else the gateway's `startupTimeout`.
 */
function startupTimeout(ctx: Context, inherited: Inherited, entry: Data, at: ServerKeyPath): number {
  const written = duration(ctx, at('startupTimeout'), entry['startupTimeout']);
  if (written !== undefined) return written;
  const { gateway } = inherited;
  const command = entry['command'];
  const launcher = typeof command === 'string' && launcherOf(command, strings(entry['args'])) !== undefined;
  return launcher
    ? Math.max(DEFAULTS.server.launcherStartupTimeoutMs, gateway.startupTimeoutMs)
    : gateway.startupTimeoutMs;
}

/**
 * `start` and `idleTimeout` of the gateway section (`inherited` undefined) or of a server entry,
 * which falls back to the gateway's. An idle timeout of zero would stop a server between any two
 * requests: it is refused, naming the key.
 */
function startSettings(
  ctx: Context,
  section: Data,
  at: (...keys: string[]) => KeyPath,
  inherited: Pick<GatewayConfig, 'start' | 'idleTimeoutMs'> | undefined,
): { start: StartMode; idleTimeoutMs?: number } {
  const written = section['start'];
  const start: StartMode =
    written === 'lazy' || written === 'eager' ? written : (inherited?.start ?? DEFAULTS.gateway.start);
  const idle = duration(ctx, at('idleTimeout'), section['idleTimeout']);
  if (idle === 0)
    ctx.issues.add(at('idleTimeout'), 'value', 'must be more than 0 (leave it out to never stop)');
  const idleTimeoutMs = idle || inherited?.idleTimeoutMs;
  return { start, ...(idleTimeoutMs !== undefined && { idleTimeoutMs }) };
}

/** The server's call timeout, its limit and its per-tool timeouts, each checked against the limit. */
function serverTimeouts(
  ctx: Context,
  inherited: Inherited,
  entry: Data,
  at: ServerKeyPath,
): { timeoutMs: number | undefined; maxTimeoutMs: number | undefined; tools: ToolFilter } {
  const { gateway } = inherited;
  // The limit this server's calls run under: its own `maxTimeout`, else the gateway's. Undefined
  // when the one that applies is invalid (already reported), so nothing is compared with it.
  const maxTimeoutMs = duration(ctx, at('maxTimeout'), entry['maxTimeout']);
  const limitMs =
    entry['maxTimeout'] !== undefined
      ? maxTimeoutMs
      : inherited.maxTimeoutValid
        ? gateway.maxCallTimeoutMs
        : undefined;
  const tools = asRecord(entry['tools']) ?? {};
  const timeouts = asRecord(tools['timeouts']) ?? {};
  const toolFilter: ToolFilter = {
    include: strings(tools['include']),
    exclude: strings(tools['exclude']),
    timeouts: ctx.locator.orderedKeys(at('tools', 'timeouts'), timeouts).map((glob) => {
      const keyPath = at('tools', 'timeouts', glob);
      const timeoutMs = duration(ctx, keyPath, timeouts[glob]);
      checkWithinLimit(ctx, keyPath, timeouts[glob], timeoutMs, limitMs);
      return { glob, timeoutMs: timeoutMs ?? 0 };
    }),
  };
  const written = duration(ctx, at('timeout'), entry['timeout']);
  checkWithinLimit(ctx, at('timeout'), entry['timeout'], written, limitMs);
  // Not written here: the gateway's idle timeout applies, cut to this server's limit. Only when
  // that differs from the gateway's own value (this server has a limit of its own) is it stated.
  const idleMs = limitMs === undefined ? inherited.idleMs : Math.min(inherited.idleMs, limitMs);
  const timeoutMs = written ?? (idleMs === gateway.callTimeoutMs ? undefined : idleMs);
  return { timeoutMs, maxTimeoutMs, tools: toolFilter };
}

/**
 * Reports a stdio server that is mcp-warden itself reading this same file. It happens when the
 * host's own file (which lists mcp-warden) is also given to mcp-warden: each gateway would start
 * another, without end. Told by a `mcp-warden` in the command line and an argument naming this
 * file (`--config=FILE` too), so a server that merely reads the host's file is not caught.
 */
function checkNotItself(ctx: Context, keyPath: KeyPath, args: unknown, server: StdioServerConfig): void {
  if (![server.command, ...server.args].some((part) => part.includes('mcp-warden'))) return;
  const list: readonly unknown[] = Array.isArray(args) ? args : [];
  const index = list.findIndex(
    (arg) => typeof arg === 'string' && path.resolve(server.cwd, arg.replace(/^--config=/, '')) === ctx.file,
  );
  if (index === -1) return;
  ctx.issues.add(
    [...keyPath, index],
    'value',
    'this server is mcp-warden reading this same file, so each gateway would start another without end; keep the servers mcp-warden fronts in a file of their own and give that file here',
  );
}

/**
 * A stdio server's `env` with the variables of its `envFile` (when it names one) beneath it: a
 * variable in both takes the value written under `env`, as in the editors. A file that cannot be
 * read is reported at `keyPath`, and the server keeps just its `env` (the config is discarded).
 */
function serverEnv(
  ctx: Context,
  keyPath: KeyPath,
  envFile: unknown,
  env: Readonly<Record<string, string>>,
): Readonly<Record<string, string>> {
  if (typeof envFile !== 'string' || envFile === '') return env; // absent, or the schema has said so
  const read = readEnvFile(envFile, { dir: ctx.dir });
  if ('problem' in read) {
    ctx.issues.add(keyPath, 'value', read.problem, { scope: 'server' });
    return env;
  }
  return { ...read.variables, ...env };
}

/**
 * What a bare number in each duration key would do, read as milliseconds, for the message that
 * refuses it (by the key's last segment; a tool glob under `tools.timeouts` ends every call).
 */
const BARE_NUMBER_EFFECT: Readonly<Record<string, string>> = {
  startupTimeout: 'stop waiting for the servers to start after',
  connectTimeout: 'give up starting each server after',
  initialDelay: 'restart a crashed server after',
  maxDelay: 'cap the wait before each restart at',
  window: 'count crashes only within',
};

/**
 * Whether a bare number is milliseconds in this key: only a server's `timeout` under
 * `mcpServers`, a key other hosts' files define in milliseconds (Claude Code's), so that such a
 * file works unchanged. Numbers there that look like seconds are refused in hostKeys.ts.
 */
function hostDefinesMilliseconds(keyPath: KeyPath): boolean {
  return keyPath.length === 3 && keyPath[0] === 'mcpServers' && keyPath[2] === 'timeout';
}

/**
 * A duration in ms, or undefined when absent; a bad one is reported and also gives undefined.
 * A bare number (other than 0, which needs no unit) is refused: whether it meant seconds or
 * milliseconds cannot be told, and the wrong guess ends calls at once or never.
 */
function duration(ctx: Context, keyPath: KeyPath, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') {
    ctx.issues.add(keyPath, 'value', `expected a duration (${DURATION_FORMS}), got ${describeValue(value)}`);
    return undefined;
  }
  if (typeof value === 'number' && value > 0 && Number.isFinite(value) && !hostDefinesMilliseconds(keyPath)) {
    const key = keyPath[2] === 'tools' ? 'timeout' : String(keyPath.at(-1));
    const effect =
      BARE_NUMBER_EFFECT[key] ??
      (keyPath[0] === 'confirmation' ? 'deny every confirmation not answered after' : 'end every call after');
    ctx.issues.add(keyPath, 'value', bareNumberMessage(value, { effect }));
    return undefined;
  }
  try {
    return parseDuration(value);
  } catch (error) {
    ctx.issues.add(keyPath, 'value', error instanceof Error ? error.message : String(error));
    return undefined;
  }
}

/**
 * Reports an idle timeout (written at `keyPath` as `value`, `ms` once parsed) that is longer than
 * the hard limit over it: the limit would always end the call first.
 */
function checkWithinLimit(
  ctx: Context,
  keyPath: KeyPath,
  value: unknown,
  ms: number | undefined,
  limitMs: number | undefined,
): void {
  if (ms === undefined || limitMs === undefined || ms <= limitMs) return;
  // As written when it is a string (the position points at it); a bare number of ms reads better in units.
  const shown = typeof value === 'string' ? value : formatDuration(ms);
  ctx.issues.add(keyPath, 'value', `${shown} is longer than maxTimeout (${formatDuration(limitMs)})`);
}

/**
 * The keys of a `repair:` section (gateway's or a server's) that are set, to be spread over the
 * settings they override. Wrongly typed values were reported by the schema and are left out.
 */
function repairOverrides(value: unknown): Partial<RepairConfig> {
  const { textForStructured, invalidStructured, structuredFromText, missingStructured } =
    asRecord(value) ?? {};
  return {
    ...(typeof textForStructured === 'boolean' ? { textForStructured } : {}),
    ...(invalidStructured === 'error' || invalidStructured === 'strip' || invalidStructured === 'off'
      ? { invalidStructured }
      : {}),
    ...(typeof structuredFromText === 'boolean' ? { structuredFromText } : {}),
    ...(missingStructured === 'error' || missingStructured === 'off' ? { missingStructured } : {}),
  };
}

/** A size limit in bytes (`gateway.maxMessageSize`, `audit.maxSize`), see `parseByteSize`. */
function byteSize(ctx: Context, keyPath: KeyPath, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const parsed = parseByteSize(value);
  if ('problem' in parsed) {
    ctx.issues.add(keyPath, 'value', parsed.problem);
    return undefined;
  }
  return parsed.bytes;
}

/**
 * A working directory (of a stdio server or the confirmation hook): relative to the config's
 * folder, `fallback` when not written.
 */
function resolveCwd(ctx: Context, value: unknown, fallback: string): string {
  const cwd = nonEmptyString(value);
  return cwd === undefined ? fallback : path.resolve(ctx.dir, cwd);
}

/** env / headers; non-string values were reported by the schema and are dropped. */
function stringMap(value: unknown): Readonly<Record<string, string>> {
  const map = asRecord(value) ?? {};
  // fromEntries defines own properties, so a `__proto__` header stays an ordinary entry.
  return Object.fromEntries(
    Object.entries(map).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

function asRecord(value: unknown): Data | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Data) : undefined;
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}
