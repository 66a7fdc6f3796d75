import type { RestartConfig } from '../../config/types.js';

/** Delay before restart number `attempt` (0-based): doubling from the initial delay, capped. */
export function restartDelay(attempt: number, config: RestartConfig): number {
  return Math.min(config.maxDelayMs, config.initialDelayMs * 2 ** Math.min(attempt, 30));
}

/**
 * Remembers recent failures so a server that keeps dying is marked failed instead of being
 * restarted forever.
 */
export class CrashLoopDetector {
  private readonly failures: number[] = [];

  constructor(private readonly config: RestartConfig) {}

  /** Records a failure at `now`; true when that makes more than `maxRestarts` within the window. */
  record(now: number): boolean {
    this.failures.push(now);
    while (this.failures.length > 0 && now - this.failures[0]! > this.config.windowMs) this.failures.shift();
    return this.failures.length > this.config.maxRestarts;
  }

  /** How many failures are inside the window, which is also the next backoff attempt number. */
  get recent(): number {
    return this.failures.length;
  }

  reset(): void {
    this.failures.length = 0;
  }
}

/**
 * The last failure logged in full and how many times in a row it has happened: a server that
 * fails the same way on every restart (a command not on PATH, whose message lists the whole
 * PATH) is logged once in full, then counted.
 */
export class RepeatedFailures {
  private same: { readonly message: string; times: number } | undefined;

  /**
   * The line to log for why the server ended: `message` the first time, a count when it failed
   * the same way on the attempt before (without connecting in between).
   */
  line(message: string, options: { readonly connected: boolean }): string {
    const previous = this.same;
    if (!options.connected && previous !== undefined && previous.message === message) {
      previous.times += 1;
      return `failed again, the same way as logged above (${previous.times} times in a row)`;
    }
    this.same = options.connected ? undefined : { message, times: 1 };
    return message;
  }
}
