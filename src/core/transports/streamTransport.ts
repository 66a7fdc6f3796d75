import type { Readable, Writable } from 'node:stream';
import { EncodedResult } from '../rpc/encoded.js';
import { SENT, type MessageExtra, type MessageTransport, type OutgoingMessage } from '../rpc/transport.js';
import {
  invalidMessageReply,
  isNotification,
  isRequest,
  isResponse,
  nestingExceeds,
  parseMessage,
  RawId,
  rawResultHead,
  RpcErrorCode,
  serializeMessage,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type ParseFailure,
  type ParseOutcome,
  type RequestId,
} from '../protocol/jsonRpc.js';
import { BatchAnswers, refusedBatch } from './batches.js';
import { parseLargeMessage } from './largeLine.js';
import { LineDecoder, type OversizeLine } from './lineDecoder.js';

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
   * Bytes written and not yet read by the peer beyond which `send` rejects (the caller fails that
   * message's request), so a peer that stops reading cannot make the gateway hold without bound
   * what it sends. Unset: no bound (the host's connection pauses upstreams instead).
   */
  readonly maxUnreadBytes?: number;
  /**
   * Requests whose JSON nests objects and arrays deeper than this are refused (see
   * `MessageExtra.refused`) before anything walks them recursively. Unset: no bound (upstreams).
   */
  readonly maxDepth?: number;
  /** Parses one line as `parseMessage` does, possibly faster for this peer; `parseMessage` unset. */
  readonly parse?: (line: string) => ParseOutcome;
}

/**
 * The id of an oversize line, when its head (or tail) shows it as a top-level member before any
 * nested value: raw JSON text, a number or a string literal, to answer under exactly as sent.
 */
const HEAD_ID = /^\s*\{(?:[^{}[\]"]|"(?:[^"\\]|\\.)*")*?"id"\s*:\s*(-?\d[\d.eE+-]*|"(?:[^"\\]|\\.)*")/;
const TAIL_ID = /[,{]\s*"id"\s*:\s*(-?\d[\d.eE+-]*|"(?:[^"\\]|\\.)*")\s*\}\s*$/;

const CANCELLED = 'notifications/cancelled';

/** How an element of a batch that is no message is refused. */
const INVALID_ELEMENT: ParseFailure = {
  ok: false,
  reason: '',
  code: RpcErrorCode.InvalidRequest,
  id: null,
  answer: true,
};

export function oversizeLineId(info: OversizeLine): RawId | null {
  const raw = HEAD_ID.exec(info.head)?.[1] ?? TAIL_ID.exec(info.tail)?.[1];
  return raw === undefined ? null : new RawId(raw);
}

/**
 * Newline-delimited JSON-RPC over a pair of streams: the host's stdin/stdout, or a child's
 * stdout/stdin. One `JSON.parse` per line and no schema parse.
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

  private readonly parse: (line: string) => ParseOutcome;

  constructor(options: StreamTransportOptions) {
    this.options = options;
    this.parse = options.parse ?? parseMessage;
  }

  async start(): Promise<void> {
    const { input, output, answerInvalid = false } = this.options;
    const parse = this.parse;
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
        const parsed = parse(line);
        if (parsed.ok) this.deliver(parsed.message, { line });
        else if (parsed.batchIds !== undefined && this.batches !== undefined) this.batch(line, this.batches);
        else this.junk(line, parsed);
      },
      onLargeLine: (bytes, facts) => {
        const parsed = parseLargeMessage(bytes, facts);
        if (parsed.ok) this.deliver(parsed.message, { line: parsed.large.text, large: parsed.large });
        else if (parsed.text.trim() !== '') this.junk(parsed.text, parsed);
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

  /** A line that is no message: reported, and answered when the peer is the host. */
  private junk(line: string, parsed: ParseFailure): void {
    const { output, onJunk, answerInvalid = false } = this.options;
    onJunk(line, parsed.reason);
    const reply = answerInvalid ? invalidMessageReply(parsed) : undefined;
    if (reply !== undefined && !this.outputClosed && !output.destroyed) void this.queueText(reply);
  }

  private deliver(message: JsonRpcMessage, extra: MessageExtra & { readonly line: string }): void {
    const { maxDepth } = this.options;
    // A short line cannot nest deeply: the scan runs only on lines longer than the bound.
    const { line } = extra;
    if (maxDepth !== undefined && line.length > maxDepth && nestingExceeds(line, maxDepth))
      this.refuse(message, line, maxDepth);
    else this.onmessage?.(message, extra);
    if (this.batches !== undefined && isNotification(message) && message.method === CANCELLED)
      this.batchCancelled(message.params?.requestId);
  }

  /**
   * A batch from the host: each element is parsed on its own, the batch refused whole when a
   * bound says so, else its requests delivered and their answers gathered into one line.
   */
  private batch(line: string, answers: BatchAnswers): void {
    const { onJunk } = this.options;
    const elements = JSON.parse(line.charCodeAt(0) === 0xfeff ? line.slice(1) : line) as unknown[];
    if (elements.length === 0)
      return this.junk(line, { ...INVALID_ELEMENT, reason: 'an empty JSON-RPC batch' });
    const ids: RequestId[] = [];
    const errors: string[] = [];
    const messages: [JsonRpcMessage, string][] = [];
    for (const element of elements) {
      const text = JSON.stringify(element);
      const one = Array.isArray(element)
        ? { ...INVALID_ELEMENT, reason: 'a batch within a batch' }
        : this.parse(text);
      if (one.ok) {
        if (isRequest(one.message)) ids.push(one.message.id);
        messages.push([one.message, text]);
        continue;
      }
      onJunk(text, one.reason);
      const reply = invalidMessageReply(one);
      if (reply !== undefined) errors.push(reply);
    }
    const refusal = answers.refusal(ids.length, errors.length);
    if (refusal !== undefined) {
      onJunk(line, refusal);
      void this.queueText(refusedBatch(ids, errors, refusal));
      return;
    }
    const complete = answers.open(ids, errors);
    if (complete !== undefined) void this.queueText(complete);
    for (const [message, text] of messages) this.deliver(message, { line: text });
  }

  /**
   * A message nested deeper than `maxDepth`: a request is delivered without its params (nothing
   * may walk them), with the error to answer it with in `extra.refused`; anything else is dropped.
   */
  private refuse(message: JsonRpcMessage, line: string, maxDepth: number): void {
    const reason = `nested deeper than ${maxDepth} levels`;
    if (!isRequest(message)) {
      this.options.onJunk('', `a message ${reason}`);
      return;
    }
    const refused: JsonRpcErrorObject = {
      code: RpcErrorCode.InvalidParams,
      message: `Invalid params: ${message.method} has params ${reason}`,
    };
    // The tool's name is kept, so a refused call can still be recorded against its tool.
    const name = message.params?.name;
    const bare = { jsonrpc: '2.0' as const, id: message.id, method: message.method };
    const delivered = typeof name === 'string' ? { ...bare, params: { name } } : bare;
    if (this.onmessage !== undefined) this.onmessage(delivered, { line, refused });
    else void this.send({ jsonrpc: '2.0', id: message.id, error: refused });
  }

  /**
   * Accepts JSON-RPC batches from now on (the host negotiated 2025-03-26, the one revision that
   * allows them): each element is served as if it came alone, and the answers to its requests
   * leave together as one array. Until then, and on other revisions, a batch is refused.
   */
  acceptBatches(): void {
    this.batches ??= new BatchAnswers();
  }
  private batches: BatchAnswers | undefined;

  private batchCancelled(requestId: unknown): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const complete = this.batches!.cancelled(requestId);
    if (complete !== undefined) void this.queueText(complete);
  }

  /**
   * Queues a message for the end of this turn; never rejects (returns `SENT`): a failed write is
   * an `output` error, reported as a close.
   */
  send(message: OutgoingMessage): Promise<void> {
    if (this.outputClosed || this.options.output.destroyed) return SENT;
    if (this.batches !== undefined) {
      const id = message instanceof EncodedResult ? message.id : isResponse(message) ? message.id : null;
      if (id !== null && this.batches.owes(id)) {
        const text =
          message instanceof EncodedResult
            ? `${rawResultHead(message.id)}${message.text}}`
            : serializeMessage(message);
        const complete = this.batches.answer(id, text);
        return complete === undefined ? SENT : this.queueText(complete);
      }
    }
    const { maxUnreadBytes } = this.options;
    if (maxUnreadBytes !== undefined) {
      // The peer is not reading what it was sent: refuse more rather than hold it all in memory.
      const unread = this.options.output.writableLength + this.pending.length;
      if (unread > maxUnreadBytes)
        return Promise.reject(
          new Error(
            `it is not reading its input: ${unread} bytes sent to it are unread, over the bound of ` +
              `${maxUnreadBytes} bytes (gateway.maxMessageSize)`,
          ),
        );
    }
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
    parts.push(rawResultHead(message.id), ...message.bytes.buffers, '}\n');
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
      if (!output.write(text)) this.congested();
      return;
    }
    if (text !== '') parts.push(text);
    // One writev for all of it; the large body is written from the parts it arrived in, not
    // copied or joined.
    output.cork();
    let flowing = true;
    for (const part of parts) flowing = output.write(part) && flowing;
    output.uncork();
    if (!flowing) this.congested();
  };

  /**
   * Told when the peer stops reading what is written (`true`: the stream's buffer is past its
   * mark) and when it reads again (`false`). The gateway sets it on the host's transport, to stop
   * reading from upstreams while the host does not read, so the answers it cannot take do not
   * pile up in memory. A member of this class, not of the interface: only a stream has a buffer.
   */
  onBackpressure?: (congested: boolean) => void;
  private waitingForDrain = false;

  private congested(): void {
    if (this.waitingForDrain || this.onBackpressure === undefined) return;
    this.waitingForDrain = true;
    this.onBackpressure(true);
    this.options.output.once('drain', () => {
      this.waitingForDrain = false;
      this.onBackpressure?.(false);
    });
  }

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
