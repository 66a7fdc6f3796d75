import type { ServerConfig } from '../../config/types.js';
import { HostRequestsFullError, QueueFullError } from '../../core/errors.js';
import type { CancelListener } from '../../core/rpc/cancellation.js';
import { Deferred } from '../../lib/deferred.js';
import type { Next, RoutedMessage, Stage } from '../../core/pipeline/types.js';
import type { Outcome } from '../../core/rpc/outcome.js';

export interface ConcurrencyLimitOptions {
  readonly servers: readonly Pick<ServerConfig, 'name' | 'maxConcurrency' | 'maxQueue'>[];
}

/** A call waiting for a slot: its promise, and its listener for a cancel while it waits. */
class Waiter extends Deferred<Outcome> implements CancelListener {
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
  private readonly queue: Waiter[] = [];
  private readonly release = (): void => {
    this.active--;
    this.drain();
  };

  constructor(private readonly server: ConcurrencyLimitOptions['servers'][number]) {}

  run(call: RoutedMessage, next: Next): Promise<Outcome> {
    const { maxConcurrency, maxQueue, name } = this.server;
    if (this.active < maxConcurrency && this.queue.length === 0) return this.start(call, next);
    if (this.queue.length >= maxQueue)
      return Promise.reject(new QueueFullError(name, maxConcurrency, maxQueue));
    // One object per queued call (no closures): with the default limits most calls of a busy
    // server wait here, and the queue was most of this stage's garbage.
    const waiter = new Waiter(this, call, next);
    this.queue.push(waiter);
    call.signal.listen(waiter);
    return waiter.promise;
  }

  /** A cancelled call leaves the queue at once, never reaching the upstream. */
  leave(waiter: Waiter): void {
    const i = this.queue.indexOf(waiter);
    if (i !== -1) this.queue.splice(i, 1);
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
    while (this.active < this.server.maxConcurrency && this.queue.length > 0) {
      const waiter = this.queue.shift()!;
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
export function createConcurrencyLimitStage(options: ConcurrencyLimitOptions): Stage {
  const gates = new Map(options.servers.map((s) => [s.name, new Gate(s)]));
  /** Per server, its requests to the host now waiting for an answer. */
  const asking = new Map<string, number>();
  const release = (server: string) => (): void => void asking.set(server, (asking.get(server) ?? 1) - 1);
  return function concurrencyLimit(call, next) {
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
  };
}

/**
 * Requests one server may have open with the host at once (sampling, elicitation, roots). A
 * host shows a user one question at a time; a server with more open than this is flooding it,
 * and each open request holds memory until it is answered or times out.
 */
export const MAX_OPEN_HOST_REQUESTS = 16;
