import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../core/logger.js';
import type { SharedStore } from '../lib/store/sharedStore.js';

/**
 * Carries a stateless host's retry to the replica that holds its call, and that replica's answer
 * back. A call of the 2026-07-28 revision in which a legacy upstream server asked the host a
 * question waits on the replica that asked (the upstream connection lives there), while the
 * host's retry, carrying the answers, may land on any replica. The replica it lands on sends it
 * on here, and mirrors onto its own HTTP response what the holder writes on the retry's behalf:
 * status and headers, the SSE events, the end.
 *
 * Messages travel by the store's publish/subscribe, one channel per replica for retries and one
 * for answers: nothing is queued in the store, so a retry for a replica that is gone is known at
 * once (nobody listens), and one whose holder falls silent for the store's timeout is given up.
 * The holder says it took the retry, then that it is still at it, a few times per timeout.
 */
export interface RetryRelay {
  /** This replica's name (its audit session), in the states of the calls it holds. */
  readonly replica: string;
  /**
   * Sends `retry` on to replica `to`, and mirrors its answer onto `out`; `out.lost` says why
   * when the answer cannot come. Cancel it when the host goes away first.
   */
  sendOn(to: string, retry: OutgoingRetry, out: MirroredAnswer): { cancel(): void };
  /** Starts taking the retries other replicas send this one, serving each on a `Reply`. */
  listen(serve: (retry: RelayedRetry, reply: Reply) => void): Promise<void>;
  /**
   * Serves the requests of other replicas to stream the rest of a call this one runs (those
   * sent with `stream`), each on a `Reply`, as retries are: the same bounds, liveness and end.
   */
  serveStreams(serve: (request: RelayedRetry, reply: Reply) => void): void;
}

/** What of a host's retry the holder needs: whose it is, the request, the headers it checks. */
export interface OutgoingRetry {
  /** The principal's key, as the replica that verified the request's token made it. */
  readonly principal: string;
  readonly body: unknown;
  /** `accept` and the `mcp-param-*` headers, lower-case. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Not a retry: a host's resumed stream of a 2025-11-25 session's call that the holder runs,
   * which the holder streams on from the host's `Last-Event-ID` (see `serveStreams`).
   */
  readonly stream?: true;
}

/** A retry another replica sent on to this one. */
export interface RelayedRetry extends OutgoingRetry {
  /** The replica the host's retry reached (its audit session), which answers the host. */
  readonly from: string;
}

/** Where the holder's answer to a retry sent on goes, on the replica that took it. */
export interface MirroredAnswer {
  head(status: number, headers: OutgoingHttpHeaders): void;
  chunk(text: string): void;
  end(text: string | undefined): void;
  /** The answer cannot come: `why` says what happened to the replica holding the call. */
  lost(why: string): void;
}

/**
 * The part of an HTTP response that answering a stateless request uses: a `ServerResponse`, or
 * a `RelayedReply` whose writes go back to the replica the host is waiting on.
 */
export interface Reply {
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, headers?: OutgoingHttpHeaders): unknown;
  write(text: string): unknown;
  end(text?: string): unknown;
  once(event: 'close', listener: () => void): unknown;
}

/** Retries this replica waits on another one for, at most. */
const MAX_SENT_ON = 256;
/** Retries of other replicas this one serves at once, at most. */
const MAX_SERVING = 1_000;

const retriesOf = (replica: string): string => `retries:${replica}`;
const answersOf = (replica: string): string => `retry-answers:${replica}`;

type Head = { readonly status: number; readonly headers: OutgoingHttpHeaders };

/** From the replica the retry reached to its holder. */
type ToHolder =
  | ({ readonly kind: 'retry'; readonly id: string } & RelayedRetry)
  | { readonly kind: 'cancel'; readonly id: string };

/** From the holder back: taken, still at it, part of the answer, its end. */
type Back =
  | { readonly kind: 'taken' | 'alive' }
  | { readonly kind: 'chunk'; readonly head?: Head; readonly text: string }
  | { readonly kind: 'end'; readonly head?: Head; readonly text?: string };
type ToSender =
  | { readonly kind: 'taken' | 'alive'; readonly id: string }
  | { readonly kind: 'chunk'; readonly id: string; readonly head?: Head; readonly text: string }
  | { readonly kind: 'end'; readonly id: string; readonly head?: Head; readonly text?: string };

