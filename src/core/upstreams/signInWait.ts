import type { Logger } from '../logger.js';

export interface SignInWaitOptions {
  readonly server: string;
  readonly log: Logger;
  /** How long a wait lasts without `retryNow`: then the server is tried again quietly. */
  readonly quietMs: number;
  /** Aborted when the upstream stops for good: a wait under way then ends. */
  readonly stop: AbortSignal;
}

/**
 * The wait of an upstream whose server wants its user to sign in: trying again cannot help until
 * someone signs in, so its supervisor waits here instead of restarting with backoff. The wait
 * ends at `retryNow` (a sign-in through the host completed), after `quietMs` (a sign-in made
 * elsewhere, such as `mcp-warden auth login` in a terminal, is then noticed), or when the
 * upstream stops.
 */
export class SignInWait {
  constructor(private readonly options: SignInWaitOptions) {}

  /** Ends the wait under way; set only while the supervisor waits. */
  private wakeUp: (() => void) | undefined;
  /** Told when the next connection attempt has settled, either way. */
  private attemptWaiters: (() => void)[] = [];

  /**
   * Waits as described above, after an attempt failed for want of a sign-in (`why`); resolves when
   * the next attempt should be made. The user is told how to sign in on the `first` such failure.
   */
  async wait(why: Error, { first }: { readonly first: boolean }): Promise<void> {
    const { server, log, quietMs, stop } = this.options;
    const woken = new Promise<void>((resolve) => {
      this.wakeUp = resolve;
      const timer = setTimeout(resolve, quietMs).unref();
      stop.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    if (first)
      log.info(
        `needs sign-in: call its authorize tool or run "mcp-warden auth login ${server}" (${why.message})`,
      );
    else log.debug(`still needs sign-in (${why.message})`);
    await woken;
    this.wakeUp = undefined;
  }

  /**
   * Ends the wait at once and resolves when the attempt it starts has settled. While `waiting()`
   * still holds after an attempt that was already under way (it may have started before the
   * sign-in), it waits for one more.
   */
  async retryNow(waiting: () => boolean): Promise<void> {
    for (let tries = 0; tries < 2 && waiting(); tries++) {
      const settled = new Promise<void>((resolve) => this.attemptWaiters.push(resolve));
      const wake = this.wakeUp;
      this.wakeUp = undefined;
      wake?.();
      await settled;
      if (wake !== undefined) break;
    }
  }

  /** A connection attempt settled: whoever waits in `retryNow` learns of it. */
  attemptSettled(): void {
    const waiters = this.attemptWaiters;
    this.attemptWaiters = [];
    for (const told of waiters) told();
  }
}
