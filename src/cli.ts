#!/usr/bin/env node
/**
 * The `mcp-warden` binary: argument parsing, config loading, signals and exit codes. The only
 * module that calls `process.exit`. Human-facing output of subcommands goes to stdout; in
 * serve mode stdout carries JSON-RPC only and everything else goes to stderr.
 *
 * Longer than most modules because it is every subcommand's argument handling, help text and exit
 * codes; the work of each command lives in src/commands/.
 */
import { readFileSync } from 'node:fs';
import { paletteFor, type Palette } from './lib/colour.js';
import { plural } from './lib/plural.js';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import type { WardenConfig } from './config/types.js';
import type { LoadedConfig } from './config/load.js';
import type { Redactor } from './features/audit/redact.js';
import { WardenError } from './core/errors.js';
import { ConfigError, formatConfigIssue, type ConfigIssue } from './config/issues.js';
import type { PolicySet } from './features/policy/index.js';
import type { PinSet } from './features/pins/pinFile.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ClosableLogger } from './core/logger.js';
import type { ManagedLocation, ManagedSettings } from './config/managed.js';
import type { TelemetryRuntime } from './features/telemetry/runtime.js';

// Every other module is imported where it is needed (measured): `--version` loads none of them,
// `check` only the config's, and serving spawns the upstreams (earlySpawn.ts) before it loads
// the gateway's, so that the servers' own start-up overlaps that loading.

const USAGE = `Usage:
  mcp-warden --config FILE            serve MCP on stdio (what a desktop host runs)
  mcp-warden --config FILE --http HOST:PORT
                                      serve MCP over HTTP at /mcp (team mode)
  mcp-warden check --config FILE      validate the config, its policy files and pins file
  mcp-warden tools --config FILE      start the upstreams, print the merged tool catalog, exit
  mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON]
                                      which policy rule decides a call of TOOL, and why
  mcp-warden pins diff|accept|list --config FILE [SERVER[/TOOL] ...]
                                      review tool definitions against their pins
  mcp-warden audit verify|summary FILE
                                      check an audit log's hash chain, or summarize it
  mcp-warden audit report FILE --html OUT.html
                                      a self-contained page of charts and tables of the log
  mcp-warden audit keygen [--out PREFIX]
                                      make the key pair for signed audit checkpoints
  mcp-warden init [--from HOST-FILE] [--policy NAME] [--config FILE] [--force]
                                      write a starter config from your host's MCP servers
  mcp-warden managed show [--managed FILE]
                                      the organisation's managed settings in force, and where from
  mcp-warden COMMAND --help           that command's options and exit codes
  mcp-warden --version | --help

The config file may also be given as MCP_WARDEN_CONFIG.
Exit codes: 0 ok; 1 the command ran and found problems (see each command); 2 bad usage, an
invalid config, policy or pins file, or a file that does not exist.
Colour: on when the output is a terminal; NO_COLOR=1 turns it off, FORCE_COLOR=1 forces it on.`;