interface SentOn {
  /** The replica holding the call. */
  readonly to: string;
  readonly out: MirroredAnswer;
  timer: NodeJS.Timeout | undefined;
}

interface RelayOptions {
  readonly store: SharedStore;
  readonly replica: string;
  readonly timeoutMs: number;
  readonly logger: Logger;
}

/** A retry relay over `store` for the replica named `replica`; `timeoutMs` bounds each silence. */
export function createRetryRelay(options: RelayOptions): RetryRelay {
  const { store, replica, logger } = options;
  const sending = new SentRetries(options);
  const holding = new HeldRetries(options);
  let streams: ((request: RelayedRetry, reply: Reply) => void) | undefined;
  return {
    replica,
    sendOn: (to, retry, out) => sending.sendOn(to, retry, out),
    serveStreams(serve) {
      streams = serve;
    },
    async listen(serve) {
      const listening = [
        store.listen(answersOf(replica), (text) => {
          const message = parsed(text) as ToSender | undefined;
          if (message !== undefined) sending.fromHolder(message);
        }),
        store.listen(retriesOf(replica), (text) => {
          const message = parsed(text) as ToHolder | undefined;
          if (message === undefined || !isRetryMessage(message)) return;
          const server = message.kind === 'retry' && message.stream === true ? streams : serve;
          if (server !== undefined) holding.take(message, server);
        }),
      ];
      await Promise.all(listening).catch((error: unknown) => {
        logger.warn(
          `retries sent on from other replicas cannot reach this one yet (${(error as Error).message}); it keeps trying`,
        );
      });
    },
  };
}

/** The retries this replica sent on to the replicas holding their calls, waiting for answers. */
class SentRetries {
  readonly #waiting = new Map<string, SentOn>();

  constructor(private readonly options: RelayOptions) {}

  sendOn(to: string, retry: OutgoingRetry, out: MirroredAnswer): { cancel(): void } {
    if (this.#waiting.size >= MAX_SENT_ON) {
      out.lost(`this replica already waits on ${MAX_SENT_ON} retries sent on to others`);
      return { cancel: () => {} };
    }
    const id = randomBytes(12).toString('base64url');
    const entry: SentOn = { to, out, timer: undefined };
    this.#waiting.set(id, entry);
    this.#arm(id, entry);
    const message: ToHolder = { kind: 'retry', id, from: this.options.replica, ...retry };
    this.options.store.publish(retriesOf(to), JSON.stringify(message)).then(
      (listeners) => {
        if (listeners === 0) this.#lose(id, 'it is gone (no replica of that name is listening)');
      },
      (error: unknown) =>
        this.#lose(id, `the store could not carry the retry to it (${(error as Error).message})`),
    );
    return {
      cancel: () => {
        const waiting = this.#waiting.get(id);
        if (waiting === undefined) return;
        this.#waiting.delete(id);
        clearTimeout(waiting.timer);
        this.#cancel(id, to);
      },
    };
  }

  fromHolder(message: ToSender): void {
    const entry = this.#waiting.get(message.id);
    if (entry === undefined) return;
    if (message.kind === 'chunk') {
      if (message.head !== undefined) entry.out.head(message.head.status, message.head.headers);
      entry.out.chunk(message.text);
    } else if (message.kind === 'end') {
      this.#waiting.delete(message.id);
      clearTimeout(entry.timer);
      if (message.head !== undefined) entry.out.head(message.head.status, message.head.headers);
      entry.out.end(message.text);
      return;
    }
    // Taken, still at it, or a part of the answer: the holder is alive.
    this.#arm(message.id, entry);
  }

  #lose(id: string, why: string): void {
    const entry = this.#waiting.get(id);
    if (entry === undefined) return;
    this.#waiting.delete(id);
    clearTimeout(entry.timer);
    entry.out.lost(why);
  }

  /** Tells the holder its retry is no longer waited for: the call it would continue is cancelled. */
  #cancel(id: string, to: string): void {
    const message: ToHolder = { kind: 'cancel', id };
    this.options.store.publish(retriesOf(to), JSON.stringify(message)).catch(() => {});
  }

  /**
   * Gives the holder another `timeoutMs` to say something. A holder silent that long (stopped,
   * or cut off from the store) is told to drop the retry, should it wake: the host has been told
   * the call was lost.
   */
  #arm(id: string, entry: SentOn): void {
    const { timeoutMs } = this.options;
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      this.#lose(id, `it did not answer within ${timeoutMs} ms`);
      this.#cancel(id, entry.to);
    }, timeoutMs);
    entry.timer.unref();
  }
}

