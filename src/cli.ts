#!/usr/bin/env node
/**
 * The `mcp-warden` binary: argument parsing, config loading, signals and exit codes. The only
 * module that calls `process.exit`. Human-facing output of subcommands goes to stdout; in
 * serve mode stdout carries JSON-RPC only and everything else goes to stderr.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { WardenConfig } from './config/types.js';
import type { LoadedConfig } from './config/load.js';
import type { Redactor } from './features/audit/redact.js';
import { WardenError } from './core/errors.js';
import { ConfigError, formatConfigIssue, type ConfigIssue } from './config/issues.js';
import type { PolicySet } from './features/policy/index.js';
import type { PinSet } from './features/pins/pinFile.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { WinstonLogger } from './core/logger.js';

// Every other module is imported where it is needed (issue 7): `--version` loads none of them,
// `check` only the config's, and serving spawns the upstreams (earlySpawn.ts) before it loads
// the gateway's, so that the servers' own start-up overlaps that loading.

const USAGE = `Usage:
  mcp-warden --config FILE            serve MCP on stdio (what a desktop host runs)
  mcp-warden check --config FILE      validate the config; exit 1 with file:line messages if invalid
  mcp-warden tools --config FILE      start the upstreams, print the merged tool catalog, exit
                   [--json]           ... as JSON
  mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON]
                                      which policy rule decides a call of TOOL (an exposed name), and why
  mcp-warden pins diff --config FILE [SERVER[/TOOL] ...]
                                      start the upstreams and show each tool that differs from its pin;
                                      exit 1 if any does
  mcp-warden pins accept --config FILE [SERVER[/TOOL] ...]
                                      pin the current definitions of those tools (all when none given)
  mcp-warden pins list --config FILE  what the pins file holds (no upstreams started)
  mcp-warden audit verify FILE        check an audit log's hash chain (rotated files included)
  mcp-warden audit summary FILE       calls per tool, denials, errors, p50/p95 duration
  mcp-warden --version | --help

The config file may also be given as MCP_WARDEN_CONFIG.`;

/** Exit codes: 0 ok, 1 a check or command found problems, 2 bad usage or invalid config. */
const EXIT_USAGE = 2;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

function fail(message: string, code = EXIT_USAGE): never {
  process.stderr.write(`mcp-warden: ${message}\n`);
  process.exit(code);
}

interface Loaded {
  readonly config: WardenConfig;
  readonly policies: PolicySet;
  /** The one redactor for the audit trail, the diagnostic log and confirmation questions. */
  readonly redactor: Redactor;
  /** What the config file holds that was ignored; shown by every command, never fatal. */
  readonly warnings: readonly ConfigIssue[];
}

/** The config and its policy files, or an exit with every problem found (never half a gateway). */
async function load(file: string | undefined): Promise<Loaded> {
  const loaded = await loadConfigFile(file);
  return { ...loaded, policies: await loadPolicyFiles(loaded.config) };
}

