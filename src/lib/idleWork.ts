/**
 * Small pieces of work done while the event loop has nothing else to do: a few milliseconds at a
 * time, each slice in its own turn (setImmediate), so a message that arrives meanwhile waits for
 * one slice at most, never for the whole queue. The queue is bounded; work that does not fit is
 * dropped, which must only ever cost the work being done later, on demand.
 */
export interface IdleWorkOptions {
  /** Steps queued at most; more are dropped. */
  readonly maxQueued: number;
  /** How long one slice may run before it yields, in milliseconds. */
  readonly sliceMs: number;
  /**
   * Asked before each step: false holds the queue (the step in progress is the most anything
   * else waits for) until `resume()`. Absent: the queue always runs.
   */
  readonly mayRun?: () => boolean;
  /** Told when `mayRun` has held the queue, so the owner can arrange to resume it. */
  readonly held?: () => void;
}

export class IdleWork {
  private readonly queue: (() => void)[] = [];
  /** Where the next step is in `queue` (steps before it are done), so a slice does no shifting. */
  private head = 0;
  private scheduled = false;

  constructor(private readonly options: IdleWorkOptions) {}

  /** Steps waiting to run. */
  get pending(): number {
    return this.queue.length - this.head;
  }

  /** Queues `step`; false when the queue is full and it was dropped. A step must not throw. */
  add(step: () => void): boolean {
    if (this.pending >= this.options.maxQueued) return false;
    this.queue.push(step);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.slice());
    }
    return true;
  }

  /** Runs the queue again after `mayRun` held it (a no-op when it is running or empty). */
  resume(): void {
    if (this.scheduled || this.pending === 0) return;
    this.scheduled = true;
    setImmediate(() => this.slice());
  }

  private slice(): void {
    const until = performance.now() + this.options.sliceMs;
    const { mayRun } = this.options;
    while (this.head < this.queue.length) {
      if (mayRun !== undefined && !mayRun()) {
        this.scheduled = false;
        this.options.held?.();
        return;
      }
      const step = this.queue[this.head]!;
      this.queue[this.head++] = noop;
      try {
        step();
      } catch {
        // A step's own failure is its business; the queue goes on.
      }
      if (performance.now() >= until) break;
    }
    if (this.head < this.queue.length) {
      setImmediate(() => this.slice());
      return;
    }
    this.queue.length = 0;
    this.head = 0;
    this.scheduled = false;
  }
}

function noop(): void {}