/** The retries other replicas sent on to this one, which holds their calls, being served. */
class HeldRetries {
  readonly #serving = new Map<string, RelayedReply>();

  constructor(private readonly options: RelayOptions) {}

  take(message: ToHolder, serve: (retry: RelayedRetry, reply: Reply) => void): void {
    if (message.kind === 'cancel') {
      this.#serving.get(message.id)?.destroy();
      return;
    }
    const { store, timeoutMs, logger } = this.options;
    const { id, from } = message;
    if (this.#serving.size >= MAX_SERVING) {
      logger.warn(
        `a host's retry sent on from replica ${from} is not served: ${MAX_SERVING} are being served already; that replica tells its host the call was lost`,
      );
      return;
    }
    const reply = new RelayedReply((back) => {
      store.publish(answersOf(from), JSON.stringify({ ...back, id })).then(
        // Nobody listens: the replica the host waits on is gone, and the host with it.
        (listeners) => {
          if (listeners === 0) reply.destroy();
        },
        () => reply.destroy(),
      );
    });
    this.#serving.set(id, reply);
    const alive = setInterval(() => reply.send({ kind: 'alive' }), Math.max(1, Math.floor(timeoutMs / 3)));
    alive.unref();
    reply.once('close', () => {
      clearInterval(alive);
      this.#serving.delete(id);
    });
    reply.send({ kind: 'taken' });
    // Served on the next turn: a cancel that came with it (its sender gave up while this replica
    // was not listening) is seen first, and the retry is then not served at all.
    setImmediate(() => {
      if (!reply.destroyed)
        serve(
          {
            from,
            principal: message.principal,
            body: message.body,
            headers: message.headers,
            ...(message.stream === true && { stream: true as const }),
          },
          reply,
        );
    });
  }
}

/** A message from the store with an id, or undefined. */
function parsed(text: string): { readonly id: string } | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    return typeof (value as { id?: unknown }).id === 'string' ? (value as { id: string }) : undefined;
  } catch {
    return undefined;
  }
}

function isRetryMessage(message: ToHolder): boolean {
  if (message.kind === 'cancel') return true;
  return (
    message.kind === 'retry' &&
    typeof message.from === 'string' &&
    typeof message.principal === 'string' &&
    typeof message.headers === 'object' &&
    message.headers !== null
  );
}

/**
 * The reply to a retry sent on from another replica: what the stateless dispatcher writes on it
 * goes back to that replica, which writes it on the host's response. Closes when it ends, when
 * that replica cancels (its host went away), or when that replica is gone.
 */
class RelayedReply extends EventEmitter implements Reply {
  writableEnded = false;
  destroyed = false;
  private head: Head | undefined;

  constructor(private readonly publish: (message: Back) => void) {
    super();
  }

  send(message: Back): void {
    if (!this.writableEnded && !this.destroyed) this.publish(message);
  }

  writeHead(status: number, headers: OutgoingHttpHeaders = {}): this {
    this.head = { status, headers };
    return this;
  }

  write(text: string): boolean {
    this.send({ kind: 'chunk', ...this.takeHead(), text });
    return true;
  }

  end(text?: string): this {
    if (this.writableEnded || this.destroyed) return this;
    this.send({ kind: 'end', ...this.takeHead(), ...(text !== undefined && { text }) });
    this.writableEnded = true;
    this.closeSoon();
    return this;
  }

  destroy(): void {
    if (this.writableEnded || this.destroyed) return;
    this.destroyed = true;
    this.closeSoon();
  }

  /** The head, once: it goes with the first write. */
  private takeHead(): { head?: Head } {
    const head = this.head;
    this.head = undefined;
    return head === undefined ? {} : { head };
  }

  /** As a ServerResponse does, 'close' comes after the call that ended it has returned. */
  private closeSoon(): void {
    queueMicrotask(() => this.emit('close'));
  }
}
