import { createClient, type RedisClientType } from '@redis/client';
import { StoreError, type SharedStore } from './sharedStore.js';

export interface RedisStoreOptions {
  /** `redis://` or `rediss://`, password included. */
  readonly url: string;
  /** The URL without its password, for messages. */
  readonly shown: string;
  /** One operation fails after this long. */
  readonly timeoutMs: number;
  /** Keys start with this and a colon. */
  readonly prefix: string;
  /** Where connection trouble is reported (once per outage, not once per retry). */
  readonly warn: (message: string) => void;
  readonly info: (message: string) => void;
}

/** Commands waiting to be written at most; beyond it they fail at once (a bound on memory). */
const MAX_QUEUED_COMMANDS = 10_000;
/** The longest pause between two reconnection attempts. */
const MAX_RECONNECT_MS = 5_000;

/**
 * A SharedStore on Redis through `@redis/client`. The client reconnects on its own after an
 * outage; while it is down, commands fail at once instead of queueing (so a request waiting on
 * the store fails within the timeout, never hangs), and each command is bounded by `timeoutMs`
 * even on a connection that stopped answering without closing.
 */
export async function openRedisStore(options: RedisStoreOptions): Promise<SharedStore> {
  const { timeoutMs, prefix, shown } = options;
  let down = false;
  const client: RedisClientType = createClient({
    url: options.url,
    disableOfflineQueue: true,
    commandsQueueMaxLength: MAX_QUEUED_COMMANDS,
    socket: {
      connectTimeout: timeoutMs,
      reconnectStrategy: (retries) => Math.min(MAX_RECONNECT_MS, 100 * 2 ** Math.min(retries, 6)),
    },
  });
  client.on('error', (error: Error) => {
    if (down) return;
    down = true;
    options.warn(
      `the store ${shown} is unreachable (${error.message}); requests that need it fail until it is back`,
    );
  });
  client.on('ready', () => {
    if (down) options.info(`the store ${shown} is reachable again`);
    down = false;
  });
  // The first connection is awaited, bounded: a gateway started against a store it cannot
  // reach says so at once, and keeps trying in the background.
  await bounded(client.connect(), timeoutMs, shown, 'connecting').catch((error: Error) => {
    if (!down) options.warn(`${error.message}; mcp-warden keeps trying to reach it`);
    down = true;
  });
  const key = (k: string): string => `${prefix}:${k}`;
  let listening: RedisClientType | undefined;
  const run = <T>(what: string, work: () => Promise<T>): Promise<T> => {
    if (!client.isReady)
      return Promise.reject(new StoreError(`the store ${shown} is not connected (${what})`));
    return bounded(work(), timeoutMs, shown, what);
  };
  return {
    shown,
    async put(k, value, ttlMs) {
      await run('write', () =>
        client.set(key(k), value, { expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) } }),
      );
    },
    async get(k) {
      const value = await run('read', () => client.get(key(k)));
      return value ?? undefined;
    },
    async take(k) {
      const value = await run('take', () => client.getDel(key(k)));
      return value ?? undefined;
    },
    async delete(k) {
      await run('delete', () => client.del(key(k)));
    },
    script(source, keys, args) {
      return run('script', () => client.eval(source, { keys: keys.map(key), arguments: [...args] }));
    },
    publish(channel, message) {
      return run('publish', () => client.publish(key(channel), message));
    },
    async listen(channel, listener) {
      // A subscribed connection can do nothing else, so listening takes one of its own; it
      // queues its subscription until connected and subscribes again after each reconnection.
      const subscriber = (listening ??= client.duplicate({ disableOfflineQueue: false }));
      subscriber.on('error', () => {});
      if (!subscriber.isOpen) void subscriber.connect().catch(() => {});
      await bounded(
        subscriber.subscribe(key(channel), (message) => listener(message)),
        timeoutMs,
        shown,
        'subscribing',
      );
    },
    async close() {
      if (listening?.isOpen === true) await listening.close().catch(() => listening?.destroy());
      if (client.isOpen) await client.close().catch(() => client.destroy());
    },
  };
}

/** `work`, or a StoreError once `timeoutMs` passes first. */
function bounded<T>(work: Promise<T>, timeoutMs: number, shown: string, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreError(`the store ${shown} did not answer within ${timeoutMs} ms (${what})`)),
      timeoutMs,
    );
  });
  return Promise.race([
    work.catch((error: unknown) => {
      throw error instanceof StoreError
        ? error
        : new StoreError(`the store ${shown} failed (${what}): ${(error as Error).message}`);
    }),
    late,
  ]).finally(() => clearTimeout(timer));
}
