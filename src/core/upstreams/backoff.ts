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
