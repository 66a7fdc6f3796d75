/*
 * Longer than most modules on purpose: it is the one place that keeps a connection's request
 * tables, both directions, so ids, cancellation, progress and the one response per request cannot
 * drift apart.
 */
import type { ByteParts } from '../../lib/byteParts.js';
import { describeError } from '../../lib/describeError.js';
import { Deferred } from '../../lib/deferred.js';
import { SENT, type MessageExtra, type MessageTransport } from './transport.js';
import { Cancellation, type CancelListener, type CancelSignal } from './cancellation.js';
import { DeadlineQueue, type DeadlineEntry } from './deadlines.js';
import { EncodedResult } from './encoded.js';
import {
  idKey,
  isNotification,
  isRequest,
  isResponse,
  OwnQuestion,
  OwnRequest,
  truncateForEcho,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type Params,
  type RequestId,
} from '../protocol/jsonRpc.js';
import {
  retagProgress,
  splitProgressToken,
  withProgressToken,
  withProgressTokenIn,
  type ProgressListener,
  type ProgressToken,
} from './progress.js';
import { Outcome } from './outcome.js';
import { takePostedFor } from '../protocol/postedFor.js';
import { createdTaskId, taskIdIn, TaskProgress } from './taskProgress.js';
import { RawResponse, type RawResult } from './rawResult.js';
import { RequestTable } from './requestTable.js';

/**
 * One JSON-RPC conversation: the host's connection, or one upstream connection. It owns both
 * request tables of that connection, and is the only module that keeps one:
 * - outgoing: our own ids (plain integers, so they never collide with another connection's),
 *   progress asked for under our id and routed back to its request, cancellation sent to the
 *   other side as `notifications/cancelled`, late answers dropped, and deadlines;
 * - incoming: the other side's ids, each request's cancellation (the other side's
 *   `notifications/cancelled`), and a response sent exactly once.
 */

export interface OutgoingOptions {
  /** Cancelling sends the other side `notifications/cancelled` and drops any late answer. */
  readonly signal?: CancelSignal;
  /** When given, progress is asked for under our own token and delivered here. */
  readonly onProgress?: ProgressListener;
  /** No answer within this long fails the request with `deadlineError()` (and cancels it). */
  readonly deadlineMs?: number;
  readonly deadlineError?: () => Error;
  /** Told the request's id once it is sent (a long-lived request whose notifications name it). */
  readonly onSent?: (id: number) => void;
  /**
   * Applied to a `requestOutcome` answer as it arrives, before anyone awaiting it sees it: what
   * the caller would otherwise do in a promise step of its own on every request.
   */
  readonly answerAs?: ((outcome: Outcome) => Outcome) | undefined;
  /**
   * Whose request this is (the host session a routed message belongs to): a request the other
   * side makes on this one's answer stream is tied to it (see `IncomingRequest.postedFor`).
   */
  readonly host?: object | undefined;
  /** The gateway asks this for itself (see `OwnQuestion`), rather than passing it on. */
  readonly ownQuestion?: boolean;
}

/** How this connection's failures read: each side names itself its own way. */
export interface PeerErrors {
  /** The other side answered one of our requests with a JSON-RPC error. */
  remote(error: JsonRpcErrorObject): Error;
  /** A request could not be sent, or the connection closed under it. */
  failed(detail: string, cause?: unknown): Error;
  /** The other side cancelled one of its own requests. */
  cancelled(reason: string): Error;
  /**
   * The other side answered `method` with a result that is not an object (`what`: "a null",
   * "an array", ...); every MCP result is one. Default: `failed`, saying so.
   */
  malformed?(method: string, what: string): Error;
}

