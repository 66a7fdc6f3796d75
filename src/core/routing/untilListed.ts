/**
 * Requests waiting for a name to be listed: each waits until a list change brings its name (a
 * server that became ready), or until the upstreams' startup window has passed.
 */
export class UntilListed {
  private readonly waiting = new Set<() => void>();

  /** `started`: resolves when the upstreams' startup window has passed. */
  constructor(private readonly started: () => Promise<void>) {}

  /**
   * What `find` finds, as soon as it finds it: at once, or when a list change brings it, or
   * undefined once the startup window has passed without it. So a request for a server that is
   * ready goes at once, whatever slower servers are doing. Each waiter lives at most until the
   * startup window closes.
   */
  find<T>(find: () => T | undefined): Promise<T | undefined> {
    const found = find();
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => {
      const check = (): void => {
        const now = find();
        if (now === undefined) return;
        this.waiting.delete(check);
        resolve(now);
      };
      this.waiting.add(check);
      void this.started().then(() => {
        this.waiting.delete(check);
        resolve(find());
      });
    });
  }

  /** Lists changed: requests waiting for a name a server has just listed go now. */
  listsChanged(): void {
    for (const check of [...this.waiting]) check();
  }
}
