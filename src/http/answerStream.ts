import type { ServerResponse } from 'node:http';
import { RpcErrorCode } from '../core/protocol/jsonRpc.js';
import { eventIdOf, type StreamPosition } from './resumableCalls.js';
import { Sweeper } from './sweeper.js';

/**
 * Where one request is answered: an SSE stream whose headers are those the SDK's transport
 * sends, held until the first message, so that a lone answer goes out in one write with its
 * length as a plain JSON body (and a rate-limit refusal with nothing before it as a 429).
 */
export class AnswerStream {
  private started = false;
  /** The position of the next event, when events carry ids. */
  private position = 0;
  /** When the stream was opened or last written to: a keep-alive is due keepAliveMs after. */
  private lastWriteAt = Date.now();

  constructor(
    private readonly res: ServerResponse,
    private readonly sessionId: string,
    private readonly keepAliveMs: number,
    /** With these, each event carries an id a host can resume the stream from (on any replica). */
    private readonly ids?: Omit<StreamPosition, 'position'>,
  ) {
    quietStreams.add(this);
  }

  /** Writes an SSE comment when the stream has been quiet for keepAliveMs (see `quietStreams`). */
  keepAliveDue(now: number): void {
    if (!this.open) return this.stop();
    if (now - this.lastWriteAt < this.keepAliveMs) return;
    this.lastWriteAt = now;
    this.start();
    this.res.write(': keepalive\n\n');
  }

  /** A notification or request about this stream's request. */
  event(text: string): void {
    if (!this.open) return;
    this.start();
    this.lastWriteAt = Date.now();
    this.res.write(this.idLine(this.position++) + frame(text));
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
    quietStreams.delete(this);
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
    if (this.ids !== undefined) this.res.write(`${this.idLine(this.position++)}data: \n\n`);
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
 * The answer streams not ended yet, looked at each second for one quiet long enough to be due
 * a keep-alive comment, so that proxies and clients keep it open (one timer for all of them:
 * most streams end with their answer within milliseconds).
 */
const quietStreams = new Sweeper<AnswerStream>(1000, (stream, now) => stream.keepAliveDue(now));

function frame(text: string): string {
  return `event: message\ndata: ${text}\n\n`;
}

/**
 * Answers a GET that resumed the stream of request `id` with a JSON-RPC error for that request,
 * the stream's last event (a host that reconnects from it gets 204: the stream is over).
 */
export function endWithError(
  res: ServerResponse,
  sessionId: string,
  stream: StreamPosition,
  message: string,
): void {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify({
    jsonrpc: '2.0',
    id: stream.requestId,
    error: { code: RpcErrorCode.InternalError, message },
  });
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache, no-transform',
    'X-Accel-Buffering': 'no',
    'mcp-session-id': sessionId,
  });
  res.end(`id: ${eventIdOf({ ...stream, position: 'end' })}\n${frame(text)}`);
}