export interface PeerOptions {
  readonly transport: MessageTransport;
  readonly errors: PeerErrors;
  /** A request from the other side; answer it through `request.respond` or `request.fail`, once. */
  readonly onRequest: (request: IncomingRequest) => void;
  /** Notifications other than progress for our requests and cancellation of its own. */
  readonly onNotification: (notification: JsonRpcNotification) => void;
  /**
   * Whether an answer that follows progress waits until the other side confirms it has handled
   * that progress (it answers a `ping` sent after it), rather than only being written after it.
   * For a host that reads a byte stream: hosts built on the TypeScript SDK handle a notification
   * a microtask after a response that arrived in the same read, and drop progress for a request
   * already answered, so order on the wire alone does not bring the last progress home. Asked at
   * each answer; false (the default) for a side that cannot be pinged now.
   */
  readonly confirmsProgress?: () => boolean;
}

/**
 * How long an answer waits for the other side to confirm its progress. A side that lets one
 * such ping go unanswered this long is not asked again (see `RpcPeer.afterProgress`), so it
 * delays one answer by this much, once per connection.
 */
export const PROGRESS_CONFIRM_MS = 2_000;

/** One `ping` in flight that confirms progress up to `seq`, and the answers waiting on it. */
interface ProgressBarrier {
  readonly seq: number;
  readonly waiting: (() => void)[];
}

/** A request in flight: its promise, progress listener, cancellation and deadline, in one object. */
class Outgoing extends Deferred<unknown> implements CancelListener, DeadlineEntry {
  deadline = 0;
  queued = false;
  prevEntry: DeadlineEntry | undefined;
  nextEntry: DeadlineEntry | undefined;
  /** The deadline queue it waits in, when it has a deadline. */
  deadlines: DeadlineQueue | undefined;

  constructor(
    private readonly peer: RpcPeer,
    readonly id: number,
    readonly method: string,
    readonly onProgress: ProgressListener | undefined,
    readonly signal: CancelSignal | undefined,
    readonly deadlineError: (() => Error) | undefined,
    /** Resolve with an `Outcome` (the answer with its bytes), not the bare result. */
    readonly asOutcome: boolean,
    /** The task whose kept progress its answer ends (`tasks/result`, `tasks/cancel`). */
    readonly endsTask: string | undefined,
    readonly answerAs: ((outcome: Outcome) => Outcome) | undefined,
    readonly host: object | undefined,
  ) {
    super();
  }

  onCancelled(reason: Error): void {
    this.peer.abandon(this, reason);
  }

  expired(): void {
    this.peer.abandon(this, this.deadlineError?.() ?? new Error('no answer in time'));
  }
}

const NO_OPTIONS: OutgoingOptions = {};

/** Longest error message sent to the other side; longer ones are cut, saying how long they were. */
const MAX_ERROR_MESSAGE = 2000;

export class RpcPeer {
  private readonly options: PeerOptions;
  private readonly outgoing = new RequestTable<Outgoing>();
  private readonly incoming = new RequestTable<IncomingRequest>();
  /** One queue per deadline duration, so deadlines of equal length expire in order (deadlines.ts). */
  private readonly deadlines = new Map<number, DeadlineQueue>();
  /** Progress of our requests that the other side answered with a task still running. */
  private readonly taskProgress = new TaskProgress();
  private nextId = 1;
  private closedWith: Error | null = null;
  /**
   * Counts turns of the event loop in which this peer sent progress, so an answer can tell that
   * its request's last progress went out in this same turn (see IncomingRequest.respond).
   */
  private progressTurn = 0;
  private turnEnding = false;
  /** Progress notifications sent so far; each request notes the count at its last one. */
  private progressCount = 0;
  /** The newest ping confirming progress, while it is in flight. */
  private barrier: ProgressBarrier | undefined;
  /**
   * Set once a ping confirming progress went unanswered for PROGRESS_CONFIRM_MS. Some hosts
   * never answer a server's ping; waiting on each would put that delay on every answer after
   * progress for the rest of the connection, so such a host is never waited on again.
   */
  private pingsUnanswered = false;
  private idleWaiters: (() => void)[] = [];

