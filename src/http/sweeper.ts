/**
 * One timer for many things each of which may fall due (a request body that stopped coming, an
 * answer stream due a keep-alive comment): every `periodMs` the things added are visited with
 * the time. A request then costs a set entry, not a timer of its own made, moved and cleared,
 * which was several thousand instructions of every HTTP call. Things fall due up to one period
 * late. The timer does not hold the process open, and stops at the first tick that finds
 * nothing, so an idle gateway is not woken.
 */
export class Sweeper<T> {
  private readonly items = new Set<T>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly periodMs: number,
    private readonly visit: (item: T, now: number) => void,
  ) {}

  add(item: T): void {
    this.items.add(item);
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.periodMs);
    this.timer.unref();
  }

  delete(item: T): void {
    this.items.delete(item);
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
