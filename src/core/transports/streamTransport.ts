import type { Readable, Writable } from 'node:stream';
import { parseMessage, serializeMessage, type JsonRpcMessage } from '../rpc/jsonRpc.js';
import { parseLargeMessage, type LargeLine } from './largeLine.js';
import { LineDecoder, type OversizeLine } from './lineDecoder.js';

/**
 * The connection interface every part of the router speaks. Same shape as the SDK's
 * `Transport` (start, send, close, onmessage, onclose, onerror) so the SDK's HTTP transports
 * fit behind it, but typed with our lean message types.
 */
export interface MessageTransport {
  start(): Promise<void>;
  send(message: JsonRpcMessage): Promise<void>;
  /**
   * True when `send` never rejects (a failed write surfaces through `onerror` and `onclose`):
   * the hot path then skips handling its promise, a promise and a closure per request.
   */
  readonly sendNeverRejects?: boolean;
  /** Sends text that is already one serialized message (hot path: no re-serialising). */
  sendRaw?(line: string): Promise<void>;
  /**
   * Sends one message made of `head`, `body` and `tail` (no newline): a large result forwarded
   * from the upstream's own bytes, never decoded and encoded again.
   */
  sendBytes?(head: string, body: Buffer, tail: string): Promise<void>;
  close(): Promise<void>;
  /**
   * Called just before messages sent so far are handed to the OS, when the transport batches
   * them (stdio): the gateway writes the audit records of those answers first.
   */
  beforeWrite?: () => void;
  /**
   * `line` is the text the message was parsed from when the transport has it (stdio), for
   * byte-exact forwarding; `large` its bytes when it is large (see LARGE_LINE_BYTES), in which
   * case `line` may have its long strings left out (see LargeLine).
   */
  onmessage?: (message: JsonRpcMessage, line?: string, large?: LargeLine) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
}

export interface StreamTransportOptions {
  readonly input: Readable;
  readonly output: Writable;
  /** Lines longer than this are skipped and reported through `onOversize`. */
  readonly maxLineBytes: number;
  /** A line that is not a JSON-RPC message: logged by the owner, never fatal. */
  readonly onJunk: (line: string, reason: string) => void;
  readonly onOversize: (info: OversizeLine) => void;
}

/** What every send returns: writes are not awaited one by one (see `flush`). */
const DONE = Promise.resolve();

/**
 * Newline-delimited JSON-RPC over a pair of streams: the host's stdin/stdout, or a child's
 * stdout/stdin. One `JSON.parse` per line and no schema parse (ARCHITECTURE "Connections").
 */
export class StreamTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage, line?: string, large?: LargeLine) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Every send returns DONE; a failed write is an `output` error, reported as a close. */
  readonly sendNeverRejects = true;

  private readonly options: StreamTransportOptions;
  /** The peer stopped sending (stdin ended). Answers to what it already asked can still go out. */
  private inputEnded = false;
  /** Nothing more can be written (close() called, or the peer went away: EPIPE). */
  private outputClosed = false;

  constructor(options: StreamTransportOptions) {
    this.options = options;
  }

  async start(): Promise<void> {
    const { input, output, onJunk } = this.options;
    const decoder = new LineDecoder({
      maxLineBytes: this.options.maxLineBytes,
      onOversize: this.options.onOversize,
      onLine: (line) => {
        const parsed = parseMessage(line);
        if (parsed.ok) this.onmessage?.(parsed.message, line);
        else onJunk(line, parsed.reason);
      },
      onLargeLine: (bytes, facts) => {
        const parsed = parseLargeMessage(bytes, facts);
        if (parsed.ok) this.onmessage?.(parsed.message, parsed.large.text, parsed.large);
        else if (parsed.text.trim() !== '') onJunk(parsed.text, parsed.reason);
      },
    });
    input.on('data', (chunk: Buffer) => decoder.push(chunk));
    input.on('end', () => {
      decoder.end();
      this.endInput();
    });
    input.on('close', () => this.endInput());
    input.on('error', (error) => this.onerror?.(error));
    // A peer that goes away makes our writes fail with EPIPE; that is a close, not a crash.
    output.on('error', (error) => {
      this.outputClosed = true;
      this.onerror?.(error);
      this.endInput();
    });
  }

  send(message: JsonRpcMessage): Promise<void> {
    return this.sendRaw(serializeMessage(message));
  }

  sendRaw(line: string): Promise<void> {
    if (this.outputClosed || this.options.output.destroyed) return DONE;
    // Messages sent in one turn (e.g. every answer freed by one chunk from an upstream) leave as
    // one string in one write: nextTick runs once the promise continuations of this turn have
    // settled, so nothing waits for a later turn. One write() per message, or a writev of many
    // small strings, was a large share of the gateway's CPU in the benchmark (issue 7).
    this.pending += line;
    this.pending += '\n';
    this.schedule();
    // Not awaiting the write callback keeps the hot path free of a promise per message;
    // `flush()` is how callers wait for the bytes to leave.
    return DONE;
  }

  sendBytes(head: string, body: Buffer, tail: string): Promise<void> {
    if (this.outputClosed || this.options.output.destroyed) return DONE;
    // In order: the text sent before this message leaves before it.
    const parts = (this.parts ??= []);
    if (this.pending !== '') {
      parts.push(this.pending);
      this.pending = '';
    }
    parts.push(head, body, `${tail}\n`);
    this.schedule();
    return DONE;
  }

  /** Writes what is pending at the end of this turn (once, however many messages are sent). */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    process.nextTick(this.writePending);
  }

  beforeWrite?: () => void;
  private pending = '';
  /** Set while a message sent as bytes waits: everything pending, in order. */
  private parts: (string | Buffer)[] | undefined;
  private scheduled = false;
  private readonly writePending = (): void => {
    this.scheduled = false;
    const parts = this.parts;
    if (this.pending === '' && parts === undefined) return;
    this.beforeWrite?.();
    const text = this.pending;
    this.pending = '';
    this.parts = undefined;
    const { output } = this.options;
    if (this.outputClosed || output.destroyed) return;
    if (parts === undefined) {
      output.write(text);
      return;
    }
    if (text !== '') parts.push(text);
    // One writev for all of it; the large body is written from its own bytes, not copied.
    output.cork();
    for (const part of parts) output.write(part);
    output.uncork();
  };

  /** Resolves once everything written so far has been handed to the OS. */
  flush(): Promise<void> {
    const { output } = this.options;
    if (this.scheduled) this.writePending();
    if (output.destroyed || output.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => output.write('', () => resolve()));
  }

  async close(): Promise<void> {
    await this.flush();
    this.outputClosed = true;
    this.endInput();
  }

  /** `onclose` fires once, when the peer can send no more: the owner decides what that means. */
  private endInput(): void {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.onclose?.();
  }
}
