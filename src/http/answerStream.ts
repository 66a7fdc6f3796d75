import { RpcErrorCode } from '../core/protocol/jsonRpc.js';
import { eventIdOf, type StreamPosition } from './resumableCalls.js';
import { CallLog } from './callLog.js';
import type { Reply } from './retryRelay.js';
import { Sweeper } from './sweeper.js';

/**
 * What the answer streams of a session share: how long one may stay quiet before a keep-alive
 * comment is due, and the listener's timer that finds the streams due one (see `quietStreams`).
 */
export interface KeepAlive {
  readonly quietMs: number;
  readonly streams: Sweeper<AnswerStream>;
}

/**
 * Where one request is answered: an SSE stream whose headers are those the SDK's transport
 * sends, held until the first message, so that a lone answer goes out in one write with its
 * length as a plain JSON body (and a rate-limit refusal with nothing before it as a 429).
 */
export class AnswerStream {
  private started = false;
  /** When the stream was opened or last written to: a keep-alive is due `quietMs` after. */
  private lastWriteAt = Date.now();
  /** With ids: the call's events, numbered and kept across its streams (see CallLog). */
  readonly log: CallLog | undefined;

  constructor(
    private readonly res: Reply,
    private readonly sessionId: string,
    private readonly keepAlive: KeepAlive,
    /** With these, each event carries an id a host can resume the stream from (on any replica). */
    private readonly ids?: Omit<StreamPosition, 'position'>,
    /** The log of the call's earlier stream, which this one continues. */
    log?: CallLog,
  ) {
    this.log = ids === undefined ? undefined : (log ?? new CallLog());
    keepAlive.streams.add(this);
  }

  /** Writes an SSE comment when the stream has been quiet for `quietMs` (see `quietStreams`). */
  keepAliveDue(now: number): void {
    if (!this.open) return this.stop();
    if (now - this.lastWriteAt < this.keepAlive.quietMs) return;
    this.lastWriteAt = now;
    this.start();
    this.res.write(': keepalive\n\n');
  }

  /** A notification or request about this stream's request. */
  event(text: string): void {
    // Kept even when the host's stream is gone, for the stream it resumes.
    if (!this.open && this.log === undefined) return;
    if (this.open) this.start();
    const framed = this.log === undefined ? frame(text) : this.numbered(text);
    if (!this.open) return;
    this.lastWriteAt = Date.now();
    this.res.write(framed);
  }

  /** `text` framed with the id of the call's next event, and kept in its log. */
  private numbered(text: string): string {
    const position = this.log!.position();
    const framed = this.idLine(position) + frame(text);
    this.log!.keep(position, framed);
    return framed;
  }

  /**
   * Starts a resumed stream with the events the host missed (`events`, framed), and its answer
   * when the call has ended meanwhile.
   */
  replay(events: readonly string[]): void {
    if (!this.open) return;
    this.start();
    this.lastWriteAt = Date.now();
    for (const event of events) this.res.write(event);
    const ended = this.log?.ended;
    if (ended !== undefined) {
      this.stop();
      this.res.end(ended);
    }
  }

  /** Starts the stream now (a resumed one: the host is waiting for it), with its priming event. */
  prime(): void {
    if (this.open) this.start();
  }

  /** The `id:` line of the event at `position`, when events carry ids. */
  private idLine(position: number | 'end'): string {
    return this.ids === undefined ? '' : `id: ${eventIdOf({ ...this.ids, position })}\n`;
  }

  /** The request's answer: the stream's last message. */
  answer(text: string, retryAfterSeconds?: number): void {
    this.stop();
    if (this.log !== undefined) this.log.ended = this.idLine('end') + frame(text);
    if (!this.open) return;
    if (this.started) {
      this.res.end(this.idLine('end') + frame(text));
      return;
    }
    // Nothing was sent before the answer: it goes as one JSON body, which the host's Accept
    // allows (it names both) and the revision offers a server for a request's one answer. Three
    // headers and no event framing, where a stream would have said the same at more cost to
    // both ends; a stream that has begun stays a stream.
    this.res.writeHead(retryAfterSeconds === undefined ? 200 : 429, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      ...(retryAfterSeconds !== undefined && { 'Retry-After': String(retryAfterSeconds) }),
      'mcp-session-id': this.sessionId,
    });
    this.res.end(text);
  }

  /** Ends the stream without an answer (the session ended). */
  end(): void {
    this.stop();
    if (!this.open) return;
    if (!this.started) this.res.writeHead(200, this.headers());
    this.res.end();
  }

  stop(): void {
    this.keepAlive.streams.delete(this);
  }

  /** Whether its response is still open to write on (the host is reading it). */
  get writing(): boolean {
    return this.open;
  }

  private get open(): boolean {
    return !this.res.writableEnded && !this.res.destroyed;
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, this.headers());
    // The priming event: an id and no data, so the host can resume the stream should it break
    // before anything else is sent (the 2025-11-25 revision's advice to servers).
    if (this.log !== undefined) this.res.write(`${this.idLine(this.log.position())}data: \n\n`);
  }

  private headers(): Record<string, string> {
    return {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
      'mcp-session-id': this.sessionId,
    };
  }
}

/**
 * A listener's answer streams not ended yet, looked at each second for one quiet long enough to
 * be due a keep-alive comment, so that proxies and clients keep it open (one timer for all of
 * them: most streams end with their answer within milliseconds). The listener stops it when it
 * closes.
 */
export function quietStreams(): Sweeper<AnswerStream> {
  return new Sweeper<AnswerStream>(1000, (stream, now) => stream.keepAliveDue(now));
}

function frame(text: string): string {
  return `event: message\ndata: ${text}\n\n`;
}

/** The last event of a resumed stream: a JSON-RPC error for its request, saying `message`. */
export function errorEvent(stream: StreamPosition, message: string): string {
  const text = JSON.stringify({
    jsonrpc: '2.0',
    id: stream.requestId,
    error: { code: RpcErrorCode.InternalError, message },
  });
  return `id: ${eventIdOf({ ...stream, position: 'end' })}\n${frame(text)}`;
}

/** The headers of a stream this module writes on its own. */
export const streamHeaders = (sessionId: string): Record<string, string> => ({
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
  'mcp-session-id': sessionId,
});

/**
 * Answers a GET that resumed the stream of request `id` with a JSON-RPC error for that request,
 * the stream's last event (a host that reconnects from it gets 204: the stream is over).
 */
export function endWithError(res: Reply, sessionId: string, stream: StreamPosition, message: string): void {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(200, streamHeaders(sessionId));
  res.end(errorEvent(stream, message));
}
