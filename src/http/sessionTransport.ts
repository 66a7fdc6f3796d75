import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EncodedResult } from '../core/rpc/encoded.js';
import {
  BATCHES_REFUSED,
  OwnQuestion,
  isRequest,
  isResponse,
  serializeMessage,
  type JsonRpcMessage,
} from '../core/protocol/jsonRpc.js';
import { retryAfterOf } from './replies.js';
import { overOwed, oversizeBatch, refusedBatch } from '../core/transports/batches.js';
import type { MessageExtra, MessageTransport, OutgoingMessage } from '../core/rpc/transport.js';
import { positionOf } from './resumableCalls.js';
import { AnswerStream, endWithError, type KeepAlive } from './answerStream.js';
import type { Sweeper } from './sweeper.js';
import { CallLog, MAX_EVENTS } from './callLog.js';
import type { Reply } from './retryRelay.js';
import type { ResumeRefusal } from './relayedStreams.js';
import { CallResumption, type TransportResume } from './callResumption.js';
import { isPlainRequest, type PlainRequest, type RequestId } from './plainRequest.js';

export interface SessionTransportOptions {
  /** Mints this session's id (sealed, see sessionIds.ts). */
  readonly sessionId: () => string;
  /** The session was set up by the host's initialize (its id is known from now on). */
  readonly onInitialized: (id: string) => void | Promise<void>;
  /** The host ended the session (DELETE). */
  readonly onDeleted: () => void;
  /** Runs before each message is handed to the HTTP response (audit records are flushed first). */
  readonly beforeWrite?: () => void;
  /** Comment interval on the streams this class answers itself (default 15 s, as the SDK's). */
  readonly keepAliveMs?: number;
  /** The listener's timer that writes those comments (see `quietStreams`). */
  readonly quietStreams: Sweeper<AnswerStream>;
  /** Replicas share the session: answers to another replica's requests go there (answerRelay.ts). */
  readonly relay?: TransportRelay;
  /** With `relay`: calls' streams are resumable, and a replica that dies can be taken over. */
  readonly resume?: TransportResume;
}

/** What a session's transport needs to tell its own answers from another replica's. */
export interface TransportRelay {
  /** This replica's tag: the requests it sends the host have ids `<tag>.<number>`. */
  readonly replica: string;
  /** Sends on an answer, in session `session`, to a request that replica `replica` sent the host. */
  forward(replica: string, session: string, message: JsonRpcMessage): void;
}

/** The id of a request a replica sent a host: its tag, a dot, and the number its peer gave it. */
const TAGGED_ID = /^([A-Za-z0-9_-]{1,64})\.(\d{1,15})$/;

/** How often a quiet answer stream gets an SSE comment, so proxies and clients keep it open. */
const KEEP_ALIVE_MS = 15_000;

/** Answered calls whose logs a session keeps for a host that resumes their streams, at most. */
const MAX_ENDED_LOGS = 16;

/** How long rebuilding a session from its record may wait for the replayed initialize's answer. */
const RESTORE_TIMEOUT_MS = 10_000;

/**
 * One 2025-11-25 Streamable HTTP session, through the SDK's own server transport (it keeps the
 * session's SSE streams, the GET stream and DELETE), adapted to our MessageTransport.
 *
 * Over HTTP, what the gateway sends on its own (a confirmation question, a server's progress or
 * log line) must go on a stream the host is reading. Progress goes with the request it is about
 * (found by its progress token); other messages go on the stream of the request the host sent
 * last that is still open, which is the request they are part of in practice (a confirmation
 * asked during a tool call), else on the GET stream.
 *
 * A POST that carries one plain request (the common case: a tool call) is answered by this class
 * itself, on an SSE stream of its own, framed as the SDK frames it; the SDK's transport converts
 * each request to a web Request and its answer from a web stream, and validates the message
 * again, which made an HTTP call several times the cost of a stdio call. Everything else
 * (initialize, notifications and answers from the host, batches, GET, DELETE, and any request
 * whose headers or shape are out of the ordinary, which the SDK refuses in its own words) still
 * goes through the SDK's transport. The stream's headers are sent with its first message (or
 * the first keep-alive comment), so an answer that is a rate-limit refusal, with nothing sent
 * before it, can still be a 429 with Retry-After.
 */
