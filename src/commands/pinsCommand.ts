/** `mcp-warden pins diff|accept|list`: tool definitions reviewed against their pins. */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ConfigError } from '../config/issues.js';
import type { WardenConfig } from '../config/types.js';
import { WardenError } from '../core/errors.js';
import type { Redactor } from '../features/audit/redact.js';
import { plural } from '../lib/plural.js';
import { openCommandAudit } from './commandAudit.js';
import { loadConfigFile, loadPinsFile, loadPolicyFiles } from './loading.js';
import type { Acceptance } from './pins.js';
import {
  closeLogger,
  colour,
  CommandError,
  confirm,
  noMore,
  print,
  UsageError,
  version,
  warningLines,
  type CommandInput,
} from './support.js';

/** Exit 0 when all matches (or was pinned), 1 when not. */
export async function runPins({ values, args }: CommandInput): Promise<number | undefined> {
  const [sub, ...selectorArgs] = args;
  if (sub !== 'diff' && sub !== 'accept' && sub !== 'list')
    throw new UsageError('usage: mcp-warden pins diff|accept|list --config FILE [SERVER[/TOOL] ...]');
  if (sub === 'list') noMore(selectorArgs);
  try {
    return await pinsCommand(sub, values.config, selectorArgs, { all: values.all === true });
  } catch (error) {
    // A SERVER[/TOOL] argument that names nothing: usage, like an unknown command.
    if (error instanceof WardenError && error.code === 'INVALID_PARAMS')
      throw new CommandError(error.message);
    throw error;
  }
}

/** What `pins accept` was told to accept: named tools or servers, or every change. */
type AcceptScope = 'named' | 'all' | 'ask';

/** `mcp-warden pins diff|accept|list`: exit 0 when all matches (or was pinned), 1 when not. */
async function pinsCommand(
  sub: 'diff' | 'accept' | 'list',
  configFile: string | undefined,
  args: readonly string[],
  options: { readonly all: boolean },
): Promise<number | undefined> {
  if (sub !== 'accept' && options.all) throw new UsageError('--all applies to pins accept only');
  if (sub === 'accept' && options.all && args.length > 0)
    throw new UsageError('give either SERVER[/TOOL] arguments or --all, not both');
  const scope: AcceptScope = args.length > 0 ? 'named' : options.all ? 'all' : 'ask';
  // Asking needs a person to answer; a script must say --all, so it never accepts by accident.
  if (sub === 'accept' && scope === 'ask' && process.stdin.isTTY !== true)
    throw new UsageError(
      'pins accept without SERVER[/TOOL] arguments accepts every change: not on a terminal, say so with --all',
    );
  // A bad server entry leaves that server out (its tools are neither compared nor accepted), as
  // serving does; the listing says which server failed and why.
  const { config, redactor, warnings } = await loadConfigFile(configFile, { badServers: 'mark-failed' });
  process.stderr.write(warningLines(warnings));
  const { pins } = await loadPinsFile(config);
  const settings = config.pins!;
  const commands = await import('./pins.js');
  if (sub === 'list') {
    await print(commands.formatPinList(pins, settings.file));
    return undefined;
  }
  const selectors = commands.parseSelectors(args, config);
  const [{ createLogger }, { terminalProgress }] = await Promise.all([
    import('../core/logger.js'),
    import('./progress.js'),
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
  if (sub === 'diff') return commands.differs(comparison) ? 1 : 0;
  const pending = commands.acceptable(comparison).length;
  if (
    scope === 'ask' &&
    pending > 0 &&
    !(await confirm(`accept ${plural(pending, 'change')} shown above?`))
  ) {
    await print('nothing accepted\n');
    return 1;
  }
  let acceptance;
  try {
    acceptance = commands.acceptPins(comparison, settings);
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandError(`invalid pins file:\n${error.message}`);
    throw new CommandError(`cannot write the pins file ${settings.file}: ${(error as Error).message}`, 1);
  }
  await auditAcceptance(config, redactor, acceptance);
  await print(commands.formatAcceptance(acceptance, settings.file));
  return comparison.unavailable.length > 0 || acceptance.unpinnable.length > 0 ? 1 : 0;
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
    import('../features/policy/engine.js'),
    import('../features/policy/visibility.js'),
  ]);
  const engine = createPolicyEngine(policies);
  const hidden = hiddenByPolicy(() => engine, config.servers);
  return reviews.filter((r) => hidden(r.server, { ...r.definition, name: r.tool } as Tool)).length;
}

/**
 * One `tool_pinned` record per accepted pin, saying who accepted it, when the config keeps an
 * audit trail: a pin decides what the host may call, so changing one belongs in the trail. A
 * trail that cannot be written fails the command (the pins are written by then; it says so).
 */
async function auditAcceptance(
  config: WardenConfig,
  redactor: Redactor,
  acceptance: Acceptance,
): Promise<void> {
  if (config.audit === undefined || acceptance.pinned.length === 0) return;
  const { log, session, close } = await openCommandAudit(config, config.audit, redactor);
  const [principal, by] = await whoAccepts();
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
  const failure = await close();
  if (failure !== undefined)
    throw new CommandError(
      `pinned, but the audit log ${log.file} could not record it: ${failure.message}`,
      1,
    );
}

/** The principal recording the acceptance (the OS user, as on stdio), and that user's name. */
async function whoAccepts() {
  const [{ osPrincipal }, { userInfo }] = await Promise.all([
    import('../core/principal.js'),
    import('node:os'),
  ]);
  let by: string;
  try {
    by = userInfo().username;
  } catch {
    by = process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
  return [osPrincipal(), by] as const;
}