/** The config and the redactor it sets up, or an exit with every problem found. */
async function loadConfigFile(file: string | undefined): Promise<Omit<Loaded, 'policies'>> {
  const chosen = file ?? process.env.MCP_WARDEN_CONFIG;
  if (chosen === undefined || chosen === '') fail(`no config file given (use --config FILE)\n\n${USAGE}`);
  const [{ loadConfig }, { createRedactor, RedactorConfigError }] = await Promise.all([
    import('./config/load.js'),
    import('./features/audit/redact.js'),
  ]);
  let loaded: LoadedConfig;
  try {
    loaded = await loadConfig(path.resolve(chosen), { env: process.env });
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid config:\n${error.message}`);
    throw error;
  }
  const { config, warnings } = loaded;
  if (config.audit !== undefined) {
    // The audit trail must never land in the protocol stream.
    if (['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1'].includes(config.audit.file))
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
    return { config, redactor, warnings };
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
    return await loadPolicies(config.policies);
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
function warningLines(warnings: readonly ConfigIssue[]): string {
  return warnings.map((warning) => `warning: ${formatConfigIssue(warning)}\n`).join('');
}

async function serve(file: string | undefined): Promise<void> {
  const { config, redactor, warnings } = await loadConfigFile(file);
  // Like an invalid config, an invalid pins file stops us before any server is started.
  const pins = config.pins === undefined ? undefined : await loadPinsFile(config);
  // The config is valid: start the upstream processes now, and load the policies and the
  // gateway's modules while they boot. Should a policy file be invalid, they are killed with
  // the exit that reports it, before any of them was spoken to.
  const { spawnEarly } = await import('./core/upstreams/earlySpawn.js');
  const early = spawnEarly(config.servers);
  // Whatever happens, no child process outlives us (FIELD_NOTES "Availability"); the gateway's
  // pool keeps its children in this same set.
  process.on('exit', () => {
    for (const child of early.children) child.killNow();
  });
  const policies = await loadPolicyFiles(config);
  const [
    { openAuditLog },
    { createGateway },
    { createLogger },
    { HOST_MAX_DEPTH, truncateForEcho },
    { StreamTransport },
  ] = await Promise.all([
    import('./features/audit/auditWriter.js'),
    import('./gateway.js'),
    import('./core/logger.js'),
    import('./core/rpc/jsonRpc.js'),
    import('./core/transports/streamTransport.js'),
  ]);
  const logger = createLogger(config.gateway.log, {
    redact: { text: (t) => redactor.redactText(t), value: (v) => redactor.redactValue(v) },
  });
  // stderr (or the log file) is where a host keeps what its servers say; the gateway serves anyway.
  for (const warning of warnings) logger.warn(formatConfigIssue(warning));
  const audit =
    config.audit === undefined
      ? undefined
      : await openAuditLog({
          file: config.audit.file,
          maxBytes: config.audit.maxBytes,
          maxFiles: config.audit.maxFiles,
          onFailure: config.audit.onFailure,
          fsync: config.audit.fsync,
          // One write per turn of the event loop, flushed before each write to the host.
          writes: 'per-tick',
          redactor,
          onStatus: (status) => {
            if (status.kind === 'recovered')
              logger.warn(`the audit log can be written again; ${status.lost} records were lost meanwhile`);
            else logger.error(`AUDIT: ${status.error.message}`);
          },
        });
  if (audit !== undefined && !audit.healthy && audit.lastError !== undefined)
    logger.error(`AUDIT: ${audit.lastError.message}`);
  const host = new StreamTransport({
    input: process.stdin,
    output: process.stdout,
    maxLineBytes: config.gateway.maxMessageBytes,
    // The host is waiting on its requests: a malformed one is answered under its id.
    answerInvalid: true,
    maxDepth: HOST_MAX_DEPTH,
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
    host,
    version: version(),
    early,
    ...(audit && { audit }),
    ...(pins && { pins }),
  });

  let exiting = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (exiting) return;
    exiting = true;
    logger.info(`shutting down: ${why}`);
    // Hard stop well inside the 2 s a host gives us, whatever an upstream does.
    setTimeout(() => {
      gateway.killChildrenNow();
      process.exit(code);
    }, 1900).unref();
    try {
      await gateway.close(why);
    } catch (error) {
      logger.error(`error while shutting down: ${String(error)}`);
    }
    await closeLogger(logger);
    process.exit(code);
  };

  host.onclose = () => void shutdown('the host closed stdin', 0);
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

  logger.info(`mcp-warden ${version()} serving ${config.servers.length} upstream(s) from ${config.file}`);
  await gateway.start();
}

async function closeLogger(logger: WinstonLogger): Promise<void> {
  await Promise.race([logger.close(), new Promise((r) => setTimeout(r, 500).unref())]);
}

/** `mcp-warden pins diff|accept|list`: exit 0 when all matches (or was pinned), 1 when not. */
async function pinsCommand(sub: 'diff' | 'accept' | 'list', configFile: string | undefined, args: string[]) {
  const { config, warnings } = await loadConfigFile(configFile);
  process.stderr.write(warningLines(warnings));
  const { pins } = await loadPinsFile(config);
  const settings = config.pins!;
  const commands = await import('./commands/pins.js');
  if (sub === 'list') return print(commands.formatPinList(pins, settings.file));
  const selectors = commands.parseSelectors(args, config);
  const { createLogger } = await import('./core/logger.js');
  const logger = createLogger({ level: 'warn' });
  let comparison;
  try {
    comparison = await commands.comparePins({ config, pins, selectors, logger, version: version() });
  } finally {
    await closeLogger(logger);
  }
  await print(commands.formatDiff(comparison, { configFile: config.file, acceptHint: sub === 'diff' }));
  if (sub === 'diff') process.exit(commands.differs(comparison) ? 1 : 0);
  let acceptance;
  try {
    acceptance = commands.acceptPins(comparison, settings);
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid pins file:\n${error.message}`);
    fail(`cannot write the pins file ${settings.file}: ${(error as Error).message}`, 1);
  }
  await print(commands.formatAcceptance(acceptance, settings.file));
  process.exit(comparison.unavailable.length > 0 || acceptance.unpinnable.length > 0 ? 1 : 0);
}

