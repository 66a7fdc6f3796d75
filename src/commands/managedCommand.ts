/** `mcp-warden managed show`: the organisation's managed settings in force, and where from. */
import { formatConfigIssue } from '../config/issues.js';
import { ignoredOverride, loadManaged } from './loading.js';
import { noMore, UsageError, type CommandInput } from './support.js';

export async function runManaged({ values, args }: CommandInput): Promise<undefined> {
  const [sub, ...extra] = args;
  if (sub !== 'show') throw new UsageError('usage: mcp-warden managed show [--managed FILE]');
  noMore(extra);
  const { managed, location } = await loadManaged(values.managed);
  const { formatManaged } = await import('./managed.js');
  for (const issue of ignoredOverride(location))
    process.stderr.write(`mcp-warden: ${formatConfigIssue(issue)}\n`);
  process.stdout.write(formatManaged(managed, location));
  return undefined;
}
