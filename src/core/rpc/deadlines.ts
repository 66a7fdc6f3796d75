/**
 * Deadlines on one timer. A timer per call (a Timeout object, its closures, cleared on every
 * answer) was a large share of the gateway's garbage per call (measured); here a call's record
 * is itself the queue's node, and one timer serves every call in the queue.
 *
 * The timer is always armed for the earliest deadline (or before it: removing the head does
 * not re-arm, and a timer that finds nothing due re-arms for the new head). So an entry expires
 * when a setTimeout for its own deadline would have fired, give or take the rounding between
 * performance.now() and the timers' clock; never earlier than its deadline. Monotonic time, not
 * Date.now(): a wall clock set back (NTP, a user) must not hold a call past its timeout.
 *
 * Entries are kept sorted by deadline, and a new deadline is placed by walking back from the
 * tail. Give each duration a queue of its own: calls with the same timeout get deadlines in the
 * order they start (or make progress), so that walk stops at once.
 */
export interface DeadlineEntry {
  /** When it expires, in performance.now() milliseconds. Written by the queue. */
  deadline: number;
  /** Links written by the queue: whether it is in one, and its neighbours there. */
  queued: boolean;
  prevEntry: DeadlineEntry | undefined;
  nextEntry: DeadlineEntry | undefined;
  /** Its deadline passed; it has already left the queue. */
  expired(now: number): void;
}

export class DeadlineQueue {
  private head: DeadlineEntry | undefined;
  private tail: DeadlineEntry | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The performance.now() at which `timer` fires. */
  private armedFor = 0;

  /** Queues `entry` to expire at `deadline`, or moves it there if it is queued already. */
  schedule(entry: DeadlineEntry, deadline: number): void {
    if (entry.queued) this.unlink(entry);
    entry.deadline = deadline;
    entry.queued = true;
    let before = this.tail;
    while (before !== undefined && before.deadline > deadline) before = before.prevEntry;
    entry.prevEntry = before;
    entry.nextEntry = before === undefined ? this.head : before.nextEntry;
    if (entry.nextEntry === undefined) this.tail = entry;
    else entry.nextEntry.prevEntry = entry;
    if (before === undefined) this.head = entry;
    else before.nextEntry = entry;
    if (this.timer === undefined || this.armedFor > deadline) this.arm(deadline);
  }

  /** Takes `entry` out (it will not expire); nothing if it is not queued. */
  remove(entry: DeadlineEntry): void {
    if (!entry.queued) return;
    this.unlink(entry);
    // Nothing left to wait for: a pending timer would keep the process alive.
    if (this.head === undefined && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** Entries queued, for tests. */
  get size(): number {
    let n = 0;
    for (let e = this.head; e !== undefined; e = e.nextEntry) n++;
    return n;
  }

  private unlink(entry: DeadlineEntry): void {
    const { prevEntry, nextEntry } = entry;
    if (prevEntry === undefined) this.head = nextEntry;
    else prevEntry.nextEntry = nextEntry;
    if (nextEntry === undefined) this.tail = prevEntry;
    else nextEntry.prevEntry = prevEntry;
    entry.prevEntry = entry.nextEntry = undefined;
    entry.queued = false;
  }

  private arm(deadline: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedFor = deadline;
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(deadline - performance.now())));
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    // Re-read the head each time: an expiry may add or remove entries.
    for (let entry = this.head; entry !== undefined && entry.deadline <= now; entry = this.head) {
      this.unlink(entry);
      entry.expired(now);
    }
    if (this.head !== undefined && this.timer === undefined) this.arm(this.head.deadline);
  };
}
