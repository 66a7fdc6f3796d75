/** `mcp-warden tools`: starts the upstreams, prints the merged tool catalog as the host would see it. */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { load, loadPinsFile } from './loading.js';
import { closeLogger, colour, noMore, version, warningLines, type CommandInput } from './support.js';

export async function runTools({ values, args }: CommandInput): Promise<number> {
  noMore(args);
  const { config, policies, warnings } = await load(values.config, { badServers: 'mark-failed' });
  // stderr: stdout carries the catalog, as JSON with --json.
  process.stderr.write(warningLines(warnings));
  const [
    { createLogger },
    { createPolicyEngine },
    { hiddenByPolicy },
    { listCatalog, formatCatalog },
    { terminalProgress },
    { createListingCache },
  ] = await Promise.all([
    import('../core/logger.js'),
    import('../features/policy/engine.js'),
    import('../features/policy/visibility.js'),
    import('./tools.js'),
    import('./progress.js'),
    import('../features/pins/listingCache.js'),
  ]);
  const logger = createLogger({ level: 'warn' });
  const engine = createPolicyEngine(policies);
  const byPolicy = hiddenByPolicy(() => engine, config.servers);
  // What the host would see: tools the policy always denies are left out, and so are tools
  // whose pin blocks them (changed since pinned, or new under onNew: block).
  let byPins: ((server: string, tool: Tool) => boolean) | undefined;
  if (config.pins !== undefined) {
    const [{ blockedByPins }, { pins }] = await Promise.all([
      import('../features/pins/pinDecision.js'),
      loadPinsFile(config),
    ]);
    byPins = blockedByPins(pins, config.pins);
  }
  // What serving reads: a lazy server with a valid cached listing is listed from it, not
  // started. With --live every server starts, and what it lists becomes the cached listing.
  const cache = createListingCache(config, { logger });
  const listings = values.live === true ? { read: () => undefined, write: cache.write } : cache;
  const blocked: string[] = [];
  const progress = terminalProgress(process.stderr, colour.err);
  const listing = await listCatalog({
    config,
    logger,
    version: version(),
    hiddenByPolicy: byPolicy,
    policies,
    listings,
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
  return listing.servers.some((s) => s.state === 'failed' || s.state === 'unavailable') ? 1 : 0;
}