  constructor(options: PeerOptions) {
    this.options = options;
    options.transport.onmessage = (message, extra) => {
      if (isResponse(message)) this.answered(message, extra);
      else if (isRequest(message)) this.received(message, extra);
      else if (isNotification(message)) this.notified(message);
    };
  }

  get transport(): MessageTransport {
    return this.options.transport;
  }

  /** Our requests awaiting an answer, for diagnostics and tests. */
  get inFlight(): number {
    return this.outgoing.size;
  }

  /**
   * How many of our requests in flight have one of these methods. Walks them all, so it is for
   * rare questions (whose call a server's own request belongs to), not for every message.
   */
  requestsInFlight(methods: ReadonlySet<string>): number {
    let count = 0;
    for (const entry of this.outgoing.entries()) if (methods.has(entry.method)) count++;
    return count;
  }

  /** Requests of ours answered with a task whose progress is still passed on. */
  get tasksWithProgress(): number {
    return this.taskProgress.size;
  }

  /** The other side's requests not yet answered. */
  get unanswered(): number {
    return this.incoming.size;
  }

  // -------------------------------------------------------------------------------------------
  // Outgoing

  /** Sends a request; resolves with the other side's result. */
  request(
    method: string,
    params: Params | undefined,
    options: OutgoingOptions = NO_OPTIONS,
  ): Promise<Record<string, unknown>> {
    return this.send(method, params, options, false) as Promise<Record<string, unknown>>;
  }

  /**
   * Sends a request that the gateway routes: resolves with an `Outcome`, which holds the result
   * and, while no stage changes it, the text it arrived as (the host then gets those bytes).
   * `params` must be an object made for this request alone (the pipeline's terminal builds one
   * per request): the progress token is written into it, rather than into a copy of it.
   */
  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> {
    return this.send(method, params, options, true) as Promise<Outcome>;
  }

  private send(
    method: string,
    params: Params | undefined,
    options: OutgoingOptions,
    asOutcome: boolean,
  ): Promise<unknown> {
    if (this.closedWith !== null) return Promise.reject(this.closedWith);
    const { signal, onProgress, deadlineMs } = options;
    if (signal?.cancelled) return Promise.reject(signal.reason!);
    const id = this.nextId++;
    // Our id doubles as the progress token: unique on this connection and already in the table.
    // A routed request's params are its own (see requestOutcome): no copy of them is made.
    const sent =
      onProgress === undefined
        ? params
        : asOutcome
          ? withProgressTokenIn(params, id)
          : withProgressToken(params, id);
    const endsTask = method === 'tasks/result' || method === 'tasks/cancel' ? taskIdIn(params) : undefined;
    const entry = new Outgoing(
      this,
      id,
      method,
      onProgress,
      signal,
      options.deadlineError,
      asOutcome,
      endsTask,
      options.answerAs,
      options.host,
    );
    this.outgoing.set(id, entry);
    signal?.listen(entry);
    if (deadlineMs !== undefined) {
      entry.deadlines = this.queueFor(deadlineMs);
      entry.deadlines.schedule(entry, performance.now() + deadlineMs);
    }
    options.onSent?.(id);
    const message =
      options.ownQuestion === true ? new OwnQuestion(id, method, sent) : new OwnRequest(id, method, sent);
    try {
      const sending = this.options.transport.send(message);
      // A transport whose sends cannot fail spares every request a promise and a closure.
      if (sending !== SENT) this.watchSend(sending, entry, method);
    } catch (error) {
      this.sendFailed(entry, method, error);
    }
    return entry.promise;
  }

  notify(method: string, params?: Params): void {
    if (this.closedWith !== null) return;
    const message: JsonRpcNotification =
      params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
    this.sendQuietly(message);
  }

