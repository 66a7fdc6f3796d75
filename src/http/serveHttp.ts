import type { WardenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import { NotServingError } from '../core/errors.js';
import { principalKey } from '../core/principal.js';
import { TaskMemory } from '../core/tasks/taskRouting.js';
import type { Gateway } from '../gateway/gateway.js';
import { startListener, type Listener } from './listener.js';
import { createAnswerRelay } from './answerRelay.js';
import { createRetryRelay } from './retryRelay.js';
import { sharedSessionRecords } from './sessionRecords.js';
import { sharedResumableCalls } from './resumableCalls.js';
import { createStatelessDispatch } from './stateless.js';
import type { SharedStore } from '../lib/store/sharedStore.js';

/**
 * Starts the HTTP listener for a gateway: each session becomes one of its host connections. The
 * upstreams start now (an HTTP gateway serves many hosts; none of them should wait for the
 * first), and `/readyz` answers ready once that start has settled.
 */
export async function startHttp(options: {
  readonly config: WardenConfig;
  readonly gateway: Gateway;
  readonly logger: Logger;
  /** The store replicas share (`store:`): sessions are recorded there, and answers sent on. */
  readonly store?: SharedStore;
}): Promise<Listener> {
  const { config, gateway, logger, store } = options;
  const listen = config.listen!;
  let settled = false;
  const memories = new TaskMemories();
  void gateway.pool.start().then(() => (settled = true));
  const frontDoor = await openFrontDoor(config, gateway, logger, store);
  // One relay between replicas for stateless retries and for resumed session streams.
  const retryRelay =
    store !== undefined && config.store !== undefined
      ? createRetryRelay({
          store,
          // The name the gateway puts in the states of the calls only this replica can continue.
          replica: gateway.session,
          timeoutMs: config.store.timeoutMs,
          logger,
        })
      : undefined;
  const listener = await startListener({
    listen,
    ...(config.auth && { auth: config.auth }),
    ...(frontDoor && { frontDoor }),
    maxBodyBytes: config.gateway.maxMessageBytes,
    logger,
    subjectTokens: gateway.subjectTokens,
    connect: (transport, principal, profile) =>
      gateway.connect(transport, principal, { ...(profile !== undefined && { profile }) }),
    profiles: new Set((config.profiles ?? []).map((p) => p.name)),
    ready: () => settled,
    record: (event, principal) => gateway.record(event, principal),
    ...(store !== undefined && sharedSessions(store, config, gateway, logger)),
    ...(retryRelay !== undefined && { streamRelay: retryRelay }),
    stateless: createStatelessDispatch({
      // Each stateless request is a connection of its own, so its tasks are its principal's:
      // the next request of the same principal (and no one else's) can poll them, and answer
      // the questions an earlier one was shown.
      connect: (transport, principal, profile) => {
        const owner = `principal\u0000${principalKey(principal)}`;
        return gateway.connect(transport, principal, {
          taskOwner: owner,
          taskMemory: memories.of(owner, logger),
          stateless: true,
          ...(profile !== undefined && { profile }),
        });
      },
      logger,
      sharedContinuations: config.store !== undefined,
      ...(retryRelay !== undefined && { relay: retryRelay }),
    }),
  });
  logger.info(
    `listening on ${listener.url}${config.auth === undefined ? ' (no tokens asked: reachable from this machine only)' : ` (bearer tokens from ${config.auth.issuer}${frontDoor === undefined ? '' : `, and hosts sign in at ${frontDoor.issuer}`})`}`,
  );
  return listener;
}

/**
 * What the listener's sessions share with the other replicas through `store`: their records,
 * the answers a host sends one replica for another, and their calls' streams and pending
 * confirmations (so a replica that dies loses none).
 */
function sharedSessions(store: SharedStore, config: WardenConfig, gateway: Gateway, logger: Logger) {
  const relay = createAnswerRelay(store, logger);
  return {
    sessionRecords: sharedSessionRecords(store),
    relay,
    resumable: sharedResumableCalls(store, {
      replica: relay.replica,
      auditSession: gateway.session,
      waitMs: config.confirmation.timeoutMs,
    }),
  };
}

/**
 * The front door when the config has `auth.frontDoor`, with its signing key (configured, or kept
 * in the state folder). Loaded only then, so a gateway without one never reads the key file.
 */
async function openFrontDoor(config: WardenConfig, gateway: Gateway, logger: Logger, store?: SharedStore) {
  const door = config.auth?.frontDoor;
  if (config.auth === undefined || door === undefined) return undefined;
  const [{ createFrontDoor }, { keyFileFor, loadSigningKey }] = await Promise.all([
    import('./frontDoor/frontDoor.js'),
    import('./frontDoor/keys.js'),
  ]);
  const key = await loadSigningKey({
    ...(door.signingKey !== undefined && { configured: door.signingKey }),
    file: keyFileFor(config.file),
  });
  return createFrontDoor({
    auth: config.auth,
    door,
    key,
    logger,
    record: (event, principal) => gateway.record(event, principal),
    ...(store !== undefined && { store }),
  });
}

/** Principals whose stateless requests' task questions are held at once; the oldest go first. */
const MAX_TASK_MEMORIES = 1_000;

/** The task questions the gateway holds for each principal's stateless requests, bounded. */
class TaskMemories {
  readonly #byOwner = new Map<string, TaskMemory>();

  of(owner: string, logger: Logger): TaskMemory {
    let memory = this.#byOwner.get(owner);
    if (memory !== undefined) {
      // Most recently used last, so the one dropped when full is the one unused longest.
      this.#byOwner.delete(owner);
    } else {
      if (this.#byOwner.size >= MAX_TASK_MEMORIES) {
        const [oldest, dropped] = this.#byOwner.entries().next().value!;
        this.#byOwner.delete(oldest);
        dropped.close(new NotServingError('too many principals have task questions open; ask again'));
      }
      memory = new TaskMemory(logger);
    }
    this.#byOwner.set(owner, memory);
    return memory;
  }
}
