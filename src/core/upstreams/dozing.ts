import type { Params } from '../protocol/jsonRpc.js';
import { IdleWatch } from './startPolicy.js';

export interface DozingOptions {
  /** Quiet this long stops the server (its `idleTimeout`); undefined: never. */
  readonly idleMs: number | undefined;
  /** Whether something other than requests keeps the server awake (resource subscriptions). */
  readonly keptAwake: () => boolean;
  /** The server has been idle for `idleMs`: the supervisor stops its process and calls `doze`. */
  readonly onIdle: () => void;
}

/**
 * The waking and dozing of one upstream whose process runs only while it is needed: a lazy
 * server before its first use, or one its idle timeout stopped. While it dozes, its supervisor
 * waits in `untilWanted`; a request that finds it asleep calls `wake` and waits in `started`
 * for the start to succeed or fail. Requests in flight, tasks and subscriptions keep it awake
 * (see `IdleWatch`); quiet for the idle timeout calls `onIdle`.
 */
export class Dozing {
  private asleep = false;
  private wanted = false;
  /** Ends the supervisor's wait in `untilWanted`; set only while it waits. */
  private wakeUp: (() => void) | undefined;
  /** Requests waiting for a start to succeed or fail. */
  private readonly waiters = new Set<() => void>();
  private readonly idle: IdleWatch;

  constructor(options: DozingOptions) {
    this.idle = new IdleWatch(options);
  }

  /** Whether the process is stopped until a request wants it. */
  get dozing(): boolean {
    return this.asleep;
  }

  /** The process is stopped (idle) or was never started (lazy): it waits for `wake`. */
  doze(): void {
    this.asleep = true;
    this.wanted = false;
    this.idle.stopped();
  }

  /** A request needs the server: the supervisor's wait ends. */
  wake(): void {
    this.wanted = true;
    this.wakeUp?.();
  }

  /**
   * Resolves once a request wants the server (then it no longer dozes), or when `signal` aborts
   * (the upstream is stopped for good: then it still dozes, and this resolves false).
   */
  async untilWanted(signal: AbortSignal): Promise<boolean> {
    if (!this.wanted && !signal.aborted)
      await new Promise<void>((resolve) => {
        const done = () => {
          this.wakeUp = undefined;
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.wakeUp = done;
        signal.addEventListener('abort', done, { once: true });
      });
    if (signal.aborted) return false;
    this.asleep = false;
    this.wanted = false;
    return true;
  }

  /** Settles once the start under way has succeeded or failed (`settled`), or after `ms`. */
  started(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.waiters.add(done);
    });
  }

  /** The start under way succeeded or failed (or the upstream stopped): its waiters go on. */
  settled(): void {
    for (const done of [...this.waiters]) done();
  }

  /** The server is ready: from now on quiet counts towards its idle timeout. */
  ready(): void {
    this.idle.ready();
  }

  /** The server stopped (failed, or for good): nothing to watch until it is ready again. */
  stopped(): void {
    this.idle.stopped();
  }

  /** Holds the server awake while `answer` is pending (see `IdleWatch.track`). */
  track<T>(method: string, answer: Promise<T>, result: (value: T) => Params | undefined): Promise<T> {
    return this.idle.track(method, answer, result);
  }

  /** A task status the server pushed: a running task keeps it awake. */
  noteTask(params: Params | undefined): void {
    this.idle.noteTask(params);
  }
}
