import type { ServerConfig, WardenConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { Stage } from '../../core/pipeline/types.js';
import type { Feature } from '../../core/routing/feature.js';
import type { SharedStore } from '../../lib/store/sharedStore.js';
import { createReplicaLeaseStage } from './stage.js';
import { storeLeases } from './storeLeases.js';

/**
 * How many store timeouts a lease lives without being renewed: long enough that a holder whose
 * renewals are slow (each may take up to a store timeout) keeps it, short enough that the turn of
 * a replica that died comes back within seconds.
 */
const TTL_IN_STORE_TIMEOUTS = 5;
/** The longest a waiter goes without asking the store, should the announcement of a release be lost. */
const MAX_POLL_MS = 1_000;

/**
 * One request at a time to each principal's own process of a stdio server, over all replicas
 * sharing `store:` (see stage.ts): a stage only with a store and a listener (without a listener
 * no process belongs to one principal). A server with `acrossReplicas: parallel` or
 * `shared: true`, and HTTP servers, are passed by; the servers are read per request from
 * `servers`, which the gateway keeps current across edits of the config.
 */
export function createReplicaLease(
  config: WardenConfig,
  deps: {
    readonly store?: SharedStore;
    readonly servers: ReadonlyMap<string, ServerConfig>;
    readonly logger: Logger;
    /** The audit stage, when there is a trail: the gateway's own task polls pass it. */
    readonly audited?: Stage;
  },
): Feature {
  const { store } = deps;
  if (store === undefined || config.listen === undefined) return {};
  const ttlMs = TTL_IN_STORE_TIMEOUTS * (config.store?.timeoutMs ?? 2_000);
  const run = createReplicaLeaseStage({
    leases: storeLeases(store),
    ttlMs,
    pollMs: Math.min(MAX_POLL_MS, ttlMs / 3),
    logger: deps.logger.child('replicas'),
    ...(deps.audited !== undefined && { audited: deps.audited }),
    waitersFor: (name) => {
      const server = deps.servers.get(name);
      return server?.transport === 'stdio' && !server.shared && server.acrossReplicas !== 'parallel'
        ? server.maxQueue
        : undefined;
    },
  });
  return { stage: { name: 'replicaLease', run } };
}