/** Each command's own help: what `mcp-warden COMMAND --help` prints. */
const COMMAND_HELP: Readonly<Record<string, string>> = {
  serve: `Usage: mcp-warden [serve] --config FILE [--http HOST:PORT]

Serves MCP on stdio: what a desktop host runs. stdout carries JSON-RPC only; the log goes to
stderr (or gateway.log.file). A server whose entry cannot be used (an unset \${VAR}, an
unreadable envFile, type: sse) is left out and reported failed; the others serve.

  --http HOST:PORT   serve MCP Streamable HTTP at http://HOST:PORT/mcp instead of stdio (as
                     the config's listen.http does; the flag wins). A host other than a
                     loopback address needs an auth: section. Port 0 picks a free port; the
                     log says which (listening on http://...).

Exit codes: 0 the host closed the connection; 1 an internal error; 2 an invalid config, policy
or pins file (nothing is started).`,
  check: `Usage: mcp-warden check --config FILE [--live] [--managed FILE]

Validates the config file, its policy files and its pins file without starting any server.
Every problem is printed as FILE:LINE:COLUMN: KEY: message. Policy rules that can never match
are errors: a server glob that names no configured server, a tool or prompt glob written as the
name the host sees (fs__read_file) instead of the server's own (read_file). Warnings (ignored
keys, a stdio command not found on PATH) are printed too but do not fail the check.

  --live     also start the servers (as tools does) and warn about tool, prompt and resource
             globs that match nothing they offer, and about tools no rule decides
  --managed FILE
             check against this managed settings file instead of the machine's (to try one
             before rolling it out); the layers in force are printed either way

Exit codes: 0 valid (warnings allowed); 2 invalid, with every problem on stderr.`,
  tools: `Usage: mcp-warden tools --config FILE [--json]

Starts the upstream servers as serving would, waits for them (up to gateway.startupTimeout),
prints the merged tool catalog as the host would see it, and stops them. On a terminal,
progress goes to stderr while the servers start. Each server that is not ready is listed with
why; tools the policy hides and tools blocked by their pin are counted.

  --json     the catalog as JSON

Exit codes: 0 every enabled server is ready; 1 some server failed or was still starting;
2 an invalid config, policy or pins file.`,
  policy: `Usage: mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON] [--json]
                                 [--principal SUBJECT [--claim NAME=VALUE ...]]

Says which policy rule decides a call of TOOL (its exposed name, e.g. fs__write_file) with the
given arguments, and why.

  --principal SUBJECT   explain the call as made by this token subject (rules may match on the
                        principal); default: the OS user, as on stdio
  --claim NAME=VALUE    a claim of that principal, such as groups=admins (repeatable)

Exit codes: 0 explained; 1 TOOL is not offered by any server; 2 bad usage or an invalid config.`,
  pins: `Usage: mcp-warden pins diff|accept|list --config FILE [SERVER[/TOOL] ...]

  diff       start the upstreams and show each tool whose definition differs from its pin
             (- lines as pinned, + lines as listed now)
  accept     pin the current definitions of the named tools (or all of a SERVER's). With no
             SERVER[/TOOL], it shows every change and asks [y/N] on a terminal; elsewhere it
             needs --all. Each acceptance is written to the audit log when the config has one.
  list       what the pins file holds (no upstreams started)

  --all      accept every change without asking (pins accept)

Exit codes: diff: 0 everything matches, 1 something differs or a server was not available;
accept: 0 pinned (or nothing to pin), 1 declined, a server was not available or a tool could
not be pinned; list: 0. All: 2 bad usage or an invalid config or pins file.`,
  managed: `Usage: mcp-warden managed show [--managed FILE]

Prints the organisation's managed settings in force on this machine: the file they come from
(/etc/mcp-warden/managed.yaml on Linux, /Library/Application Support/mcp-warden/ on macOS,
%ProgramData%\\mcp-warden\\ on Windows, or the folder MCP_WARDEN_MANAGED_DIR names), their
policy files, the server allow and deny lists, the audit minimums and the locked settings.

  --managed FILE   show this file instead (validated the same way)

Exit codes: 0 shown (or there are none); 2 the managed file is invalid, or bad usage.`,
  audit: `Usage: mcp-warden audit verify FILE [--key PUB [--anchor CHECKPOINT]]
       mcp-warden audit summary FILE|SPOOL
       mcp-warden audit report FILE --html OUT.html
       mcp-warden audit keygen [--out PREFIX]

  verify     check the audit log's hash chain, rotated files (FILE.1, FILE.2, ...) included
  summary    calls per tool and per principal, denials, errors, p50/p95 duration, records
             waiting for a sink; given the spool folder of a trail without a local file
             (audit.file: false, audit.spool), the records waiting there for each sink
  report     write OUT.html, one self-contained page (no network needed to open it): calls
             over time, decisions by effect and rule, top tools and servers, denials and
             errors each with its record, principals, and whether the hash chain is intact
  keygen     write PREFIX.key (private, for audit.checkpoints.key) and PREFIX.pub;
             PREFIX defaults to ./audit-checkpoint

  --key PUB            also check the signed checkpoints with this public key: every record up
                       to the last checkpoint is as written, and none follows it unsigned
  --anchor CHECKPOINT  a checkpoint kept elsewhere (its JSON line, inline or in a file, e.g.
                       from the SIEM): the trail must still contain it

Exit codes: verify: 0 intact, 1 broken or tampered with; summary: 0; report: 0 written (a
broken chain is shown on the page and said on stderr); keygen: 0 written, 1 a key file exists.
All: 2 when there is no audit log at FILE (nor rotated files), an unusable key or anchor, or
bad usage.`,
};

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** Exit codes: 0 ok, 1 a check or command found problems, 2 bad usage, an invalid or missing file. */
const EXIT_USAGE = 2;

/** Colour for what goes to stdout and to stderr, each judged on its own stream. */
const colour = {
  out: paletteFor(process.stdout, process.env),
  err: paletteFor(process.stderr, process.env),
};

/** Prints `mcp-warden: message` (its first line in red on a terminal) and exits. */
function fail(message: string, code = EXIT_USAGE): never {
  const [first = '', ...rest] = message.split('\n');
  process.stderr.write(`${[colour.err.red(`mcp-warden: ${first}`), ...rest].join('\n')}\n`);
  process.exit(code);
}

/** The help of `command` (its own when it has one): what usage errors point to. */
function usageOf(command: string | undefined): string {
  return (command !== undefined ? COMMAND_HELP[command] : undefined) ?? USAGE;
}

interface Loaded {
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
   * The config file as read at start, loaded again under other managed settings (an edit of
   * `managed.yaml` while serving). Throws `ConfigError` as loading does.
   */
  readonly reload: (managed: ManagedSettings) => LoadedConfig;
}

/** The config and its policy files, or an exit with every problem found (never half a gateway). */
async function load(file: string | undefined, options: LoadConfigOptions = {}): Promise<Loaded> {
  const loaded = await loadConfigFile(file, options);
  return { ...loaded, policies: await loadPolicyFiles(loaded.config) };
}

/** How the commands load the config: serving and `tools` go on without a server whose entry is bad. */
interface LoadConfigOptions {
  readonly badServers?: 'refuse' | 'mark-failed';
  /** A managed settings file to use instead of the machine's (`check --managed FILE`). */
  readonly managedFile?: string;
}

/**
 * The machine's managed settings (or the file given), or an exit: a managed file that is there
 * but cannot be used stops everything, because an organisation's settings must never be
 * skipped silently.
 */
async function loadManaged(
  managedFile: string | undefined,
): Promise<{ managed?: ManagedSettings; location: ManagedLocation }> {
  const { loadManagedSettings, locateManaged } = await import('./config/managed.js');
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
      fail(`invalid managed settings (nothing is started until they are fixed):\n${error.message}`);
    throw error;
  }
}

