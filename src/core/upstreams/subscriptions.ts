import { describeError } from '../../lib/describeError.js';
import type { Logger } from '../logger.js';
import { Cancellation, type CancelSignal } from '../rpc/cancellation.js';
import type { Params } from '../protocol/jsonRpc.js';

const SUBSCRIBE = 'resources/subscribe';
const UNSUBSCRIBE = 'resources/unsubscribe';

/**
 * The resource URIs the host is subscribed to on one upstream server. A server keeps
 * subscriptions in its process, so one restarted by the gateway knows none of them and the host
 * would silently stop getting `notifications/resources/updated`: this set outlives the process,
 * and `restoreSubscriptions` replays it on every new connection.
 */
export class ResourceSubscriptions {
  private readonly active = new Set<string>();
  /**
   * Subscribes awaiting their answer, by URI: one object per run of them that no unsubscribe
   * interrupted. An unsubscribe drops the URI's entry, so a subscribe sent before it and answered
   * after it is not recorded: the host's last word on a URI is the one that counts.
   */
  private readonly pending = new Map<string, { inFlight: number }>();

  /** The URIs subscribed to, in the order they were first subscribed. */
  get uris(): readonly string[] {
    return [...this.active];
  }

  has(uri: string): boolean {
    return this.active.has(uri);
  }

  /**
   * Notes a request on its way to the server, and returns its answer unchanged. A subscribe counts
   * once the server accepts it (a refused one is not the server's to restore). An unsubscribe
   * counts at once, whatever the server answers: the host wants no more updates, and a URI kept
   * because an unsubscribe failed would be subscribed again by the next restart.
   */
  observe<T>(method: string, params: Params | undefined, answer: Promise<T>): Promise<T> {
    if (method !== SUBSCRIBE && method !== UNSUBSCRIBE) return answer;
    const uri = params?.uri;
    if (typeof uri !== 'string') return answer;
    if (method === UNSUBSCRIBE) {
      this.unsubscribing(uri);
      return answer;
    }
    const settle = this.subscribing(uri);
    answer.then(
      () => settle(true),
      () => settle(false),
    );
    return answer;
  }

  /** A subscribe to `uri` was sent; call the result with whether the server accepted it. */
  subscribing(uri: string): (accepted: boolean) => void {
    let run = this.pending.get(uri);
    if (run === undefined) this.pending.set(uri, (run = { inFlight: 0 }));
    run.inFlight++;
    const current = run;
    return (accepted) => {
      const uninterrupted = this.pending.get(uri) === current;
      if (accepted && uninterrupted) this.active.add(uri);
      if (--current.inFlight === 0 && uninterrupted) this.pending.delete(uri);
    };
  }

  /** An unsubscribe from `uri` was sent. */
  unsubscribing(uri: string): void {
    this.active.delete(uri);
    this.pending.delete(uri);
  }
}

/** Whether a server's declared capabilities say it takes `resources/subscribe`. */
export function subscribable(capabilities: Params): boolean {
  const resources = capabilities.resources as Params | undefined;
  return typeof resources === 'object' && resources !== null && resources.subscribe === true;
}

export interface RestoreSubscriptionsOptions {
  readonly subscriptions: ResourceSubscriptions;
  /** Whether this connection's server declared `resources.subscribe` in its initialize answer. */
  readonly supported: boolean;
  /** Sends `resources/subscribe` for `uri` on the new connection; `signal` bounds it. */
  readonly subscribe: (uri: string, signal: CancelSignal) => Promise<unknown>;
  /** How long the server gets to answer each subscribe. */
  readonly timeoutMs: number;
  /** The server's name, for messages. */
  readonly server: string;
  /** The server's logger (stderr). */
  readonly log: Logger;
  /**
   * True once this connection is over (the gateway stops, or it was torn down): its failures are
   * then that ending's, reported already, and not logged once per URI. A server that dies while
   * being re-subscribed may still get its URIs logged, which is true if redundant.
   */
  readonly ended: () => boolean;
}

/**
 * Subscribes a new connection to every URI the host is subscribed to. Every subscribe is sent
 * before this first yields, so any host message for this server (a new subscribe, an
 * unsubscribe) reaches it after them and the server sees them in the host's order. One URI that
 * fails is logged and changes nothing else: the connection stays up, the others are restored, and
 * the URI stays tracked (the host never unsubscribed, so the next restart tries again).
 */
export async function restoreSubscriptions(options: RestoreSubscriptionsOptions): Promise<void> {
  const { subscriptions, server, log } = options;
  const uris = subscriptions.uris;
  if (uris.length === 0) return;
  if (!options.supported) {
    // Kept, not dropped: a later restart may bring the capability back, and only the host may
    // end a subscription.
    log.warn(
      `server "${server}" no longer declares resources.subscribe; the host will get no updates for ` +
        `${uris.map((u) => JSON.stringify(u)).join(', ')} until it does`,
    );
    return;
  }
  const outcomes = await Promise.allSettled(uris.map((uri) => bounded(options, uri)));
  if (options.ended()) return;
  let restored = 0;
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') restored++;
    else
      log.warn(
        `could not re-subscribe server "${server}" to ${JSON.stringify(uris[i])} after its restart; ` +
          `the host will get no updates for it: ${describeError(outcome.reason)}`,
      );
  });
  log.info(`re-subscribed to ${restored} of ${uris.length} resources after the restart`);
}

async function bounded(options: RestoreSubscriptionsOptions, uri: string): Promise<unknown> {
  const signal = new Cancellation();
  const timer = setTimeout(
    () => signal.cancel(new Error(`no answer within ${options.timeoutMs} ms`)),
    options.timeoutMs,
  );
  try {
    return await options.subscribe(uri, signal);
  } finally {
    clearTimeout(timer);
  }
}