/** Writes to stdout and waits until it is handed to the OS: a report can be long, and we exit next. */
function print(text: string): Promise<void> {
  return new Promise((resolve) => process.stdout.write(text, () => resolve()));
}

async function main(argv: string[]): Promise<void> {
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
      },
    });
  } catch (error) {
    fail(`${(error as Error).message}\n\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return;
  }
  const [command = 'serve', ...rest] = positionals;
  const noMore = (args: string[]) => {
    if (args.length > 0) fail(`unexpected argument "${args[0]}"\n\n${USAGE}`);
  };

  switch (command) {
    case 'serve':
      noMore(rest);
      return serve(values.config);
    case 'check': {
      noMore(rest);
      const { config, policies, warnings } = await load(values.config);
      if (config.pins !== undefined) await loadPinsFile(config);
      const enabled = config.servers.filter((s) => !s.disabled).length;
      const rules = policies.files.reduce((n, f) => n + f.rules.length, 0);
      const policyText =
        policies.files.length === 0
          ? 'no policy files'
          : `${policies.files.length} policy files, ${rules} rules`;
      const warningText =
        warnings.length === 0 ? '' : `; ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
      process.stdout.write(
        `${warningLines(warnings)}${config.file}: ok (${config.servers.length} servers, ${enabled} enabled; ${policyText}${warningText})\n`,
      );
      return;
    }
    case 'tools': {
      noMore(rest);
      const { config, policies, warnings } = await load(values.config);
      // stderr: stdout carries the catalog, as JSON with --json.
      process.stderr.write(warningLines(warnings));
      const [{ createLogger }, { createPolicyEngine }, { hiddenByPolicy }, { listCatalog, formatCatalog }] =
        await Promise.all([
          import('./core/logger.js'),
          import('./features/policy/engine.js'),
          import('./features/policy/visibility.js'),
          import('./commands/tools.js'),
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
      const listing = await listCatalog({
        config,
        logger,
        version: version(),
        hidden: (server, tool) => {
          if (byPolicy(server, tool)) return true;
          if (byPins?.(server, tool) !== true) return false;
          blocked.push(`${server}/${tool.name}`);
          return true;
        },
      });
      const pinned = [...new Set(blocked)];
      if (pinned.length > 0) {
        process.stderr.write(
          `mcp-warden: left out because their pin blocks them (review with mcp-warden pins diff): ${pinned.join(', ')}\n`,
        );
      }
      process.stdout.write(values.json ? `${JSON.stringify(listing, null, 2)}\n` : formatCatalog(listing));
      await closeLogger(logger);
      process.exit(listing.servers.some((s) => s.state === 'failed' || s.state === 'unavailable') ? 1 : 0);
    }
    // falls through: process.exit above never returns
    case 'policy': {
      const [sub, tool, argsJson, ...extra] = rest;
      if (sub !== 'explain' || tool === undefined)
        fail(`usage: mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON]\n\n${USAGE}`);
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
        fail(`usage: mcp-warden pins diff|accept|list --config FILE [SERVER[/TOOL] ...]\n\n${USAGE}`);
      if (sub === 'list') noMore(selectorArgs);
      return pinsCommand(sub, values.config, selectorArgs).catch((error: unknown) => {
        // A SERVER[/TOOL] argument that names nothing: usage, like an unknown command.
        if (error instanceof WardenError && error.code === 'INVALID_PARAMS') fail(error.message);
        throw error;
      });
    }
    case 'audit': {
      const [sub, file, ...extra] = rest;
      if ((sub !== 'verify' && sub !== 'summary') || file === undefined)
        fail(`usage: mcp-warden audit verify FILE | mcp-warden audit summary FILE\n\n${USAGE}`);
      noMore(extra);
      const base = path.resolve(file);
      if (sub === 'verify') {
        const { formatVerifyResult, verifyAuditFiles } = await import('./features/audit/verify.js');
        const result = verifyAuditFiles(base);
        process.stdout.write(`${formatVerifyResult(result)}\n`);
        process.exit(result.ok ? 0 : 1);
      }
      const { formatSummary, summarizeAudit } = await import('./features/audit/summary.js');
      process.stdout.write(formatSummary(summarizeAudit(base)));
      return;
    }
    default:
      fail(`unknown command "${command}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `mcp-warden: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