function ignoredOverride(location: ManagedLocation): ConfigIssue[] {
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
async function loadConfigFile(
  file: string | undefined,
  options: LoadConfigOptions = {},
): Promise<Omit<Loaded, 'policies'>> {
  const chosen = file ?? process.env.MCP_WARDEN_CONFIG;
  if (chosen === undefined || chosen === '') fail(`no config file given (use --config FILE)\n\n${USAGE}`);
  const [{ parseConfigText }, { readSourceFile }, { createRedactor, RedactorConfigError }, found] =
    await Promise.all([
      import('./config/load.js'),
      import('./config/yamlSource.js'),
      import('./features/audit/redact.js'),
      loadManaged(options.managedFile),
    ]);
  const { managed } = found;
  const absolute = path.resolve(chosen);
  let loaded: LoadedConfig;
  let reload: Loaded['reload'];
  try {
    const text = await readSourceFile(absolute, 'config file');
    const parse = (under: ManagedSettings | undefined) =>
      parseConfigText(text, {
        file: absolute,
        env: process.env,
        ...(options.badServers && { badServers: options.badServers }),
        ...(under && { managed: under }),
      });
    reload = parse;
    loaded = parse(managed);
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid config:\n${error.message}`);
    throw error;
  }
  let { config } = loaded;
  if (managed !== undefined) {
    const { applyServerRules } = await import('./core/upstreams/managedServers.js');
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
      fail(
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
    return { config, redactor, warnings, refusals, reload, ...(managed && { managed }) };
  } catch (error) {
    if (error instanceof RedactorConfigError)
      fail(`invalid config:\n${config.file}: audit.redact: ${error.message}`);
    throw error;
  }
}

/** The config's policy files, or an exit with every problem found. */
async function loadPolicyFiles(config: WardenConfig): Promise<PolicySet> {
  const { loadPolicies } = await import('./features/policy/loadPolicies.js');
  try {
    return await loadPolicies(config.policies, config.managed && { managed: config.managed.policies });
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid policy:\n${error.message}`);
    throw error;
  }
}

