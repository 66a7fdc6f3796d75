/**
 * One timer for many things each of which may fall due (a request body that stopped coming, an
 * answer stream due a keep-alive comment): every `periodMs` the things added are visited with
 * the time. A request then costs a set entry, not a timer of its own made, moved and cleared,
 * which was several thousand instructions of every HTTP call. Things fall due up to one period
 * late. The timer does not hold the process open, and stops at the first tick that finds
 * nothing, so an idle gateway is not woken. Each belongs to what owns the things it visits (a
 * listener), which stops it when it closes.
 */
export class Sweeper<T> {
  private readonly items = new Set<T>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly periodMs: number,
    private readonly visit: (item: T, now: number) => void,
  ) {}

  /** Visits `item` each period from now on; nothing once stopped (its owner has closed). */
  add(item: T): void {
    if (this.stopped) return;
    this.items.add(item);
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.periodMs);
    this.timer.unref();
  }

  delete(item: T): void {
    this.items.delete(item);
  }

  /**
   * Forgets every thing added and clears the timer, for good: what is added later is not
   * visited. What was added is not visited once more either; its owner is closing it.
   */
  stop(): void {
    this.stopped = true;
    this.items.clear();
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    if (this.items.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = Date.now();
    for (const item of [...this.items]) this.visit(item, now);
  }
}