  /** A request of ours was cancelled or ran out of time: tell the other side, fail it with `reason`. */
  abandon(entry: Outgoing, reason: Error): void {
    if (!this.settle(entry.id)) return;
    // The spec forbids cancelling `initialize`; the connection is given up instead.
    if (entry.method !== 'initialize')
      this.notify('notifications/cancelled', { requestId: entry.id, reason: reason.message });
    entry.reject(reason);
  }

  /**
   * An answer too large to read arrived. When its id can be told from the edges of the line,
   * only that request fails; the caller restarts the connection otherwise.
   */
  failById(id: number, error: Error): boolean {
    const entry = this.outgoing.get(id);
    if (entry === undefined) return false;
    this.settle(id);
    entry.reject(error);
    return true;
  }

  /** Fails every request of ours in flight; the connection stays open (answers can still go out). */
  failOutgoing(reason: Error | (() => Error)): void {
    // Made only when something is in flight: an error's stack trace is not free, and a
    // connection usually closes with nothing outstanding.
    let error: Error | undefined;
    for (const entry of this.outgoing.entries()) {
      error ??= typeof reason === 'function' ? reason() : reason;
      this.settle(entry.id);
      entry.reject(error);
    }
  }

  /** The connection is gone: every request of ours in flight fails with `error`, and any later one. */
  close(error: Error): void {
    if (this.closedWith !== null) return;
    this.closedWith = error;
    this.failOutgoing(error);
  }

  private answered(message: JsonRpcResponse, extra?: MessageExtra): void {
    const id = message.id;
    const entry = typeof id === 'number' ? this.outgoing.get(id) : undefined;
    // Unknown ids are late answers to requests we already gave up on: drop them.
    if (entry === undefined || typeof id !== 'number') return;
    this.settle(id);
    this.taskProgress.release(entry.endsTask);
    if ('error' in message) {
      entry.reject(this.options.errors.remote(message.error));
      return;
    }
    const { result } = message as { result: unknown };
    if (typeof result !== 'object' || result === null || Array.isArray(result)) {
      // Every MCP result is an object; anything else would fail later with no one named.
      const what = result === null ? 'a null' : Array.isArray(result) ? 'an array' : `a ${typeof result}`;
      const { errors } = this.options;
      entry.reject(
        errors.malformed?.(entry.method, what) ??
          errors.failed(`answered ${entry.method} with ${what} result, not an object`),
      );
      return;
    }
    if (entry.onProgress !== undefined) {
      const taskId = createdTaskId(result as Params);
      if (taskId !== undefined) this.taskProgress.keep(id, taskId, entry.onProgress);
    }
    if (!entry.asOutcome) {
      entry.resolve(result);
      return;
    }
    // The outcome carries the line itself: nothing is written onto the parsed result.
    const outcome = Outcome.fromPeer(
      result as Record<string, unknown>,
      extra?.line === undefined ? undefined : new RawResponse(extra.line, extra.large, message),
    );
    entry.resolve(entry.answerAs === undefined ? outcome : entry.answerAs(outcome));
  }

  /**
   * Fails `entry` if its send fails. Apart from `send`, so that the closure (and the variables
   * it holds) is made only for a transport whose sends can fail, not on every request.
   */
  private watchSend(sending: Promise<void>, entry: Outgoing, method: string): void {
    sending.catch((error: unknown) => this.sendFailed(entry, method, error));
  }

  private sendFailed(entry: Outgoing, method: string, error: unknown): void {
    if (!this.settle(entry.id)) return;
    entry.reject(this.options.errors.failed(`cannot send ${method}: ${describeError(error)}`, error));
  }

  /** Takes a request of ours out of the table; false when it was not there (already settled). */
  private settle(id: number): boolean {
    const entry = this.outgoing.get(id);
    if (entry === undefined) return false;
    this.outgoing.delete(id);
    entry.signal?.unlisten(entry);
    entry.deadlines?.remove(entry);
    return true;
  }

