import type { WardenConfig } from '../../config/types.js';
import { CallTimeoutError } from '../../core/errors.js';
import type { CancelListener } from '../../core/rpc/cancellation.js';
import { DeadlineQueue, type DeadlineEntry } from '../../core/rpc/deadlines.js';
import { Deferred } from '../../lib/deferred.js';
import type { RoutedMessage, Stage } from '../../core/pipeline/types.js';
import type { Outcome } from '../../core/rpc/outcome.js';
import { matchesGlob } from '../../lib/glob.js';

export interface TimeoutLimits {
  /** No answer and no progress for this long ends the call. */
  readonly idleMs: number;
  /** However much progress arrives, the call ends after this long. */
  readonly maxMs: number;
}

export interface TimeoutStageOptions {
  readonly limitsFor: (
    message: Pick<RoutedMessage, 'kind' | 'server' | 'target' | 'direction'>,
  ) => TimeoutLimits;
}

/**
 * A request a server makes of the host (sampling, elicitation, roots) that the host leaves
 * unanswered this long is failed, and the host is sent `notifications/cancelled`: without a
 * bound, a server could leave thousands of questions open and their memory held for ever.
 */
export const HOST_REQUEST_TIMEOUT_MS = 10 * 60_000;
const HOST_REQUEST_LIMITS: TimeoutLimits = Object.freeze({
  idleMs: HOST_REQUEST_TIMEOUT_MS,
  maxMs: HOST_REQUEST_TIMEOUT_MS,
});

/**
 * Resolves a request's limits from the config: for a tool call, the first matching
 * `tools.timeouts` glob; then the server's `timeout`, else `gateway.timeout`. The hard limit is
 * the server's `maxTimeout`, else the gateway's. Memoized per server and tool (globs are matched
 * once, not per call); other kinds take the server's limits, memoized per server (never per
 * URI, which would grow without bound).
 */
export function timeoutLimitsFromConfig(config: WardenConfig): TimeoutStageOptions['limitsFor'] {
  const servers = new Map(config.servers.map((s) => [s.name, s]));
  // By server, then tool: a joined string key would be made (and hashed) on every call.
  const cache = new Map<string, Map<string, TimeoutLimits>>();
  const serverLimits = new Map<string, TimeoutLimits>();
  const limitsOf = (server: string, perTool: number | undefined): TimeoutLimits => {
    const s = servers.get(server);
    return {
      idleMs: perTool ?? s?.timeoutMs ?? config.gateway.callTimeoutMs,
      maxMs: s?.maxTimeoutMs ?? config.gateway.maxCallTimeoutMs,
    };
  };
  return ({ kind, server, target: tool, direction }) => {
    // The host's user may take a while to answer, but a question must not wait for ever.
    if (direction === 'host') return HOST_REQUEST_LIMITS;
    if (kind !== 'tools/call') {
      let limits = serverLimits.get(server);
      if (limits === undefined) serverLimits.set(server, (limits = limitsOf(server, undefined)));
      return limits;
    }
    let byTool = cache.get(server);
    if (byTool === undefined) cache.set(server, (byTool = new Map()));
    let limits = byTool.get(tool);
    if (limits === undefined) {
      const perTool = servers.get(server)?.tools.timeouts.find((t) => matchesGlob(t.glob, tool))?.timeoutMs;
      limits = limitsOf(server, perTool);
      byTool.set(tool, limits);
    }
    return limits;
  };
}

/** One call under a time limit: its outer promise, its place in a deadline queue, its listener. */
class TimedCall extends Deferred<Outcome> implements CancelListener, DeadlineEntry {
  deadline = 0;
  queued = false;
  prevEntry: DeadlineEntry | undefined;
  nextEntry: DeadlineEntry | undefined;
  readonly started = performance.now();

  constructor(
    private readonly call: RoutedMessage,
    private readonly limits: TimeoutLimits,
    private readonly queue: DeadlineQueue,
  ) {
    super();
  }

  /** Starts the clock: the first deadline is the idle limit, or the hard one if shorter. */
  start(): void {
    this.queue.schedule(this, this.started + Math.min(this.limits.idleMs, this.limits.maxMs));
  }

  /** Progress: the idle limit starts again, within the hard maximum. */
  progressed(): void {
    if (!this.queued) return;
    const { idleMs, maxMs } = this.limits;
    this.queue.schedule(this, Math.min(performance.now() + idleMs, this.started + maxMs));
  }

  expired(now: number): void {
    const { call } = this;
    const { idleMs, maxMs } = this.limits;
    const max = now - this.started >= maxMs;
    call.signal.cancel(
      new CallTimeoutError({
        method: call.kind,
        direction: call.direction,
        server: call.server,
        target: call.target,
        kind: max ? 'max' : 'idle',
        limitMs: max ? maxMs : idleMs,
        waitingOn: call.record.waitingOn,
      }),
    );
  }

  /** A timeout or the host's cancel: answer now, whether or not the stages inside react. */
  onCancelled(reason: Error): void {
    this.queue.remove(this);
    this.reject(reason);
  }

  /** The stages inside answered. */
  finished(): void {
    this.queue.remove(this);
    this.call.signal.unlisten(this);
  }
}

/**
 * Bounds the upstream part of a call (inside confirmation, so a human's wait does
 * not count; outside the concurrency limit, so time spent queued does). When a limit fires, the
 * call's signal is cancelled with a CallTimeoutError: the upstream session sends
 * `notifications/cancelled` for its own request id and drops any late answer, and the caller
 * gets the error at once, whatever the stages inside do. Progress from the upstream restarts
 * the idle timer, so every call asks for progress.
 */
export function createTimeoutStage(options: TimeoutStageOptions): Stage {
  // One timer per first deadline's duration, not one per call (see DeadlineQueue): calls with the
  // same limits reach their deadlines in the order they started.
  const queues = new Map<number, DeadlineQueue>();
  const queueFor = (ms: number): DeadlineQueue => {
    let queue = queues.get(ms);
    if (queue === undefined) queues.set(ms, (queue = new DeadlineQueue()));
    return queue;
  };
  return function timeout(call, next) {
    const limits = options.limitsFor(call);
    const { signal } = call;
    if (signal.cancelled) return Promise.reject(signal.reason!);
    const timed = new TimedCall(call, limits, queueFor(Math.min(limits.idleMs, limits.maxMs)));
    const hostProgress = call.onProgress;
    call.onProgress = (params) => {
      timed.progressed();
      hostProgress?.(params);
    };
    timed.start();
    signal.listen(timed);
    let inner: Promise<Outcome>;
    try {
      inner = next(call);
    } catch (error) {
      inner = Promise.reject(error);
    }
    inner.then(
      (result) => {
        timed.finished();
        timed.resolve(result);
      },
      (error: unknown) => {
        timed.finished();
        timed.reject(error);
      },
    );
    return timed.promise;
  };
}
