import type { RestartConfig } from '../../config/types.js';
import type {
  UpstreamExitEvent,
  UpstreamFailedEvent,
  UpstreamRestartEvent,
  UpstreamStartEvent,
} from '../events.js';
import type { Logger } from '../logger.js';
import { CrashLoopDetector, RepeatedFailures, restartDelay } from './backoff.js';

/** What ended a connection (or its attempt), and when it had connected, if it had. */
export interface AttemptEnd {
  readonly endedWith: Error;
  readonly connectedAt?: number;
}

/** An upstream lifecycle record without the gateway's session id (the gateway adds it). */
export type UpstreamLifecycleEvent =
  | Omit<UpstreamStartEvent, 'session'>
  | Omit<UpstreamExitEvent, 'session'>
  | Omit<UpstreamRestartEvent, 'session'>
  | Omit<UpstreamFailedEvent, 'session'>;

export interface SupervisionOptions {
  readonly server: string;
  readonly transport: UpstreamStartEvent['transport'];
  /** What the server listed, in a few words, for the log. */
  readonly lists: () => string;
  readonly restart: RestartConfig;
  readonly log: Logger;
  readonly onLifecycle?: (event: UpstreamLifecycleEvent) => void;
}

/**
 * The record an upstream's supervisor keeps of its connections, and how it answers one that
 * ended: each start and end is logged and recorded (the same failure again is counted, not
 * repeated), and after an unexpected end the next attempt is made after a backoff, until the
 * server failed too often too close together.
 */
export class Supervision {
  private readonly crashes: CrashLoopDetector;
  private readonly repeated = new RepeatedFailures();

  constructor(private readonly options: SupervisionOptions) {
    this.crashes = new CrashLoopDetector(options.restart);
  }

  /** A connection is ready, `ms` after its attempt began. */
  connected(facts: { readonly pid: number | undefined; readonly tools: number; readonly ms: number }): void {
    const { server, transport, log, lists, onLifecycle } = this.options;
    log.info(`connected (${lists()})`);
    const { pid, ...rest } = facts;
    onLifecycle?.({ type: 'upstream_start', server, transport, ...(pid !== undefined && { pid }), ...rest });
  }

  /** The gateway ended the connection on purpose (idle, stopped for good). */
  stopped(): void {
    this.options.onLifecycle?.({ type: 'upstream_exit', server: this.options.server, expected: true });
  }

  /** Failures inside the window: 0 when the server has been healthy. */
  get recent(): number {
    return this.crashes.recent;
  }

  /** Starts counting afresh (a failure that is not the server's, such as a sign-in it wants). */
  reset(): void {
    this.crashes.reset();
  }

  /**
   * Records an unexpected end; resolves how long to wait before the next attempt, or undefined
   * when there were more than `maxRestarts` failures within the window: the server is then given
   * up on until the gateway restarts (logged and recorded as such).
   */
  /** The attempt failed in a way no retry can mend (see `isLasting`): no restart, failed at once. */
  failedForGood({ endedWith }: AttemptEnd): undefined {
    const { server, log, onLifecycle } = this.options;
    const message = `marked failed, not restarted: ${endedWith.message}`;
    log.error(message);
    onLifecycle?.({ type: 'upstream_failed', server, error: message });
    return undefined;
  }

  ended({ endedWith, connectedAt }: AttemptEnd): number | undefined {
    const { server, restart, log, onLifecycle } = this.options;
    log.error(this.repeated.line(endedWith.message, { connected: connectedAt !== undefined }));
    onLifecycle?.(
      connectedAt === undefined
        ? { type: 'upstream_failed', server, error: endedWith.message }
        : { type: 'upstream_exit', server, expected: false, error: endedWith.message },
    );
    // A connection that stayed up for a whole window was healthy: start counting afresh.
    const now = Date.now();
    if (connectedAt !== undefined && now - connectedAt >= restart.windowMs) this.crashes.reset();
    if (this.crashes.record(now)) {
      const message =
        `marked failed: more than ${restart.maxRestarts} failures within ` +
        `${restart.windowMs} ms; it will not be restarted until the gateway restarts`;
      log.error(message);
      onLifecycle?.({ type: 'upstream_failed', server, error: message });
      return undefined;
    }
    const delayMs = restartDelay(this.crashes.recent - 1, restart);
    log.info(`restarting in ${delayMs} ms`);
    onLifecycle?.({ type: 'upstream_restart', server, attempt: this.crashes.recent, delayMs });
    return delayMs;
  }
}