  private queueFor(ms: number): DeadlineQueue {
    let queue = this.deadlines.get(ms);
    if (queue === undefined) this.deadlines.set(ms, (queue = new DeadlineQueue()));
    return queue;
  }

  // -------------------------------------------------------------------------------------------
  // Incoming

  private received(message: JsonRpcRequest, extra: MessageExtra | undefined): void {
    // The mark is the transport's, never the other side's to set, and reaches no one further.
    const posted = takePostedFor(message);
    const owner =
      posted !== undefined &&
      this.options.transport.tiesRequestsToPosts === true &&
      typeof posted.id === 'number'
        ? this.outgoing.get(posted.id)?.host
        : undefined;
    const request = new IncomingRequest(this, posted?.request ?? message, extra, owner);
    this.incoming.set(request.key, request);
    this.options.onRequest(request);
  }

  private notified(message: JsonRpcNotification): void {
    const { method, params } = message;
    // Progress and cancellation concern this connection's own requests: they end here. Progress
    // for a request no longer in flight, and a cancel for one already answered, are dropped, as
    // the spec says to.
    if (method === 'notifications/progress') {
      const token = params?.progressToken;
      const entry = typeof token === 'number' ? this.outgoing.get(token) : undefined;
      (entry?.onProgress ?? this.taskProgress.listener(token))?.(params!);
      return;
    }
    if (method === 'notifications/tasks/status') this.taskProgress.status(params);
    if (method === 'notifications/cancelled') {
      const requestId = params?.requestId;
      const request =
        typeof requestId === 'string' || typeof requestId === 'number'
          ? this.incoming.get(idKey(requestId))
          : undefined;
      // An answer waiting to be written (see IncomingRequest.send) is past cancelling.
      if (request === undefined || request.answered) return;
      const reason = typeof params?.reason === 'string' ? params.reason : 'no reason given';
      request.cancelledByPeer = true;
      request.cancel(this.options.errors.cancelled(reason));
      request.shape?.settled();
      return;
    }
    this.options.onNotification(message);
  }