/** The config's pins file as read now (missing: no pins), or an exit naming its problems. */
async function loadPinsFile(config: WardenConfig): Promise<{ pins: PinSet; text: string | undefined }> {
  if (config.pins === undefined)
    fail(`${config.file} has no pins: section; add one, e.g.\n  pins:\n    file: ./tool-pins.json`);
  const { readPinFile } = await import('./features/pins/pinFile.js');
  try {
    return readPinFile(config.pins.file);
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid pins file:\n${error.message}`);
    throw error;
  }
}

/** One line per config warning, as the subcommands print them (stdout for `check`, else stderr). */
function warningLines(warnings: readonly ConfigIssue[], palette: Palette = colour.err): string {
  return warnings.map((warning) => `${palette.yellow('warning:')} ${formatConfigIssue(warning)}\n`).join('');
}

/**
 * The OpenTelemetry SDK, started when the config has `telemetry:` with a signal on. Its modules
 * are imported only then: without it, serving loads none of them. An OTEL_* setting it cannot
 * honour stops start-up like an invalid config.
 */
async function startTelemetryIfConfigured(
  config: WardenConfig,
  logger: ClosableLogger,
): Promise<TelemetryRuntime | undefined> {
  const wanted = config.telemetry;
  if (wanted === undefined || (!wanted.traces && !wanted.metrics)) return undefined;
  const { startTelemetry, TelemetrySetupError } = await import('./features/telemetry/sdk.js');
  try {
    return await startTelemetry({ config: wanted, env: process.env, logger, version: version() });
  } catch (error) {
    if (error instanceof TelemetrySetupError) fail(`invalid telemetry setting: ${error.message}`);
    throw error;
  }
}

/**
 * Puts each valid edit of `managed.yaml` in force while serving: the config file as read at
 * start is loaded again under the new settings (an edit that makes it invalid is refused, with
 * file:line, and the last good version stays), then the new policies, server lists, locked
 * settings and audit minimums apply. Each user setting the edit now overrides is logged like at
 * start; what cannot change in a running process is logged as an error naming key and file.
 */
async function watchManagedWhileServing(options: {
  readonly managed: ManagedSettings;
  readonly loaded: Omit<Loaded, 'policies'>;
  readonly config: WardenConfig;
  readonly gateway: import('./gateway.js').Gateway;
  readonly trail: import('./features/audit/openTrail.js').AuditTrail | undefined;
  readonly logger: ClosableLogger;
}): Promise<{ close(): void }> {
  const { managed, loaded, config, gateway, trail, logger } = options;
  const [{ watchManaged }, { applyServerRules }, { managedSettingsNotes }] = await Promise.all([
    import('./commands/managed.js'),
    import('./core/upstreams/managedServers.js'),
    import('./config/managedReload.js'),
  ]);
  // Each server is judged afresh against the new lists, from its entry as configured.
  const configured = config.servers.map(({ blockedByManaged: _blocked, ...server }) => server);
  let inForce = config;
  let refused = new Set(loaded.refusals.map(formatConfigIssue));
  return watchManaged(managed, logger, async (next, before) => {
    const reloaded = loaded.reload(next);
    const notes = managedSettingsNotes({
      atStart: managed,
      before,
      after: next,
      startAudit: config.audit,
      audit: inForce.audit,
      nextAudit: reloaded.config.audit,
    });
    await gateway.applyManaged({
      policies: next.policies,
      servers: await applyServerRules(configured, next, process.env),
      settings: reloaded.config,
    });
    if (trail !== undefined && reloaded.config.audit !== undefined) await trail.retune(reloaded.config.audit);
    for (const refusal of reloaded.refusals.map(formatConfigIssue))
      if (!refused.has(refusal)) logger.error(refusal);
    for (const line of notes.info) logger.info(line);
    for (const line of notes.errors) logger.error(line);
    refused = new Set(reloaded.refusals.map(formatConfigIssue));
    inForce = reloaded.config;
  });
}

/**
 * Keeps V8's young generation at the size it starts with (a few MB) while the gateway starts,
 * where V8 would grow it (to 16 MB, then 32 MB) after collections in which much survived. That
 * is what start-up is: the modules, and with a long tool list its parsed definitions, its served
 * text and bytes, all long-lived, so growing the young generation for them buys nothing, and the
 * pages grown into stay resident for the rest of the run. Measured with 10,000 tools
 * (bench/listRss.mjs): the peak resident size fell by about 7 MB. Once the upstreams' first
 * lists are in (see `serve`), V8's own rule applies again: kept small under call traffic, the young generation
 * cost about 3.5% more instructions per call (more frequent collections, measured under
 * callgrind), so a busy gateway's young generation still grows as before. V8 reads this flag
 * at each growth it considers (on the command line it would not take a value below 2); a Node
 * without it says so on stderr and grows as before.
 */
function youngGenerationGrowth(grows: boolean): void {
  setFlagsFromString(`--semi-space-growth-factor=${grows ? 2 : 1}`);
}

async function serve(file: string | undefined, flags: { readonly http?: string } = {}): Promise<void> {
  youngGenerationGrowth(false);
  const loaded = await loadConfigFile(file, { badServers: 'mark-failed' });
  const { redactor, warnings, refusals, managed } = loaded;
  // From the config layer, not the listener's module: a stdio gateway loads no HTTP code.
  const { listenFrom } = await import('./config/team.js');
  const listening = listenFrom(loaded.config, flags.http);
  if (typeof listening === 'string') fail(`${listening}\n\n${usageOf('serve')}`);
  const config = listening;
  // Like an invalid config, an invalid pins file stops us before any server is started.
  const pins = config.pins === undefined ? undefined : await loadPinsFile(config);
  // The config is valid: start the upstream processes now, and load the policies and the
  // gateway's modules while they boot. Should a policy file be invalid, they are killed with
  // the exit that reports it, before any of them was spoken to.
  const { spawnEarly } = await import('./core/upstreams/earlySpawn.js');
  const { sharedServers } = await import('./core/upstreams/principalPools.js');
  // Per-principal servers start on their principal's first use, never ahead.
  const early = spawnEarly(sharedServers(config));
  // Whatever happens, no child process outlives us; the gateway's
  // pool keeps its children in this same set.
  process.on('exit', () => {
    for (const child of early.children) child.killNow();
  });
  const policies = await loadPolicyFiles(config);
  const [
    { openAuditTrail },
    { createGateway },
    { createLogger },
    { HOST_MAX_DEPTH, truncateForEcho },
    { StreamTransport },
    { EnvelopeReuse },
  ] = await Promise.all([
    import('./features/audit/openTrail.js'),
    import('./gateway.js'),
    import('./core/logger.js'),
    import('./core/protocol/jsonRpc.js'),
    import('./core/transports/streamTransport.js'),
    import('./core/host/envelopeReuse.js'),
  ]);
  const logger = createLogger(config.gateway.log, {
    redact: { text: (t) => redactor.redactText(t), value: (v) => redactor.redactValue(v) },
  });
  // stderr (or the log file) is where a host keeps what its servers say; the gateway serves anyway.
  for (const warning of warnings)
    if (refusals.includes(warning)) logger.error(formatConfigIssue(warning));
    else logger.warn(formatConfigIssue(warning));
  for (const server of config.servers)
    if (server.blockedByManaged !== undefined)
      logger.error(
        `server "${server.name}" is not started, it is blocked by managed settings: ${server.blockedByManaged}`,
      );
    else if (server.failedAtLoad !== undefined)
      logger.error(
        `server "${server.name}" is not started, its config entry has problems: ${server.failedAtLoad}`,
      );
  const telemetry = await startTelemetryIfConfigured(config, logger);
  const auditWrite = telemetry?.instruments?.auditWrite;
  /** One id per gateway process: every audit record of this session carries it. */
  const session = (await import('node:crypto')).randomUUID();
  let trail;
  try {
    trail =
      config.audit === undefined
        ? undefined
        : await openAuditTrail(config.audit, {
            redactor,
            logger,
            session,
            version: version(),
            ...(auditWrite && { onWrite: (write: { ms: number }) => auditWrite.record(write.ms / 1000) }),
            // A managed edit may add sinks while serving.
            sinksMayChange: managed !== undefined,
          });
  } catch (error) {
    // An unusable checkpoint key, or a sink's spool folder that cannot be made.
    fail(`invalid config:\n${config.file}: audit: ${(error as Error).message}`);
  }
  const audit = trail?.log;
  if (audit !== undefined && !audit.healthy && audit.lastError !== undefined)
    logger.error(`AUDIT: ${audit.lastError.message}`);
  const servesStdio = config.listen === undefined || config.listen.stdio;
  const host = new StreamTransport({
    input: process.stdin,
    output: process.stdout,
    maxLineBytes: config.gateway.maxMessageBytes,
    // The host is waiting on its requests: a malformed one is answered under its id.
    answerInvalid: true,
    maxDepth: HOST_MAX_DEPTH,
    // A modern host's envelope, the same text on every request, is parsed once.
    parse: new EnvelopeReuse().parse,
    onJunk: (line, reason) =>
      logger.warn(
        `host sent a line that is not a JSON-RPC message we serve (${reason})${line === '' ? '' : `: ${truncateForEcho(line)}`}`,
      ),
    onOversize: (info) =>
      logger.error(`host sent a message of ${info.bytes} bytes, over gateway.maxMessageSize; refused`),
  });
  const gateway = createGateway({
    config,
    policies,
    redactor,
    logger,
    ...(servesStdio && { host }),
    // Hosts over HTTP have calls in flight when a replica is stopped: give them time to finish.
    ...(config.listen && { shutdownGraceMs: 5000 }),
    version: version(),
    early,
    ...(audit && { audit }),
    ...(pins && { pins }),
    ...(telemetry && { telemetry }),
    session,
  });

  const managedWatcher =
    managed === undefined
      ? undefined
      : await watchManagedWhileServing({ managed, loaded, config, gateway, trail, logger });

  let exiting = false;
  let listener: import('./http/listener.js').Listener | undefined;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (exiting) return;
    exiting = true;
    managedWatcher?.close();
    logger.info(`shutting down: ${why}`);
    // Hard stop well inside the 2 s a host gives us, whatever an upstream does; an HTTP
    // listener's hosts get longer for the calls they have in flight.
    setTimeout(
      () => {
        gateway.killChildrenNow();
        process.exit(code);
      },
      config.listen === undefined ? 1900 : 10_000,
    ).unref();
    try {
      // No new connections; requests in flight are answered (the routers drain), then sessions end.
      listener?.stopAccepting();
      await gateway.close(why);
      await listener?.close();
      // The last records (the stop, the final checkpoint) go to the sinks if they can in time.
      await trail?.drain(1000);
    } catch (error) {
      logger.error(`error while shutting down: ${String(error)}`);
    }
    // What the exporters still hold goes out now, within the hard stop above.
    if (telemetry !== undefined)
      await Promise.race([telemetry.shutdown(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    await closeLogger(logger);
    process.exit(code);
  };

  if (servesStdio) host.onclose = () => void shutdown('the host closed stdin', 0);
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));
  process.on('SIGHUP', () => void shutdown('SIGHUP', 0));
  process.on('uncaughtException', (error) => {
    logger.error(`uncaught exception: ${error.stack ?? error.message}`);
    void shutdown('an internal error', 1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.error(
      `unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`,
    );
  });

  logger.info(
    `mcp-warden ${version()} serving ${plural(config.servers.length, 'upstream')} from ${config.file}`,
  );
  // Until the upstreams' first lists are in; at the latest once their start-up window has passed
  // (no host has asked anything yet, or every server is started per principal, later).
  const growAgain = setTimeout(() => youngGenerationGrowth(true), config.gateway.startupTimeoutMs);
  growAgain.unref();
  void gateway.pool.startedUp.then(() => {
    clearTimeout(growAgain);
    youngGenerationGrowth(true);
  });
  await gateway.start();
  if (config.listen !== undefined) {
    const { startHttp } = await import('./http/serveHttp.js');
    try {
      listener = await startHttp({ config, gateway, logger });
    } catch (error) {
      logger.error(
        `cannot listen on ${config.listen.host}:${config.listen.port}: ${(error as Error).message}`,
      );
      await shutdown('the HTTP listener could not start', 1);
    }
  }
}

async function closeLogger(logger: ClosableLogger): Promise<void> {
  await Promise.race([logger.close(), new Promise((r) => setTimeout(r, 500).unref())]);
}

/** What `pins accept` was told to accept: named tools or servers, or every change. */
type AcceptScope = 'named' | 'all' | 'ask';

/** `mcp-warden pins diff|accept|list`: exit 0 when all matches (or was pinned), 1 when not. */
async function pinsCommand(
  sub: 'diff' | 'accept' | 'list',
  configFile: string | undefined,
  args: string[],
  options: { readonly all: boolean },
) {
  if (sub !== 'accept' && options.all) fail(`--all applies to pins accept only\n\n${usageOf('pins')}`);
  if (sub === 'accept' && options.all && args.length > 0)
    fail(`give either SERVER[/TOOL] arguments or --all, not both\n\n${usageOf('pins')}`);
  const scope: AcceptScope = args.length > 0 ? 'named' : options.all ? 'all' : 'ask';
  // Asking needs a person to answer; a script must say --all, so it never accepts by accident.
  if (sub === 'accept' && scope === 'ask' && process.stdin.isTTY !== true)
    fail(
      'pins accept without SERVER[/TOOL] arguments accepts every change: not on a terminal, say so with --all\n\n' +
        usageOf('pins'),
    );
  // A bad server entry leaves that server out (its tools are neither compared nor accepted), as
  // serving does; the listing says which server failed and why.
  const { config, redactor, warnings } = await loadConfigFile(configFile, { badServers: 'mark-failed' });
  process.stderr.write(warningLines(warnings));
  const { pins } = await loadPinsFile(config);
  const settings = config.pins!;
  const commands = await import('./commands/pins.js');
  if (sub === 'list') return print(commands.formatPinList(pins, settings.file));
  const selectors = commands.parseSelectors(args, config);
  const [{ createLogger }, { terminalProgress }] = await Promise.all([
    import('./core/logger.js'),
    import('./commands/progress.js'),
  ]);
  const logger = createLogger({ level: 'warn' });
  const progress = terminalProgress(process.stderr, colour.err);
  let comparison;
  try {
    comparison = await commands.comparePins({
      config,
      pins,
      selectors,
      logger,
      version: version(),
      ...(progress && { progress }),
    });
  } finally {
    await closeLogger(logger);
  }
  await print(
    commands.formatDiff(comparison, {
      configFile: config.file,
      acceptHint: sub === 'diff',
      palette: colour.out,
      hiddenByPolicy: await countHiddenByPolicy(config, comparison.reviews),
    }),
  );
  if (sub === 'diff') process.exit(commands.differs(comparison) ? 1 : 0);
  const pending = commands.acceptable(comparison).length;
  if (
    scope === 'ask' &&
    pending > 0 &&
    !(await confirm(`accept ${plural(pending, 'change')} shown above?`))
  ) {
    await print('nothing accepted\n');
    process.exit(1);
  }
  let acceptance;
  try {
    acceptance = commands.acceptPins(comparison, settings);
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid pins file:\n${error.message}`);
    fail(`cannot write the pins file ${settings.file}: ${(error as Error).message}`, 1);
  }
  await auditAcceptance(config, redactor, acceptance);
  await print(commands.formatAcceptance(acceptance, settings.file));
  process.exit(comparison.unavailable.length > 0 || acceptance.unpinnable.length > 0 ? 1 : 0);
}

