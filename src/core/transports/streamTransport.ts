import type { Readable, Writable } from 'node:stream';
import { EncodedResult } from '../rpc/encoded.js';
import { parseMessage, rawResultHead, serializeMessage, type JsonRpcMessage } from '../rpc/jsonRpc.js';
import { parseLargeMessage, type LargeLine } from './largeLine.js';
import { LineDecoder, type OversizeLine } from './lineDecoder.js';

/**
 * The connection interface every part of the gateway speaks: the SDK's `Transport` members
 * (start, send, close, onmessage, onclose, onerror), typed with our lean message types, so the
 * SDK's HTTP transports fit behind it.
 *
 * Two conventions keep the hot path cheap without widening the interface:
 * - `send` may be given an `EncodedResult`, a response whose result is already JSON text (an
 *   upstream's own bytes, a cached list). A transport that writes text writes it as it is; any
 *   other sends the parsed value.
 * - A transport whose sends cannot fail returns `SENT`, and reports a broken connection through
 *   `onerror` and `onclose`; callers then need not handle the promise (see rpc/peer.ts).
 */
export interface MessageTransport {
  start(): Promise<void>;
  send(message: OutgoingMessage): Promise<void>;
  close(): Promise<void>;
  /** `extra` carries the text the message was parsed from, when the transport has it. */
  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
}

/**
 * The text a message was parsed from (stdio), for byte-exact forwarding; `large` its bytes when
 * it is large (see LARGE_LINE_BYTES), in which case `line` may have its long strings left out.
 */
export interface MessageExtra {
  readonly line: string;
  readonly large?: LargeLine;
}

export type OutgoingMessage = JsonRpcMessage | EncodedResult;

/** What a send that cannot fail returns: one settled promise for every message. */
export const SENT: Promise<void> = Promise.resolve();

export interface StreamTransportOptions {
  readonly input: Readable;
  readonly output: Writable;
  /** Lines longer than this are skipped and reported through `onOversize`. */
  readonly maxLineBytes: number;
  /** A line that is not a JSON-RPC message: logged by the owner, never fatal. */
  readonly onJunk: (line: string, reason: string) => void;
  readonly onOversize: (info: OversizeLine) => void;
}

/**
 * Newline-delimited JSON-RPC over a pair of streams: the host's stdin/stdout, or a child's
 * stdout/stdin. One `JSON.parse` per line and no schema parse (ARCHITECTURE "Connections").
 */
export class StreamTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

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
        if (parsed.ok) this.onmessage?.(parsed.message, { line });
        else onJunk(line, parsed.reason);
      },
      onLargeLine: (bytes, facts) => {
        const parsed = parseLargeMessage(bytes, facts);
        if (parsed.ok) this.onmessage?.(parsed.message, { line: parsed.large.text, large: parsed.large });
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

  /**
   * Queues a message for the end of this turn; never rejects (returns `SENT`): a failed write is
   * an `output` error, reported as a close.
   */
  send(message: OutgoingMessage): Promise<void> {
    if (this.outputClosed || this.options.output.destroyed) return SENT;
    if (!(message instanceof EncodedResult)) return this.queueText(serializeMessage(message));
    // Untouched by the gateway: the result goes out as its own text (no re-serialising), and a
    // large one from its own bytes (not encoded again).
    if (message.bytes === undefined) return this.queueText(`${rawResultHead(message.id)}${message.text}}`);
    // In order: the text sent before this message leaves before it.
    const parts = (this.parts ??= []);
    if (this.pending !== '') {
      parts.push(this.pending);
      this.pending = '';
    }
    parts.push(rawResultHead(message.id), message.bytes, '}\n');
    this.schedule();
    return SENT;
  }

  private queueText(line: string): Promise<void> {
    // Messages sent in one turn (e.g. every answer freed by one chunk from an upstream) leave as
    // one string in one write: nextTick runs once the promise continuations of this turn have
    // settled, so nothing waits for a later turn. One write() per message, or a writev of many
    // small strings, was measured as a large share of the gateway's CPU per call.
    this.pending += line;
    this.pending += '\n';
    this.schedule();
    return SENT;
  }

  /** Writes what is pending at the end of this turn (once, however many messages are sent). */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    process.nextTick(this.writePending);
  }

  /**
   * Called just before the messages queued so far are handed to the OS. The gateway sets it on
   * the host's transport to write the audit records of those answers first; it is a member of
   * this class, not of the interface, because only a transport that batches writes needs it.
   */
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