  /** Sends a response to one of the other side's requests (IncomingRequest calls this, once). */
  finished(request: IncomingRequest): void {
    if (this.incoming.get(request.key) === request) this.incoming.delete(request.key);
    if (this.incoming.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Notes progress sent now; returns the turn it belongs to and its place in the count. */
  progressSent(): { turn: number; seq: number } {
    this.progressCount++;
    if (!this.turnEnding) {
      this.turnEnding = true;
      process.nextTick(() => {
        this.turnEnding = false;
        this.progressTurn++;
      });
    }
    return { turn: this.progressTurn, seq: this.progressCount };
  }

  /**
   * Writes an answer that follows progress: at once when the other side is not asked to confirm
   * (see `PeerOptions.confirmsProgress`), else once a `ping` sent after progress number `seq`
   * is answered, or fails, or PROGRESS_CONFIRM_MS pass (after which this side is not asked
   * again). The other side handles its messages in
   * the order they came, so by the time it answers the ping it has handled the progress. Answers
   * waiting at once share one ping; answers with no progress before them never wait.
   */
  afterProgress(seq: number, write: () => void): boolean {
    if (this.closedWith !== null || this.pingsUnanswered || this.options.confirmsProgress?.() !== true)
      return false;
    const current = this.barrier;
    if (current !== undefined && current.seq >= seq) {
      current.waiting.push(write);
      return true;
    }
    const barrier: ProgressBarrier = { seq: this.progressCount, waiting: [write] };
    this.barrier = barrier;
    const release = (): void => {
      if (this.barrier === barrier) this.barrier = undefined;
      for (const waiting of barrier.waiting) waiting();
    };
    const unanswered = new Error('no answer to ping');
    this.request('ping', undefined, {
      deadlineMs: PROGRESS_CONFIRM_MS,
      deadlineError: () => unanswered,
    }).then(release, (error: unknown) => {
      // A refusal (method not found) still confirms: the host read everything before it.
      if (error === unanswered) this.pingsUnanswered = true;
      release();
    });
    return true;
  }

  /** Whether progress sent in `turn` is still waiting to be written with this turn's messages. */
  isCurrentTurn(turn: number): boolean {
    return this.turnEnding && turn === this.progressTurn;
  }

  /** Resolves once every request of the other side received so far has been answered. */
  idle(): Promise<void> {
    if (this.incoming.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  sendQuietly(message: Parameters<MessageTransport['send']>[0]): void {
    const sending = this.options.transport.send(message);
    if (sending !== SENT) sending.catch(() => {});
  }
}

/**
 * How the answers to one request are put for the protocol revision it was made in (the
 * stateless revision adds fields to every result); set by whoever admits the request.
 */
export interface AnswerShape {
  /** The result as it goes out. */
  result(result: Record<string, unknown>): Record<string, unknown>;
  /**
   * The same for a result still held as text (and bytes, when large); undefined when the text
   * cannot be reshaped as text, and `result` is used instead. `parsed` is the result's value,
   * when there is one.
   */
  text(raw: RawResult, parsed: object | undefined): RawResult | undefined;
  error(error: JsonRpcErrorObject): JsonRpcErrorObject;
  /** The request is done: answered, failed or cancelled. */
  settled(): void;
}

/**
 * A request the other side made: its id, its cancellation (it is its own signal), its progress
 * token, and the one response it gets. The spec says a cancelled request gets no response, so
 * once the other side cancels, `respond` and `fail` send nothing.
 */
export class IncomingRequest extends Cancellation {
  readonly key: string | number;
  readonly id: RequestId;
  readonly method: string;
  readonly params: Params | undefined;
  /** The token the other side asked progress under; undefined when it did not. */
  readonly progressToken: ProgressToken | undefined;
  /** The request's `_meta` without its progress token. */
  readonly meta: Params | undefined;
  /**
   * The owner (`OutgoingOptions.host`) of our request on whose answer stream this one came, when
   * the transport can tell (HTTP); the call this request is part of.
   */
  readonly postedFor: object | undefined;
  /** The other side cancelled it. */
  cancelledByPeer = false;
  /** Answered: later progress is not sent, and a second answer is a bug that is dropped. */
  answered = false;
  /**
   * Set when the transport would not deliver the request whole (its params nest too deep): it
   * comes without them, and is to be answered with this error.
   */
  readonly refused: JsonRpcErrorObject | undefined;
  /**
   * The replica that took the call over from one that died and runs it again here, as the
   * transport said (see `MessageExtra.takenOverBy`); undefined for every request the host sent.
   */
  readonly takenOverBy: string | undefined;
  /** Set when the request's answers are put another way (see AnswerShape). */
  shape: AnswerShape | undefined = undefined;
  /**
   * Called once its answer (a result or an error) has been handed to the transport; not when the
   * other side cancelled it, since then nothing is sent. Set by whoever waits for that moment.
   */
  afterAnswer: (() => void) | undefined = undefined;
  private progressListener: ProgressListener | undefined;
  /** The turn this request's last progress was sent in; -1 before any. */
  private progressTurn = -1;
  /** Where this request's last progress stands in the peer's count; 0 before any. */
  private progressSeq = 0;
  /**
   * Answered with a task: its progress goes on after the answer, for as long as the side that
   * runs the task reports it (the spec keeps the token valid for the task's life).
   */
  private answeredWithTask = false;

  constructor(
    private readonly peer: RpcPeer,
    message: JsonRpcRequest,
    extra?: MessageExtra,
    postedFor?: object,
  ) {
    super();
    this.refused = extra?.refused;
    this.takenOverBy = extra?.takenOverBy;
    this.postedFor = postedFor;
    this.id = message.id;
    this.key = idKey(message.id);
    this.method = message.method;
    this.params = message.params;
    const meta = message.params?._meta as Params | undefined;
    if (meta?.progressToken === undefined) {
      // No token (every request of a host that asks no progress, a modern host's envelope
      // included): the meta as it came, with nothing split off and nothing allocated.
      this.progressToken = undefined;
      this.meta = meta;
    } else {
      const { token, rest } = splitProgressToken(meta);
      this.progressToken = token;
      this.meta = rest;
    }
  }

  /**
   * Progress for this request, sent to the other side under its own token; nothing when it asked
   * for none, or once the request is answered (the spec ties progress to the request's life),
   * unless it was answered with a task (then to the task's life, which the other side tracks).
   */
  get onProgress(): ProgressListener | undefined {
    const token = this.progressToken;
    if (token === undefined) return undefined;
    return (this.progressListener ??= (params) => {
      if (this.answered && !this.answeredWithTask) return;
      this.peer.notify('notifications/progress', retagProgress(params, token));
      ({ turn: this.progressTurn, seq: this.progressSeq } = this.peer.progressSent());
    });
  }

  /**
   * Answers with an outcome's result. While the outcome holds the text the result arrived as (no
   * stage changed it), it goes out as that text, or those bytes for a large one: the one place
   * the gateway decides to write bytes rather than a value.
   */
  respond(outcome: Outcome): void {
    if (!this.finish()) return;
    this.answeredWithTask = createdTaskId(outcome.result) !== undefined;
    const result = outcome.result as Record<string, unknown>;
    const shape = this.shape;
    let raw = outcome.raw;
    if (shape !== undefined && raw !== undefined) raw = shape.text(raw, result);
    const message =
      raw !== undefined
        ? new EncodedResult(this.id, raw, result, shape)
        : {
            jsonrpc: '2.0' as const,
            id: this.id,
            result: shape === undefined ? result : shape.result(result),
          };
    this.send(message);
  }

  /** Answers with a result that is already JSON text (a merged list, encoded once per change). */
  respondEncoded(text: string, bytes: ByteParts | undefined): void {
    if (!this.finish()) return;
    const encoded = { text, bytes };
    const shaped = this.shape?.text(encoded, undefined) ?? encoded;
    this.send(new EncodedResult(this.id, shaped, () => JSON.parse(shaped.text) as Record<string, unknown>));
  }

  fail(error: JsonRpcErrorObject): void {
    if (!this.finish()) return;
    // Messages echo what a peer sent (a method, a name): never megabytes of it.
    const message = truncateForEcho(error.message, MAX_ERROR_MESSAGE);
    const shaped = this.shape === undefined ? error : this.shape.error(error);
    this.send({ jsonrpc: '2.0', id: this.id, error: { ...shaped, message } });
  }

  /**
   * Writes the answer after this request's progress. Where the other side confirms progress,
   * the answer waits for that; elsewhere, progress sent in this turn leaves in this turn's write,
   * and the answer waits for the next turn, in a write of its own. The request counts as
   * unanswered until the answer is written, so draining waits for it.
   */
  private send(message: Parameters<RpcPeer['sendQuietly']>[0]): void {
    if (this.progressSeq === 0) {
      // No progress went before it (most answers): written now, with no closure made for later.
      this.peer.finished(this);
      this.peer.sendQuietly(message);
      this.afterAnswer?.();
      return;
    }
    const write = (): void => {
      this.peer.finished(this);
      this.peer.sendQuietly(message);
      this.afterAnswer?.();
    };
    if (this.peer.afterProgress(this.progressSeq, write)) return;
    else if (this.peer.isCurrentTurn(this.progressTurn)) setImmediate(write);
    else write();
  }

  /** Marks it answered; false when nothing should be sent (answered already, or cancelled). */
  private finish(): boolean {
    if (this.answered) return false;
    this.answered = true;
    this.shape?.settled();
    if (this.cancelledByPeer) this.peer.finished(this);
    return !this.cancelledByPeer;
  }
}