/**
 * How many of the compared tools the policy files hide from the host: their pins are compared
 * all the same (a policy can change), and the count says why the host does not list them.
 */
async function countHiddenByPolicy(
  config: WardenConfig,
  reviews: readonly { readonly server: string; readonly tool: string; readonly definition: object }[],
): Promise<number> {
  const [policies, { createPolicyEngine }, { hiddenByPolicy }] = await Promise.all([
    loadPolicyFiles(config),
    import('./features/policy/engine.js'),
    import('./features/policy/visibility.js'),
  ]);
  const engine = createPolicyEngine(policies);
  const hidden = hiddenByPolicy(() => engine, config.servers);
  return reviews.filter((r) => hidden(r.server, { ...r.definition, name: r.tool } as Tool)).length;
}

/**
 * Who `policy explain` explains a call for: `--principal SUBJECT` with `--claim NAME=VALUE`
 * (repeatable; several values of one claim make a list, as a token's groups are), or else the
 * OS user, as on stdio.
 */
async function explainedPrincipal(subject: string | undefined, claims: string[] | undefined) {
  const { osPrincipal, tokenPrincipal } = await import('./core/principal.js');
  if (subject === undefined) {
    if (claims !== undefined) fail(`--claim needs --principal SUBJECT\n\n${usageOf('policy')}`);
    return osPrincipal();
  }
  const values = new Map<string, string[]>();
  for (const claim of claims ?? []) {
    const at = claim.indexOf('=');
    if (at <= 0) fail(`--claim ${claim}: expected NAME=VALUE, such as groups=admins\n\n${usageOf('policy')}`);
    const name = claim.slice(0, at);
    values.set(name, [...(values.get(name) ?? []), claim.slice(at + 1)]);
  }
  const payload: Record<string, unknown> = { sub: subject };
  for (const [name, list] of values) payload[name] = list.length > 1 ? list : list[0];
  return tokenPrincipal(payload, [...values.keys()]);
}

