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
 * not count; outside the concurrency limit, so time spent queued does). When a limit fires, the
 * call's signal is cancelled with a CallTimeoutError: the upstream session sends
 * `notifications/cancelled` for its own request id and drops any late answer, and the caller
 * gets the error at once, whatever the stages inside do. Progress from the upstream restarts
 * the idle timer, so every call asks for progress.
 */
export function createTimeoutInterceptor(options: TimeoutInterceptorOptions): Interceptor {
  return function timeout(call, next) {
    const { idleMs, maxMs } = options.limitsFor(call);
    const { signal } = call;
    if (signal.cancelled) return Promise.reject(signal.reason!);
    const started = Date.now();
    let lastActivity = started;
    const hostProgress = call.onProgress;
    call.onProgress = (params) => {
      lastActivity = Date.now();
      hostProgress?.(params);
    };
    return new Promise((resolve, reject) => {
      // One timer per call: progress only stamps the time, and when the timer fires it either
      // ends the call or re-arms for what is left (cheaper than re-arming on every progress).
      const check = () => {
        const now = Date.now();
        if (now - started >= maxMs) signal.cancel(new CallTimeoutError(call.server, call.tool, 'max', maxMs));
        else if (now - lastActivity >= idleMs)
          signal.cancel(new CallTimeoutError(call.server, call.tool, 'idle', idleMs));
        else timer = setTimeout(check, Math.min(lastActivity + idleMs, started + maxMs) - now);
      };
      let timer = setTimeout(check, Math.min(idleMs, maxMs));
      // A timeout or the host's cancel: answer now, whether or not the stages inside react.
      const stopListening = signal.onCancel((reason) => {
        clearTimeout(timer);
        reject(reason);
      });
      next(call).then(
        (result) => {
          clearTimeout(timer);
          stopListening();
          resolve(result);
        },
        (error: unknown) => {
          clearTimeout(timer);
          stopListening();
          reject(error);
        },
      );
    });
  };
}
