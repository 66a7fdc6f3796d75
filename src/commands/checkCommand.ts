/** `mcp-warden check`: validates the config, its policy files and pins file, starting nothing (unless --live). */
import { formatConfigIssue, type ConfigIssue } from '../config/issues.js';
import type { WardenConfig } from '../config/types.js';
import type { PolicyRules } from '../features/sandbox/index.js';
import { missingPackage, type OptionalNeed } from '../lib/optionalPackage.js';
import { plural } from '../lib/plural.js';
import { load, loadPinsFile } from './loading.js';
import {
  closeLogger,
  colour,
  CommandError,
  noMore,
  version,
  warningLines,
  type CommandInput,
} from './support.js';

export async function runCheck({ values, args }: CommandInput): Promise<undefined> {
  noMore(args);
  const {
    config,
    policies,
    warnings: fileWarnings,
    managed,
  } = await load(values.config, {
    ...(values.managed !== undefined && { managedFile: values.managed }),
  });
  if (config.pins !== undefined) await loadPinsFile(config);
  await refuseMissingPackages(config);
  const [
    { commandsNotFound, exchangesWithoutPrincipals },
    { lintPolicies, lintPoliciesLive },
    { sharedWritablePaths },
  ] = await Promise.all([import('./check.js'), import('./policyLint.js'), import('./checkIsolation.js')]);
  const dead = lintPolicies(config, policies);
  if (dead.length > 0) throw new CommandError(`invalid policy:\n${dead.map(formatConfigIssue).join('\n')}`);
  const live: ConfigIssue[] = [];
  if (values.live === true) {
    const [{ createLogger }, { terminalProgress }] = await Promise.all([
      import('../core/logger.js'),
      import('./progress.js'),
    ]);
    const logger = createLogger({ level: 'error' });
    const progress = terminalProgress(process.stderr, colour.err);
    live.push(
      ...(await lintPoliciesLive(config, policies, {
        logger,
        version: version(),
        ...(progress && { progress }),
      })),
    );
    await closeLogger(logger);
  }
  const { blockedServerIssues, layersLine } = await import('./managed.js');
  const warnings = [
    ...fileWarnings,
    ...blockedServerIssues(config),
    ...(await commandsNotFound(config)),
    ...sharedWritablePaths(config),
    ...exchangesWithoutPrincipals(config),
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
    `${warningLines(warnings, colour.out)}${layersLine(config, managed)}${await sandboxLines(config, policies)}${await lazyLines(config)}${config.file}: ${ok} (${plural(config.servers.length, 'server')}, ${enabled} enabled; ${policyText}${warningText})\n`,
  );
  return undefined;
}

/** Each sandboxed server's effective grants, derived as its start would derive them. */
async function sandboxLines(config: WardenConfig, policies: PolicyRules): Promise<string> {
  if (!config.servers.some((server) => server.transport === 'stdio' && server.sandbox !== undefined))
    return '';
  const { grantsOf, describeGrants } = await import('../features/sandbox/index.js');
  return config.servers
    .map((server) => ({ server, grants: grantsOf(server, policies) }))
    .filter(({ grants }) => grants !== undefined)
    .map(({ server, grants }) => `server ${server.name}: sandboxed: ${describeGrants(grants!)}\n`)
    .join('');
}

/**
 * For each lazy server that would start, whether serving lists it from its cached listing
 * (read as serving reads it) or starts it once to be listed.
 */
async function lazyLines(config: WardenConfig): Promise<string> {
  const lazy = config.servers.filter(
    (s) =>
      s.start === 'lazy' && !s.disabled && s.failedAtLoad === undefined && s.blockedByManaged === undefined,
  );
  if (lazy.length === 0) return '';
  const [{ createListingCache }, { createLogger }, { agoOf }] = await Promise.all([
    import('../features/pins/listingCache.js'),
    import('../core/logger.js'),
    import('../lib/age.js'),
  ]);
  const cache = createListingCache(config, { logger: createLogger({ level: 'error' }) });
  const starts = 'it would start once to be listed';
  return lazy
    .map((server) => {
      const found = cache.look(server);
      const said = `server ${server.name}: start: lazy, `;
      if (found.listing !== undefined) {
        const tools = found.listing.lists?.tools.length ?? 0;
        const at = found.listing.keptAt === undefined ? '' : ` of ${agoOf(found.listing.keptAt)}`;
        return `${said}listed from its cached listing${at} (${plural(tools, 'tool')}) without starting\n`;
      }
      if (found.missing === 'changed')
        return `${said}its entry or package changed since its cached listing: ${starts} again\n`;
      if (found.missing === 'unreadable')
        return `${said}its cached listing cannot be used (${found.warnings.join('; ')}): ${starts}\n`;
      return `${said}no cached listing yet: ${starts}\n`;
    })
    .join('');
}

/**
 * What serving would stop at: telemetry or an `otlp` audit sink turned on where OpenTelemetry,
 * an optional package, is not installed. The message is the one start-up gives.
 */
async function refuseMissingPackages(config: WardenConfig): Promise<void> {
  const needs: OptionalNeed[] = [];
  const telemetry = config.telemetry;
  if (telemetry !== undefined && (telemetry.traces || telemetry.metrics))
    needs.push((await import('../features/telemetry/sdk.js')).TELEMETRY_NEEDS);
  const sinks = (config.audit?.sinks ?? []).filter((sink) => sink.type === 'otlp');
  if (sinks.length > 0) {
    const { otlpSinkNeeds } = await import('../features/audit/shipping/otlp.js');
    needs.push(...sinks.map((sink) => otlpSinkNeeds(sink.name)));
  }
  for (const need of needs) {
    const missing = missingPackage(need);
    if (missing !== undefined) throw new CommandError(missing.message);
  }
}
