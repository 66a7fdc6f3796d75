/** `mcp-warden policy explain`: which policy rule decides a call of TOOL, and why. */
import { WardenError } from '../core/errors.js';
import { load } from './loading.js';
import {
  closeLogger,
  CommandError,
  noMore,
  UsageError,
  version,
  warningLines,
  type CommandInput,
} from './support.js';

export async function runPolicy({ values, args: positionals }: CommandInput): Promise<undefined> {
  const [sub, tool, argsJson, ...extra] = positionals;
  if (sub === 'explain' && values.session !== undefined) return replaySession(values, positionals.slice(1));
  if (sub !== 'explain' || tool === undefined)
    throw new UsageError('usage: mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON]');
  noMore(extra);
  const args = argsJson === undefined ? undefined : argumentsOf(argsJson);
  const { config, policies, warnings } = await load(values.config);
  process.stderr.write(warningLines(warnings));
  const { createLogger } = await import('../core/logger.js');
  const logger = createLogger({ level: 'warn' });
  try {
    const { explainPolicy, formatExplanation } = await import('./policyExplain.js');
    const report = await explainPolicy({
      config,
      policies,
      exposedName: tool,
      arguments: args,
      logger,
      version: version(),
      principal: await explainedPrincipal(values.principal, values.claim),
    });
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatExplanation(report));
  } catch (error) {
    if (error instanceof WardenError) throw new CommandError(error.message, 1);
    throw error;
  } finally {
    await closeLogger(logger);
  }
  return undefined;
}

/**
 * `policy explain --session ID`: the flow decisions of one gateway run, from the audit trail the
 * config names, with the earlier requests behind each.
 */
async function replaySession(values: CommandInput['values'], extra: readonly string[]): Promise<undefined> {
  noMore(extra);
  const session = String(values.session);
  const { config, warnings } = await load(values.config);
  process.stderr.write(warningLines(warnings));
  if (config.audit?.file === undefined)
    throw new CommandError(
      `${config.file} writes no audit file (audit.file), so there is no trail to replay`,
    );
  const { readAuditRecords } = await import('../features/audit/summary.js');
  const { replayFlow, formatReplay } = await import('../features/flowControl/replay.js');
  const { records } = readAuditRecords(config.audit.file);
  if (!records.some((r) => r['session'] === session))
    throw new CommandError(`no record of session ${session} in the audit trail ${config.audit.file}`, 1);
  const replay = replayFlow(records, session);
  process.stdout.write(
    values.json
      ? `${JSON.stringify(replay, null, 2)}
`
      : formatReplay(replay),
  );
  return undefined;
}

/** ARGUMENTS-JSON as the object it must be. */
function argumentsOf(text: string): Record<string, unknown> {
  let args: unknown;
  try {
    args = JSON.parse(text);
  } catch (error) {
    throw new CommandError(`ARGUMENTS-JSON is not JSON: ${(error as Error).message}`);
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    throw new CommandError('ARGUMENTS-JSON must be a JSON object');
  return args as Record<string, unknown>;
}

/**
 * Who `policy explain` explains a call for: `--principal SUBJECT` with `--claim NAME=VALUE`
 * (repeatable; several values of one claim make a list, as a token's groups are), or else the
 * OS user, as on stdio.
 */
async function explainedPrincipal(subject: string | undefined, claims: readonly string[] | undefined) {
  const { osPrincipal, tokenPrincipal } = await import('../core/principal.js');
  if (subject === undefined) {
    if (claims !== undefined) throw new UsageError('--claim needs --principal SUBJECT');
    return osPrincipal();
  }
  const values = new Map<string, string[]>();
  for (const claim of claims ?? []) {
    const at = claim.indexOf('=');
    if (at <= 0) throw new UsageError(`--claim ${claim}: expected NAME=VALUE, such as groups=admins`);
    const name = claim.slice(0, at);
    values.set(name, [...(values.get(name) ?? []), claim.slice(at + 1)]);
  }
  const payload: Record<string, unknown> = { sub: subject };
  for (const [name, list] of values) payload[name] = list.length > 1 ? list : list[0];
  return tokenPrincipal(payload, [...values.keys()]);
}
