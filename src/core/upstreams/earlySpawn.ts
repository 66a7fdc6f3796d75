import type { ServerConfig } from '../../config/types.js';
import { spawnChild, type ChildHandle } from '../transports/childProcess.js';
import { stdioSpawnOptions } from './childEnvironment.js';

/**
 * Stdio upstreams' processes, started as soon as the config is known to be valid rather than
 * when the host's `initialize` arrives: a server's own start-up (Node's alone is ~60 ms) then
 * overlaps the gateway's, instead of following it (measured). Only the process is started here;
 * the upstream's `initialize` still waits for the host's, whose capabilities it declares.
 */
export interface EarlyStart {
  /** Every child started, for the last-resort kill on exit; the pool keeps using this set. */
  readonly children: Set<ChildHandle>;
  /** By server name: the spawn of each enabled stdio server, handed to its `Upstream`. */
  readonly spawned: ReadonlyMap<string, Promise<ChildHandle>>;
}

/**
 * Spawns every enabled stdio server now (not one whose entry failed to load). A spawn that fails is not reported here: the
 * upstream's first connection attempt reports it, exactly as if it had spawned then.
 */
export function spawnEarly(servers: readonly ServerConfig[]): EarlyStart {
  const children = new Set<ChildHandle>();
  const spawned = new Map<string, Promise<ChildHandle>>();
  for (const server of servers) {
    if (
      server.disabled ||
      server.failedAtLoad !== undefined ||
      server.blockedByManaged !== undefined ||
      server.transport !== 'stdio' ||
      // Its sandbox's grants are derived from the policies, which are not loaded yet: it starts
      // with the pool, through the sandbox.
      server.sandbox !== undefined
    )
      continue;
    const child = spawnChild(stdioSpawnOptions(server)).then((handle) => {
      children.add(handle);
      return handle;
    });
    // Handled by whoever takes it; until then a failure must not count as unhandled.
    child.catch(() => {});
    spawned.set(server.name, child);
  }
  return { children, spawned };
}
