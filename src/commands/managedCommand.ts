/** `mcp-warden managed show`: the organisation's managed settings in force, and where from. */
import path from 'node:path';
import { loadManaged } from './loading.js';
import { noMore, UsageError, type CommandInput } from './support.js';

export async function runManaged({ values, args }: CommandInput): Promise<undefined> {
  const [sub, ...extra] = args;
  if (sub !== 'show') throw new UsageError('usage: mcp-warden managed show [--managed FILE]');
  noMore(extra);
  const managed = await loadManaged(values.managed);
  const [{ formatManaged }, { managedDirectory, MANAGED_DIR_VARIABLE }] = await Promise.all([
    import('./managed.js'),
    import('../config/managed.js'),
  ]);
  const variable = process.env[MANAGED_DIR_VARIABLE];
  process.stdout.write(
    formatManaged(managed, {
      dir:
        values.managed !== undefined
          ? path.dirname(path.resolve(values.managed))
          : managedDirectory(process.env),
      fromVariable: values.managed === undefined && variable !== undefined && variable !== '',
    }),
  );
  return undefined;
}
