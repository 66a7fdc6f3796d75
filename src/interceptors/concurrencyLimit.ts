import pLimit, { type LimitFunction } from 'p-limit';
import type { ServerConfig } from '../config/types.js';
import { QueueFullError } from '../errors.js';
import type { Interceptor } from '../pipeline/types.js';

export interface ConcurrencyLimitOptions {
  readonly servers: readonly Pick<ServerConfig, 'name' | 'maxConcurrency' | 'maxQueue'>[];
}

/**
 * At most `maxConcurrency` calls in flight per upstream; up to `maxQueue` more wait, and beyond
 * that calls are refused at once rather than queueing without bound. Innermost stage, so a
 * slot is held only while the upstream works, and the timeout outside it counts queued time.
 */
export function createConcurrencyLimitInterceptor(options: ConcurrencyLimitOptions): Interceptor {
  const limits = new Map<
    string,
    { limit: LimitFunction; server: ConcurrencyLimitOptions['servers'][number] }
  >(options.servers.map((s) => [s.name, { limit: pLimit(s.maxConcurrency), server: s }]));
  return function concurrencyLimit(call, next) {
    const entry = limits.get(call.server);
    if (entry === undefined) return next(call);
    const { limit, server } = entry;
    if (limit.activeCount >= limit.concurrency && limit.pendingCount >= server.maxQueue)
      return Promise.reject(new QueueFullError(server.name, server.maxConcurrency, server.maxQueue));
    return limit(() =>
      // A call that timed out or was cancelled while it waited never reaches the upstream.
      call.signal?.cancelled ? Promise.reject(call.signal.reason!) : next(call),
    );
  };
}
