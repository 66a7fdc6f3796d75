import type { WardenConfig } from '../config/types.js';
import { CallTimeoutError } from '../errors.js';
import type { Interceptor, ToolCall } from '../pipeline/types.js';
import { matchesGlob } from '../util/glob.js';

export interface TimeoutLimits {
  /** No answer and no progress for this long ends the call. */
  readonly idleMs: number;
  /** However much progress arrives, the call ends after this long. */
  readonly maxMs: number;
}

export interface TimeoutInterceptorOptions {
  readonly limitsFor: (call: Pick<ToolCall, 'server' | 'tool'>) => TimeoutLimits;
}

/**
 * Resolves a call's limits from the config: the first matching `tools.timeouts` glob, else
 * the server's `timeout`, else `gateway.timeout`; the hard limit is the server's `maxTimeout`,
 * else the gateway's. Memoized per server and tool: globs are matched once, not per call.
 */
export function timeoutLimitsFromConfig(config: WardenConfig): TimeoutInterceptorOptions['limitsFor'] {
  const servers = new Map(config.servers.map((s) => [s.name, s]));
  const cache = new Map<string, TimeoutLimits>();
  return ({ server, tool }) => {
    const key = `${server}\u0000${tool}`;
    let limits = cache.get(key);
    if (limits === undefined) {
      const s = servers.get(server);
      const perTool = s?.tools.timeouts.find((t) => matchesGlob(t.glob, tool))?.timeoutMs;
      limits = {
        idleMs: perTool ?? s?.timeoutMs ?? config.gateway.callTimeoutMs,
        maxMs: s?.maxTimeoutMs ?? config.gateway.maxCallTimeoutMs,
      };
      cache.set(key, limits);
    }
    return limits;
  };
}

/**
 * Bounds the upstream part of a call (ARCHITECTURE: inside confirmation, so a human's wait does
 * not count; outside the concurrency limit, so time spent queued does). When a limit fires,
 * the call's signal is aborted: the upstream session sends `notifications/cancelled` for its
 * own request id and drops any late answer; the caller gets a CallTimeoutError at once.
 * Progress from the upstream restarts the idle timer, so every call asks for progress.
 */
export function createTimeoutInterceptor(options: TimeoutInterceptorOptions): Interceptor {
  return function timeout(call, next) {
    const { idleMs, maxMs } = options.limitsFor(call);
    const controller = new AbortController();
    const hostSignal = call.signal;
    return new Promise((resolve, reject) => {
      const stop = (error: Error) => {
        controller.abort(error);
        cleanup();
        reject(error);
      };
      const idle = setTimeout(
        () => stop(new CallTimeoutError(call.server, call.tool, 'idle', idleMs)),
        idleMs,
      );
      // Always armed: progress restarts the idle timer, so only this one bounds a chatty call.
      const hard = setTimeout(() => stop(new CallTimeoutError(call.server, call.tool, 'max', maxMs)), maxMs);
      // The host's own cancellation ends the call too, with the host's reason, so the two are told apart.
      const onHostAbort = () => stop(hostSignal!.reason as Error);
      function cleanup() {
        clearTimeout(idle);
        clearTimeout(hard);
        hostSignal?.removeEventListener('abort', onHostAbort);
      }
      if (hostSignal?.aborted) return onHostAbort();
      hostSignal?.addEventListener('abort', onHostAbort, { once: true });

      const hostProgress = call.onProgress;
      next({
        ...call,
        signal: controller.signal,
        onProgress: (params) => {
          idle.refresh();
          hostProgress?.(params);
        },
      }).then(
        (result) => {
          cleanup();
          resolve(result);
        },
        (error: unknown) => {
          cleanup();
          reject(error);
        },
      );
    });
  };
}