export class SessionTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly inner: StreamableHTTPServerTransport;
  /** The host's requests not answered yet, in arrival order, with their progress tokens. */
  private readonly open = new Map<RequestId, unknown>();
  /** The requests answered on this class's own streams (see `handle`), by id. */
  private readonly streams = new Map<RequestId, AnswerStream>();
  private closed = false;
  private readonly options: SessionTransportOptions;
  /** With `resume`: the resumption of this session's calls on other replicas, and theirs here. */
  private readonly resumption: CallResumption | undefined;
  /** What this session's answer streams share (made once here, not for each stream). */
  private readonly keepAlive: KeepAlive;

  constructor(options: SessionTransportOptions) {
    this.options = options;
    this.keepAlive = { quietMs: options.keepAliveMs ?? KEEP_ALIVE_MS, streams: options.quietStreams };
    this.inner = new StreamableHTTPServerTransport({
      sessionIdGenerator: options.sessionId,
      onsessioninitialized: options.onInitialized,
      onsessionclosed: () => options.onDeleted(),
    });
    this.resumption = options.resume === undefined ? undefined : this.resumptionOf(options.resume);
    this.inner.onmessage = (message) => this.fromHost(message as unknown as JsonRpcMessage);
    this.inner.onclose = () => {
      this.endStreams();
      this.onclose?.();
    };
    this.inner.onerror = (error) => this.onerror?.(error);
  }

  /**
   * Hands the gateway connection a message from the host: through the SDK's transport, from one
   * of this class's own streams, or replayed for a call taken over (`extra` then says so).
   */
  private fromHost(message: JsonRpcMessage, extra?: MessageExtra): void {
    let ours = message;
    const { relay } = this.options;
    if (isResponse(ours) && relay !== undefined) {
      if (this.resumption?.answersTakeover(ours) === true) return;
      const own = this.untagged(ours, relay);
      if (own === undefined) return;
      if (this.resumption?.claimsRecorded(own) === true) return;
      ours = own;
    }
    // A cancelled request is answered by no one: it is owed nothing any more.
    if ('method' in ours && ours.method === 'notifications/cancelled') {
      const cancelled = (ours.params as { requestId?: RequestId } | undefined)?.requestId as RequestId;
      this.owed.delete(cancelled);
      this.resumption?.cancelElsewhere(cancelled);
    }
    if (isRequest(ours)) {
      const meta = (ours.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta;
      this.open.set(ours.id as RequestId, meta?.progressToken);
    }
    this.onmessage?.(ours, extra);
  }

  /** The resumption of this session's calls, lent what it needs of this transport. */
  private resumptionOf(resume: TransportResume): CallResumption {
    return new CallResumption({
      resume,
      replica: this.options.relay?.replica,
      sessionId: () => this.inner.sessionId,
      ended: () => this.closed,
      running: (id) => this.open.has(id),
      deliver: (message) => this.onmessage?.(message),
      receive: (request, takenOverBy) => this.fromHost(request as JsonRpcMessage, { takenOverBy }),
      openStream: (res, id, sessionId) => this.openStream(res, id, sessionId),
      pickUp: (res, id, sessionId, after) => this.pickUp(res, id, sessionId, after),
    });
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  /** Ids of the initialize replayed by `restore`, whose answer is kept from the host. */
  private replayed: { readonly id: string; readonly done: () => void } | undefined;

  /**
   * Makes this transport continue session `id`, set up on another replica: the SDK's transport
   * is marked initialized under that id, and the host's initialize (`params`, as the session
   * record kept it) is replayed to the gateway connection, which answers it to no one. Resolves
   * once the connection has taken it; false when the SDK's transport is not the shape this
   * relies on (the session then cannot be continued here).
   */
  async restore(id: string, params: unknown): Promise<boolean> {
    // The SDK has no public way to resume a session: its transport keeps the id and whether it
    // was initialized in fields of its inner web-standard transport.
    const web = (this.inner as unknown as { _webStandardTransport?: Record<string, unknown> })
      ._webStandardTransport;
    if (web === undefined || typeof web['_initialized'] !== 'boolean') return false;
    web['sessionId'] = id;
    web['_initialized'] = true;
    const replayId = `mcp-warden-restore-${id}`;
    // The gateway answers an initialize at once; if it ever does not, the session is not
    // continued here (the host gets 404 and initializes again) rather than its request held.
    let timer: NodeJS.Timeout | undefined;
    const answered = await new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), RESTORE_TIMEOUT_MS);
      this.replayed = { id: replayId, done: () => resolve(true) };
      this.onmessage?.({ jsonrpc: '2.0', id: replayId, method: 'initialize', params } as JsonRpcMessage);
    });
    clearTimeout(timer);
    this.replayed = undefined;
    if (!answered) return false;
    this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/initialized' } as JsonRpcMessage);
    return true;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  /**
   * The host's answer to a request with a tagged id, with the number this connection's peer
   * gave it when the tag is this replica's; undefined when it is another replica's (it is sent
   * on there). Any other id is left as it is: no request had it, and the peer drops it.
   */
  private untagged(message: JsonRpcMessage, relay: TransportRelay): JsonRpcMessage | undefined {
    const tagged = taggedIdOf(message);
    if (tagged === undefined) return message;
    if (tagged.replica !== relay.replica) {
      const session = this.inner.sessionId;
      if (session !== undefined) relay.forward(tagged.replica, session, message);
      return undefined;
    }
    return { ...message, id: tagged.id } as JsonRpcMessage;
  }

  /** An answer another replica got for a request this one sent the host in this session. */
  deliverForwarded(message: JsonRpcMessage): void {
    const tagged = taggedIdOf(message);
    const relay = this.options.relay;
    if (this.closed || !isResponse(message) || tagged === undefined) return;
    if (this.resumption?.answersTakeover(message) === true || tagged.replica !== relay?.replica) return;
    const own = { ...message, id: tagged.id } as JsonRpcMessage;
    if (this.resumption?.claimsRecorded(own) !== true) this.onmessage?.(own);
  }

  /**
   * With replicas sharing the session, the requests this replica sends the host (and the
   * cancellations of them) carry its tag in their ids, so that whichever replica the host's
   * answer reaches can tell where it belongs.
   */
  private tagged(message: JsonRpcMessage): JsonRpcMessage {
    const tag = this.options.relay?.replica;
    if (tag === undefined) return message;
    if (isRequest(message) && typeof message.id === 'number')
      return {
        jsonrpc: '2.0',
        id: `${tag}.${message.id}`,
        method: message.method,
        ...(message.params !== undefined && { params: message.params }),
      } as JsonRpcMessage;
    if ('method' in message && message.method === 'notifications/cancelled') {
      const params = message.params as { requestId?: unknown } | undefined;
      if (typeof params?.requestId === 'number')
        return {
          ...message,
          params: { ...params, requestId: `${tag}.${params.requestId}` },
        } as JsonRpcMessage;
    }
    return message;
  }

  /**
   * Serves one HTTP request of this session; `body` is the parsed POST body. A JSON-RPC batch
   * (an array) is served by the SDK's transport, which answers on the POST's own stream, only
   * when the host negotiated 2025-03-26 and the batch is within `MAX_BATCH_ANSWERS`, with the
   * answers the session's earlier batches are still owed; otherwise it is refused whole with 400,
   * -32600 under each request's id.
   */
  handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    if (Array.isArray(body)) {
      const ids = requestIdsOf(body);
      const refusal = this.batches
        ? (oversizeBatch(body.length) ??
          (ids.length === 0 ? undefined : overOwed(this.owed.size, ids.length)))
        : BATCHES_REFUSED;
      if (refusal !== undefined) {
        const text = refusedBatch(ids, [], refusal);
        res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
        return Promise.resolve();
      }
      for (const id of ids) this.owed.add(id);
    }
    const sessionId = this.inner.sessionId;
    const lastEventId = req.headers['last-event-id'];
    const { resumption } = this;
    const position =
      req.method === 'GET' && typeof lastEventId === 'string' && resumption !== undefined
        ? positionOf(lastEventId)
        : undefined;
    if (position !== undefined && resumption !== undefined && sessionId !== undefined && !this.closed)
      return resumption.resume(res, position, sessionId, lastEventId as string);
    // The SDK maps a request id to one stream: a request reusing an id that is still open is
    // left to it, as it was before this class answered any.
    if (
      req.method === 'POST' &&
      sessionId !== undefined &&
      !this.closed &&
      isPlainRequest(req, body) &&
      !this.streams.has(body.id)
    ) {
      this.answerOnOwnStream(res, body, sessionId);
      return Promise.resolve();
    }
    return this.inner.handleRequest(req, res, body);
  }

  /** Serves `message` on an answer stream of its own (see the class comment). */
  private answerOnOwnStream(res: ServerResponse, message: PlainRequest, sessionId: string): void {
    this.openStream(res, message.id, sessionId);
    this.resumption?.track(message);
    this.fromHost(message as JsonRpcMessage);
  }

  /**
   * Serves here a host's GET that another replica relays (the host resumed there the stream of
   * a call this replica runs), answering on `reply`, which goes back to that replica; or, having
   * written nothing, says why it cannot (the caller answers and logs the refusal).
   */
  resumeRelayed(reply: Reply, lastEventId: string): Promise<void> | ResumeRefusal {
    const sessionId = this.inner.sessionId;
    const position = positionOf(lastEventId);
    if (this.closed) return 'session closing';
    if (this.resumption === undefined || sessionId === undefined) return 'not resumable';
    if (position === undefined) return 'bad lastEventId';
    return this.resumption.resume(reply, position, sessionId, lastEventId);
  }

  /** A new answer stream for request `id` on `res`, its events numbered when they can be resumed. */
  private openStream(res: Reply, id: RequestId, sessionId: string, log?: CallLog): AnswerStream {
    const { relay, resume } = this.options;
    const stream = new AnswerStream(
      res,
      sessionId,
      this.keepAlive,
      relay === undefined || resume === undefined
        ? undefined
        : { replica: relay.replica, auditSession: resume.calls.auditSession, requestId: id },
      log,
    );
    this.streams.set(id, stream);
    res.once('close', () => {
      stream.stop();
      // A resumable call's stream stays, without its response, keeping the events the host
      // misses until it resumes the stream (see CallLog), as long as the call runs.
      if (stream.log !== undefined && this.open.has(id)) return;
      if (this.streams.get(id) === stream) this.streams.delete(id);
    });
    return stream;
  }

  /**
   * Continues the stream of call `id` on `res` from the events kept after position `after`
   * (the call's answer included, when it came while the host was away); false when nothing of
   * the call is kept here.
   */
  private pickUp(res: Reply, id: RequestId, sessionId: string, after: number): boolean {
    const log = this.streams.get(id)?.log ?? this.endedLogs.get(id);
    if (log === undefined) return false;
    const events = log.since(after);
    if (events === undefined) {
      endWithError(
        res,
        sessionId,
        { ...this.positionOf(id), position: after },
        `the stream of request ${JSON.stringify(id)} cannot be resumed from there: more events were sent since than this replica keeps (${MAX_EVENTS} events)`,
      );
      return true;
    }
    if (log.ended !== undefined) {
      new AnswerStream(res, sessionId, this.keepAlive, this.positionOf(id), log).replay(events);
      return true;
    }
    this.openStream(res, id, sessionId, log).replay(events);
    return true;
  }

  /** Where the events of call `id` come from: this replica. */
  private positionOf(id: RequestId): { replica: string; auditSession: string; requestId: RequestId } {
    return {
      replica: this.options.relay!.replica,
      auditSession: this.options.resume!.calls.auditSession,
      requestId: id,
    };
  }

  /**
   * The logs of the last calls answered, kept for a host whose stream broke before it read the
   * answer; at most `MAX_ENDED_LOGS` per session, the oldest dropped first.
   */
  private readonly endedLogs = new Map<RequestId, CallLog>();

  /**
   * The requests of this session's open batches not answered yet, over all its POSTs: the bound
   * of `MAX_BATCH_ANSWERS` is the session's, as on stdio, so a host cannot hold any number of
   * answers open by sending many batches at once.
   */
  private readonly owed = new Set<RequestId>();

  /** The host negotiated 2025-03-26, the one revision with JSON-RPC batches: accept them. */
  acceptBatches(): void {
    this.batches = true;
  }
  private batches = false;

  send(outgoing: OutgoingMessage): Promise<void> {
    // The answer to an initialize replayed to rebuild a session from its record goes to no one.
    if (this.replayed !== undefined) {
      const id =
        outgoing instanceof EncodedResult ? outgoing.id : isResponse(outgoing) ? outgoing.id : undefined;
      if (id === this.replayed.id) {
        this.replayed.done();
        return Promise.resolve();
      }
    }
    this.options.beforeWrite?.();
    if (outgoing instanceof EncodedResult) {
      const stream = this.answered(outgoing.id as RequestId);
      if (stream !== undefined) {
        stream.answer(`{"jsonrpc":"2.0","id":${JSON.stringify(outgoing.id)},"result":${outgoing.text}}`);
        return Promise.resolve();
      }
    }
    const message = outgoing instanceof EncodedResult ? outgoing.toMessage() : outgoing;
    if (isResponse(message)) {
      const stream = message.id === null ? undefined : this.answered(message.id as RequestId);
      if (stream !== undefined) {
        stream.answer(serializeMessage(message), retryAfterOf(message));
        return Promise.resolve();
      }
      return this.inner.send(message as unknown as JSONRPCMessage);
    }
    const related = this.related(message);
    const stream = related === undefined ? undefined : this.streams.get(related.relatedRequestId);
    const sent = this.tagged(message);
    if (stream !== undefined) {
      if (this.resumption !== undefined && message instanceof OwnQuestion)
        return this.resumption.confirmationOf(related!.relatedRequestId, message.id as number, sent, stream);
      stream.event(serializeMessage(sent));
      return Promise.resolve();
    }
    return this.inner.send(sent as unknown as JSONRPCMessage, related);
  }

  /** Forgets the request `id` as open, and takes its own answer stream, when it has one. */
  private answered(id: RequestId): AnswerStream | undefined {
    this.open.delete(id);
    this.owed.delete(id);
    this.resumption?.settled(id);
    const stream = this.streams.get(id);
    if (stream !== undefined) this.streams.delete(id);
    if (stream?.log !== undefined) {
      // Kept should the host's stream break before it reads the answer (a relayed stream's
      // reader may be gone without this replica knowing yet): it resumes from the log.
      this.endedLogs.set(id, stream.log);
      if (this.endedLogs.size > MAX_ENDED_LOGS) this.endedLogs.delete(this.endedLogs.keys().next().value!);
    }
    return stream;
  }

  private related(message: JsonRpcMessage): { relatedRequestId: RequestId } | undefined {
    if ('method' in message && message.method === 'notifications/progress') {
      const token = (message.params as { progressToken?: unknown } | undefined)?.progressToken;
      for (const [id, progressToken] of this.open)
        if (progressToken !== undefined && progressToken === token) return { relatedRequestId: id };
    }
    let last: RequestId | undefined;
    for (const id of this.open.keys()) last = id;
    return last === undefined ? undefined : { relatedRequestId: last };
  }

  close(): Promise<void> {
    this.open.clear();
    this.owed.clear();
    this.resumption?.clear();
    this.endStreams();
    return this.inner.close();
  }

  /** Ends the answer streams left open: the session is over, as the SDK ends its own. */
  private endStreams(): void {
    this.closed = true;
    for (const stream of this.streams.values()) stream.end();
    this.streams.clear();
  }
}

/** The replica's tag and the peer's number in a tagged id (see `TAGGED_ID`), or undefined. */
function taggedIdOf(message: JsonRpcMessage): { readonly replica: string; readonly id: number } | undefined {
  const { id } = message as { id?: unknown };
  const match = typeof id === 'string' ? TAGGED_ID.exec(id) : null;
  return match === null ? undefined : { replica: match[1]!, id: Number(match[2]) };
}

/** The ids of a batch's elements that are requests, for the errors that answer a refused batch. */
function requestIdsOf(batch: readonly unknown[]): RequestId[] {
  const ids: RequestId[] = [];
  for (const element of batch) {
    if (typeof element !== 'object' || element === null) continue;
    const { id, method } = element as { id?: unknown; method?: unknown };
    if (typeof method === 'string' && (typeof id === 'string' || typeof id === 'number')) ids.push(id);
  }
  return ids;
}
