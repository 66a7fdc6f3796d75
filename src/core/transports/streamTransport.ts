import type { Readable, Writable } from 'node:stream';
import {
  invalidMessageReply,
  isRequest,
  nestingExceeds,
  parseMessage,
  RawId,
  RpcErrorCode,
  serializeMessage,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type ParseFailure,
} from '../rpc/jsonRpc.js';
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
  /**
   * A well-formed request the transport will not deliver as is (its params nest deeper than
   * `maxDepth`): the owner answers it with `error` (and records it); without a handler, the
   * transport answers it itself.
   */
  onrefused?: (request: JsonRpcRequest, error: JsonRpcErrorObject) => void;
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
  /**
   * The peer is a client waiting on its requests (the host): a line that is not a valid message,
   * or is over `maxLineBytes`, is answered with a JSON-RPC error under its id when the id can be
   * read (null otherwise), besides being reported. Off for upstreams, whose junk is only logged.
   */
  readonly answerInvalid?: boolean;
  /**
   * Requests whose JSON nests objects and arrays deeper than this are refused (see `onrefused`)
   * before anything walks them recursively. Unset: no bound (upstreams).
   */
  readonly maxDepth?: number;
}

/**
 * The id of an oversize line, when its head (or tail) shows it as a top-level member before any
 * nested value: raw JSON text, a number or a string literal, to answer under exactly as sent.
 */
const HEAD_ID = /^\s*\{(?:[^{}[\]"]|"(?:[^"\\]|\\.)*")*?"id"\s*:\s*(-?\d[\d.eE+-]*|"(?:[^"\\]|\\.)*")/;
const TAIL_ID = /[,{]\s*"id"\s*:\s*(-?\d[\d.eE+-]*|"(?:[^"\\]|\\.)*")\s*\}\s*$/;

export function oversizeLineId(info: OversizeLine): RawId | null {
  const raw = HEAD_ID.exec(info.head)?.[1] ?? TAIL_ID.exec(info.tail)?.[1];
  return raw === undefined ? null : new RawId(raw);
}

/** What every send returns: writes are not awaited one by one (see `flush`). */
const DONE = Promise.resolve();

/**
 * Newline-delimited JSON-RPC over a pair of streams: the host's stdin/stdout, or a child's
 * stdout/stdin. One `JSON.parse` per line and no schema parse (ARCHITECTURE "Connections").
 */
export class StreamTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage, line?: string, large?: LargeLine) => void;
  onrefused?: (request: JsonRpcRequest, error: JsonRpcErrorObject) => void;
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
    const { input, output, onJunk, answerInvalid = false, maxDepth } = this.options;
    const junk = (line: string, parsed: ParseFailure) => {
      onJunk(line, parsed.reason);
      const reply = answerInvalid ? invalidMessageReply(parsed) : undefined;
      if (reply !== undefined) void this.sendRaw(reply);
    };
    const deliver = (message: JsonRpcMessage, line: string, large?: LargeLine) => {
      // A short line cannot nest deeply: the scan runs only on lines longer than the bound.
      if (maxDepth !== undefined && line.length > maxDepth && nestingExceeds(line, maxDepth))
        this.refuse(message, maxDepth);
      else this.onmessage?.(message, line, large);
    };
    const decoder = new LineDecoder({
      maxLineBytes: this.options.maxLineBytes,
      onOversize: (info) => {
        this.options.onOversize(info);
        if (!answerInvalid) return;
        const error = {
          code: RpcErrorCode.InvalidRequest,
          message: `Invalid message: ${info.bytes} bytes, over the limit of ${this.options.maxLineBytes} bytes (gateway.maxMessageSize)`,
        };
        void this.send({ jsonrpc: '2.0', id: oversizeLineId(info), error });
      },
      onLine: (line) => {
        const parsed = parseMessage(line);
        if (parsed.ok) deliver(parsed.message, line);
        else junk(line, parsed);
      },
      onLargeLine: (bytes, facts) => {
        const parsed = parseLargeMessage(bytes, facts);
        if (parsed.ok) deliver(parsed.message, parsed.large.text, parsed.large);
        else if (parsed.text.trim() !== '') junk(parsed.text, parsed);
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

  /** A message nested deeper than `maxDepth`: a request is refused, anything else dropped. */
  private refuse(message: JsonRpcMessage, maxDepth: number): void {
    const reason = `nested deeper than ${maxDepth} levels`;
    if (!isRequest(message)) {
      this.options.onJunk('', `a message ${reason}`);
      return;
    }
    const error = {
      code: RpcErrorCode.InvalidParams,
      message: `Invalid params: ${message.method} has params ${reason}`,
    };
    if (this.onrefused !== undefined) this.onrefused(message, error);
    else void this.send({ jsonrpc: '2.0', id: message.id, error });
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