/** Asks a yes/no question on the terminal (stderr); only y or yes is yes. */
async function confirm(question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${colour.err.bold(question)} [y/N] `);
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}

/**
 * One `tool_pinned` record per accepted pin, saying who accepted it, when the config keeps an
 * audit trail: a pin decides what the host may call, so changing one belongs in the trail. A
 * trail that cannot be written fails the command (the pins are written by then; it says so).
 */
async function auditAcceptance(
  config: WardenConfig,
  redactor: Redactor,
  acceptance: import('./commands/pins.js').Acceptance,
): Promise<void> {
  if (config.audit === undefined || acceptance.pinned.length === 0) return;
  const [{ openAuditLog }, { randomUUID }, { userInfo }] = await Promise.all([
    import('./features/audit/auditWriter.js'),
    import('node:crypto'),
    import('node:os'),
  ]);
  const session = randomUUID();
  // Signed like the gateway's records, so a verify with the key does not find them unsigned.
  const signing = config.audit.checkpoints;
  let checkpoints;
  try {
    checkpoints = signing && {
      signer: (await import('./features/audit/checkpoint.js')).loadCheckpointSigner(signing.key),
      intervalMs: signing.intervalMs,
    };
  } catch (error) {
    fail(`invalid config:\n${config.file}: audit.checkpoints.key: ${(error as Error).message}`);
  }
  let drain = (_ms: number): Promise<void> => Promise.resolve();
  let log;
  if (config.audit.file === undefined) {
    // No local file: the records go where the gateway's go, the sinks (through their spools).
    const [{ openAuditTrail }, { createLogger }] = await Promise.all([
      import('./features/audit/openTrail.js'),
      import('./core/logger.js'),
    ]);
    const trail = await openAuditTrail(
      { ...config.audit, onFailure: 'continue' },
      { redactor, logger: createLogger({ level: 'warn' }), session, version: version() },
    );
    ({ log, drain } = trail);
  } else {
    log = await openAuditLog({
      file: config.audit.file,
      maxBytes: config.audit.maxBytes,
      maxFiles: config.audit.maxFiles,
      onFailure: 'continue',
      fsync: config.audit.fsync,
      writes: 'immediate',
      redactor,
      session,
      ...(checkpoints && { checkpoints }),
    });
  }
  const { osPrincipal } = await import('./core/principal.js');
  const principal = osPrincipal();
  let by: string;
  try {
    by = userInfo().username;
  } catch {
    by = process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
  for (const { server, tool, pin, previous } of acceptance.pinned)
    log.append({
      type: 'tool_pinned',
      session,
      principal,
      server,
      upstreamTool: tool,
      sha256: pin.sha256,
      how: 'accepted',
      by,
      ...(previous !== undefined && { previousSha256: previous.sha256 }),
    });
  log.flush();
  const failure = log.healthy ? undefined : log.lastError;
  log.close();
  await drain(5000);
  if (failure !== undefined)
    fail(`pinned, but the audit log ${log.file} could not record it: ${failure.message}`, 1);
}

/** Writes to stdout and waits until it is handed to the OS: a report can be long, and we exit next. */
function print(text: string): Promise<void> {
  return new Promise((resolve) => process.stdout.write(text, () => resolve()));
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'init') {
    // init has options of its own, so it reads its arguments itself.
    const { runInit, terminalChooser } = await import('./commands/init.js');
    const code = await runInit(argv.slice(1), {
      home: (await import('node:os')).homedir(),
      platform: process.platform,
      env: process.env,
      cwd: process.cwd(),
      execPath: process.execPath,
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
      choose: terminalChooser(process.stdin, process.stderr),
    });
    await print('');
    process.exit(code);
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        all: { type: 'boolean' },
        live: { type: 'boolean' },
        managed: { type: 'string' },
        html: { type: 'string' },
        key: { type: 'string' },
        anchor: { type: 'string' },
        out: { type: 'string' },
        http: { type: 'string' },
        principal: { type: 'string' },
        claim: { type: 'string', multiple: true },
      },
    });
  } catch (error) {
    fail(`${(error as Error).message}\n\n${usageOf(argv.find((arg) => !arg.startsWith('-')))}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    // `mcp-warden check --help` (or `mcp-warden help check`): that command's own help.
    process.stdout.write(`${usageOf(positionals[0])}\n`);
    return;
  }
  if (positionals[0] === 'help') {
    process.stdout.write(`${usageOf(positionals[1])}\n`);
    return;
  }
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return;
  }
  const [command = 'serve', ...rest] = positionals;
  const noMore = (args: string[]) => {
    if (args.length > 0) fail(`unexpected argument "${args[0]}"\n\n${usageOf(command)}`);
  };
  if (values.all === true && command !== 'pins')
    fail(`--all applies to pins accept only\n\n${usageOf(command)}`);
  if (values.managed !== undefined && command !== 'check' && command !== 'managed')
    fail(`--managed applies to check and managed show only\n\n${usageOf(command)}`);

  switch (command) {
    case 'serve':
      noMore(rest);
      return serve(values.config, { ...(values.http !== undefined && { http: values.http }) });
    case 'check': {
      noMore(rest);
      const {
        config,
        policies,
        warnings: fileWarnings,
        managed,
      } = await load(values.config, {
        ...(values.managed !== undefined && { managedFile: values.managed }),
      });
      if (config.pins !== undefined) await loadPinsFile(config);
      const [{ commandsNotFound }, { lintPolicies, lintPoliciesLive }] = await Promise.all([
        import('./commands/check.js'),
        import('./commands/policyLint.js'),
      ]);
      const dead = lintPolicies(config, policies);
      if (dead.length > 0) fail(`invalid policy:\n${dead.map(formatConfigIssue).join('\n')}`);
      const live: ConfigIssue[] = [];
      if (values.live === true) {
        const { createLogger } = await import('./core/logger.js');
        const logger = createLogger({ level: 'error' });
        live.push(...(await lintPoliciesLive(config, policies, { logger, version: version() })));
        await closeLogger(logger);
      }
      const { blockedServerIssues, layersLine } = await import('./commands/managed.js');
      const warnings = [
        ...fileWarnings,
        ...blockedServerIssues(config),
        ...(await commandsNotFound(config)),
        ...live,
      ];
      const enabled = config.servers.filter((s) => !s.disabled).length;
      const rules = policies.files.reduce((n, f) => n + f.rules.length, 0);
      const policyText =
        policies.files.length === 0
          ? 'no policy files'
          : `${plural(policies.files.length, 'policy file')}, ${plural(rules, 'rule')}`;
      const warningText = warnings.length === 0 ? '' : `; ${plural(warnings.length, 'warning')}`;
      const ok = colour.out.green('ok');
      process.stdout.write(
        `${warningLines(warnings, colour.out)}${layersLine(config, managed)}${config.file}: ${ok} (${plural(config.servers.length, 'server')}, ${enabled} enabled; ${policyText}${warningText})\n`,
      );
      return;
    }
    case 'tools': {
      noMore(rest);
      const { config, policies, warnings } = await load(values.config, { badServers: 'mark-failed' });
      // stderr: stdout carries the catalog, as JSON with --json.
      process.stderr.write(warningLines(warnings));
      const [
        { createLogger },
        { createPolicyEngine },
        { hiddenByPolicy },
        { listCatalog, formatCatalog },
        { terminalProgress },
      ] = await Promise.all([
        import('./core/logger.js'),
        import('./features/policy/engine.js'),
        import('./features/policy/visibility.js'),
        import('./commands/tools.js'),
        import('./commands/progress.js'),
      ]);
      const logger = createLogger({ level: 'warn' });
      const engine = createPolicyEngine(policies);
      const byPolicy = hiddenByPolicy(() => engine, config.servers);
      // What the host would see: tools the policy always denies are left out, and so are tools
      // whose pin blocks them (changed since pinned, or new under onNew: block).
      let byPins: ((server: string, tool: Tool) => boolean) | undefined;
      if (config.pins !== undefined) {
        const [{ blockedByPins }, { pins }] = await Promise.all([
          import('./features/pins/pinDecision.js'),
          loadPinsFile(config),
        ]);
        byPins = blockedByPins(pins, config.pins);
      }
      const blocked: string[] = [];
      const progress = terminalProgress(process.stderr, colour.err);
      const listing = await listCatalog({
        config,
        logger,
        version: version(),
        hiddenByPolicy: byPolicy,
        hidden: (server, tool) => {
          if (byPins?.(server, tool) !== true) return false;
          blocked.push(`${server}/${tool.name}`);
          return true;
        },
        ...(progress && { progress }),
      });
      const pinned = [...new Set(blocked)];
      if (pinned.length > 0) {
        process.stderr.write(
          `mcp-warden: left out because their pin blocks them (review with mcp-warden pins diff): ${pinned.join(', ')}\n`,
        );
      }
      process.stdout.write(
        values.json ? `${JSON.stringify(listing, null, 2)}\n` : formatCatalog(listing, colour.out),
      );
      await closeLogger(logger);
      process.exit(listing.servers.some((s) => s.state === 'failed' || s.state === 'unavailable') ? 1 : 0);
    }
    // falls through: process.exit above never returns
    case 'policy': {
      const [sub, tool, argsJson, ...extra] = rest;
      if (sub !== 'explain' || tool === undefined)
        fail(`usage: mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON]\n\n${usageOf('policy')}`);
      noMore(extra);
      let args: Record<string, unknown> | undefined;
      if (argsJson !== undefined) {
        try {
          args = JSON.parse(argsJson) as Record<string, unknown>;
        } catch (error) {
          fail(`ARGUMENTS-JSON is not JSON: ${(error as Error).message}`);
        }
        if (typeof args !== 'object' || args === null || Array.isArray(args))
          fail('ARGUMENTS-JSON must be a JSON object');
      }
      const { config, policies, warnings } = await load(values.config);
      process.stderr.write(warningLines(warnings));
      const { createLogger } = await import('./core/logger.js');
      const logger = createLogger({ level: 'warn' });
      try {
        const { explainPolicy, formatExplanation } = await import('./commands/policyExplain.js');
        const report = await explainPolicy({
          config,
          policies,
          exposedName: tool,
          arguments: args,
          logger,
          version: version(),
          principal: await explainedPrincipal(values.principal, values.claim),
        });
        process.stdout.write(
          values.json ? `${JSON.stringify(report, null, 2)}\n` : formatExplanation(report),
        );
      } catch (error) {
        if (error instanceof WardenError) fail(error.message, 1);
        throw error;
      } finally {
        await closeLogger(logger);
      }
      return;
    }
    case 'pins': {
      const [sub, ...selectorArgs] = rest;
      if (sub !== 'diff' && sub !== 'accept' && sub !== 'list')
        fail(
          `usage: mcp-warden pins diff|accept|list --config FILE [SERVER[/TOOL] ...]\n\n${usageOf('pins')}`,
        );
      if (sub === 'list') noMore(selectorArgs);
      return pinsCommand(sub, values.config, selectorArgs, { all: values.all === true }).catch(
        (error: unknown) => {
          // A SERVER[/TOOL] argument that names nothing: usage, like an unknown command.
          if (error instanceof WardenError && error.code === 'INVALID_PARAMS') fail(error.message);
          throw error;
        },
      );
    }
    case 'managed': {
      const [sub, ...extra] = rest;
      if (sub !== 'show') fail(`usage: mcp-warden managed show [--managed FILE]\n\n${usageOf('managed')}`);
      noMore(extra);
      const { managed, location } = await loadManaged(values.managed);
      const { formatManaged } = await import('./commands/managed.js');
      for (const issue of ignoredOverride(location))
        process.stderr.write(`mcp-warden: ${formatConfigIssue(issue)}\n`);
      process.stdout.write(formatManaged(managed, location));
      return;
    }
    case 'audit': {
      const [sub, file, ...extra] = rest;
      const { auditKeygen, auditPending, auditVerify } = await import('./commands/audit.js');
      const finish = (result: Awaited<ReturnType<typeof auditVerify>>): never => {
        if ('usage' in result) fail(`${result.usage}\n\n${usageOf('audit')}`);
        if ('error' in result) fail(result.error, result.code);
        process.stdout.write(result.stdout);
        process.exit(result.code);
      };
      if (sub !== 'keygen' && values.out !== undefined)
        fail(`--out applies to audit keygen only\n\n${usageOf('audit')}`);
      if (sub !== 'verify' && (values.key !== undefined || values.anchor !== undefined))
        fail(`--key and --anchor apply to audit verify only\n\n${usageOf('audit')}`);
      if (sub === 'keygen') {
        noMore(rest.slice(1));
        finish(await auditKeygen(values.out));
      }
      if ((sub !== 'verify' && sub !== 'summary' && sub !== 'report') || file === undefined)
        fail(
          `usage: mcp-warden audit verify FILE | mcp-warden audit summary FILE | mcp-warden audit report FILE --html OUT.html | mcp-warden audit keygen\n\n${usageOf('audit')}`,
        );
      if (sub === 'report' && (values.html === undefined || values.html === ''))
        fail(`audit report needs --html OUT.html (the page to write)\n\n${usageOf('audit')}`);
      noMore(extra);
      const base = path.resolve(file);
      const { statSync } = await import('node:fs');
      if (sub === 'summary' && statSync(base, { throwIfNoEntry: false })?.isDirectory() === true) {
        // A trail without a local file is, on this machine, only what waits in its spools.
        const pending = await auditPending(base, { root: true });
        process.stdout.write(
          pending === '' ? `nothing waits in ${base}: the sinks have every record\n` : pending.slice(1),
        );
        return;
      }
      const { auditFileSet } = await import('./features/audit/files.js');
      // Reading nothing would report an empty (or broken) log: say that there is none instead.
      if (auditFileSet(base).files.length === 0)
        fail(
          `no audit log at ${base} (nor rotated files ${path.basename(base)}.1, .2, ...); check the path, or audit.file in the config (with audit.file: false the records are at the sinks only; audit summary SPOOL says what waits for them)`,
        );
      if (sub === 'verify') {
        finish(
          await auditVerify(base, {
            ...(values.key !== undefined && { key: values.key }),
            ...(values.anchor !== undefined && { anchor: values.anchor }),
          }),
        );
      }
      if (sub === 'report') return auditReport(base, path.resolve(values.html!));
      const { formatSummary, summarizeAudit } = await import('./features/audit/summary.js');
      process.stdout.write(formatSummary(summarizeAudit(base)) + (await auditPending(base)));
      return;
    }
    default:
      fail(`unknown command "${command}"\n\n${USAGE}`);
  }
}

/** Writes the HTML report of the audit log at `base` to `out`, and says what it found. */
async function auditReport(base: string, out: string): Promise<void> {
  const [{ buildAuditReport }, { renderAuditReportHtml }, { writeFileSync }] = await Promise.all([
    import('./features/audit/report.js'),
    import('./features/audit/reportHtml.js'),
    import('node:fs'),
  ]);
  const report = buildAuditReport(base);
  try {
    writeFileSync(out, renderAuditReportHtml(report));
  } catch (error) {
    fail(`could not write ${out}: ${(error as Error).message}`);
  }
  process.stdout.write(
    `wrote ${out}: ${plural(report.records, 'record')}, ${plural(report.denials.total, 'denial')}, ${plural(report.errors.total, 'error')}\n`,
  );
  if (!report.verify.ok)
    process.stderr.write(
      `mcp-warden: the hash chain is broken (shown on the page): ${report.verify.problem}\n`,
    );
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `mcp-warden: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
