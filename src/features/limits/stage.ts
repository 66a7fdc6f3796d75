import type { ServerConfig } from '../../config/types.js';
import { HostRequestsFullError, QueueFullError } from '../../core/errors.js';
import type { CancelListener } from '../../core/rpc/cancellation.js';
import { Deferred } from '../../lib/deferred.js';
import type { Next, RoutedMessage, Stage } from '../../core/pipeline/types.js';
import type { Outcome } from '../../core/rpc/outcome.js';

export interface ConcurrencyLimitOptions {
  readonly servers: readonly Pick<ServerConfig, 'name' | 'maxConcurrency' | 'maxQueue'>[];
}

/** A call waiting for a slot: its promise, its listener for a cancel while it waits, its place in line. */
class Waiter extends Deferred<Outcome> implements CancelListener {
  /** Its neighbours in the gate's line while it waits (see Gate). */
  before: Waiter | undefined;
  after: Waiter | undefined;
  queued = true;

  constructor(
    private readonly gate: Gate,
    readonly call: RoutedMessage,
    readonly next: Next,
  ) {
    super();
  }

  onCancelled(reason: Error): void {
    this.gate.leave(this);
    this.reject(reason);
  }
}

/**
 * One server's slots and queue. Not p-limit: that wraps every task in promises of its own
 * even when a slot is free, which the benchmark measured on every call, and it
 * cannot take a waiting task back out of its queue. Here a call with a free slot goes straight
 * through, and a queued call whose signal is cancelled (the timeout fired, the host gave up)
 * leaves the queue at once, never reaching the upstream.
 */
class Gate {
  private active = 0;
  /**
   * The calls waiting, first to last, linked through the waiters themselves. An array's
   * `shift` moved every waiting call one place per release, each move a write barrier while
   * the array lived in the old generation (measured: about 4 per call at 32 in flight with 16
   * slots); a link costs the same whatever the length, and a cancelled call leaves from anywhere.
   */
  private first: Waiter | undefined;
  private last: Waiter | undefined;
  private waiting = 0;
  private readonly release = (): void => {
    this.active--;
    this.drain();
  };

  constructor(private readonly server: ConcurrencyLimitOptions['servers'][number]) {}

  /** Whether `server` has the bounds this gate holds calls to. */
  sameBounds(server: ConcurrencyLimitOptions['servers'][number]): boolean {
    return server.maxConcurrency === this.server.maxConcurrency && server.maxQueue === this.server.maxQueue;
  }

  run(call: RoutedMessage, next: Next): Promise<Outcome> {
    const { maxConcurrency, maxQueue, name } = this.server;
    if (this.active < maxConcurrency && this.waiting === 0) return this.start(call, next);
    if (this.waiting >= maxQueue) return Promise.reject(new QueueFullError(name, maxConcurrency, maxQueue));
    // One object per queued call (no closures): with the default limits most calls of a busy
    // server wait here, and the queue was most of this stage's garbage.
    const waiter = new Waiter(this, call, next);
    waiter.before = this.last;
    if (this.last === undefined) this.first = waiter;
    else this.last.after = waiter;
    this.last = waiter;
    this.waiting++;
    call.signal.listen(waiter);
    return waiter.promise;
  }

  /** A cancelled call leaves the queue at once, never reaching the upstream. */
  leave(waiter: Waiter): void {
    if (!waiter.queued) return;
    const { before, after } = waiter;
    if (before === undefined) this.first = after;
    else before.after = after;
    if (after === undefined) this.last = before;
    else after.before = before;
    waiter.before = waiter.after = undefined;
    waiter.queued = false;
    this.waiting--;
  }

  private start(call: RoutedMessage, next: Next): Promise<Outcome> {
    this.active++;
    let running: Promise<Outcome>;
    try {
      running = next(call);
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(this.release, this.release);
    return running;
  }

  private drain(): void {
    for (
      let waiter = this.first;
      waiter !== undefined && this.active < this.server.maxConcurrency;
      waiter = this.first
    ) {
      this.leave(waiter);
      waiter.call.signal.unlisten(waiter);
      // A cancelled call left the queue when it was cancelled; this one is live.
      this.start(waiter.call, waiter.next).then(waiter.resolve, waiter.reject);
    }
  }
}

/**
 * At most `maxConcurrency` requests in flight per upstream, of every kind; up to `maxQueue` more
 * wait, and beyond that requests are refused at once rather than queueing without bound.
 * Innermost stage, so a slot is held only while the upstream works, and the timeout outside it
 * counts queued time. Requests an upstream makes of the host have their own bound: at most
 * `MAX_OPEN_HOST_REQUESTS` open per server, refused beyond it.
 */
export function createConcurrencyLimitStage(
  options: ConcurrencyLimitOptions,
): Stage & { serversChanged(servers: ConcurrencyLimitOptions['servers']): void } {
  const gates = new Map(options.servers.map((s) => [s.name, new Gate(s)]));
  /** Per server, its requests to the host now waiting for an answer. */
  const asking = new Map<string, number>();
  const release = (server: string) => (): void => void asking.set(server, (asking.get(server) ?? 1) - 1);
  function concurrencyLimit(call: RoutedMessage, next: Next): Promise<Outcome> {
    if (call.direction === 'host') {
      const open = asking.get(call.server) ?? 0;
      if (open >= MAX_OPEN_HOST_REQUESTS)
        return Promise.reject(new HostRequestsFullError(call.server, call.kind, MAX_OPEN_HOST_REQUESTS));
      asking.set(call.server, open + 1);
      const answered = release(call.server);
      const running = next(call);
      running.then(answered, answered);
      return running;
    }
    const gate = gates.get(call.server);
    return gate === undefined ? next(call) : gate.run(call, next);
  }
  return Object.assign(concurrencyLimit, {
    /**
     * The servers an edit of the config left: a server whose bounds are the same keeps its gate
     * (and the calls it holds); a new or changed one gets a fresh gate, while calls already in
     * the old one finish there.
     */
    serversChanged(servers: ConcurrencyLimitOptions['servers']): void {
      const before = new Map(gates);
      gates.clear();
      for (const server of servers) {
        const gate = before.get(server.name);
        gates.set(server.name, gate?.sameBounds(server) ? gate : new Gate(server));
      }
    },
  });
}

/**
 * Requests one server may have open with the host at once (sampling, elicitation, roots). A
 * host shows a user one question at a time; a server with more open than this is flooding it,
 * and each open request holds memory until it is answered or times out.
 */
export const MAX_OPEN_HOST_REQUESTS = 16;
