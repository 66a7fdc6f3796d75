import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EncodedResult } from '../core/rpc/encoded.js';
import {
  BATCHES_REFUSED,
  isRequest,
  isResponse,
  serializeMessage,
  type JsonRpcMessage,
} from '../core/protocol/jsonRpc.js';
import { retryAfterOf } from './replies.js';
import { overOwed, oversizeBatch, refusedBatch } from '../core/transports/batches.js';
import type { MessageTransport, OutgoingMessage } from '../core/rpc/transport.js';
import { isOwnQuestion, noteTakenOver } from '../core/host/ownQuestions.js';
import { RpcErrorCode, type Params } from '../core/protocol/jsonRpc.js';
import {
  HOST_CANCELLED,
  positionOf,
  type PendingCall,
  type ResumableCalls,
  type StreamPosition,
} from './resumableCalls.js';
import { AnswerStream, endWithError } from './answerStream.js';

/** Over HTTP the host's ids are parsed JSON: strings or numbers. */
type RequestId = string | number;

export interface SessionTransportOptions {
  /** Mints this session's id (sealed, see sessionIds.ts). */
  readonly sessionId: () => string;
  /** The session was set up by the host's initialize (its id is known from now on). */
  readonly onInitialized: (id: string) => void;
  /** The host ended the session (DELETE). */
  readonly onDeleted: () => void;
  /** Runs before each message is handed to the HTTP response (audit records are flushed first). */
  readonly beforeWrite?: () => void;
  /** Comment interval on the streams this class answers itself (default 15 s, as the SDK's). */
  readonly keepAliveMs?: number;
  /** Replicas share the session: answers to another replica's requests go there (answerRelay.ts). */
  readonly relay?: TransportRelay;
  /** With `relay`: calls' streams are resumable, and a replica that dies can be taken over. */
  readonly resume?: TransportResume;
}

/** What a session's transport needs to make its calls' streams resumable on any replica. */
export interface TransportResume {
  readonly calls: ResumableCalls;
  /** The digest of the principal whose session this is (as its record keeps it). */
  readonly owner: string;
  /** Whether replica `replica` is up; rejects when the store cannot say. */
  alive(replica: string): Promise<boolean>;
  /** Takes one of this replica's slots for resuming another's stream; false when none is free. */
  acquire(): boolean;
  release(): void;
  readonly log: (message: string) => void;
}

/** A call this replica took over from one that died: the question it waits for the answer to. */
interface Takeover {
  /** The id (tagged) of the question the host was asked on the replica that died. */
  readonly question: string;
  /** The host's answer to it, once it came. */
  answer?: JsonRpcMessage;
  /** The id this connection's peer gave the same question, asked again here (never sent). */
  asked?: number;
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
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly inner: StreamableHTTPServerTransport;
  /** The host's requests not answered yet, in arrival order, with their progress tokens. */
  private readonly open = new Map<RequestId, unknown>();
  /** The requests answered on this class's own streams (see `handle`), by id. */
  private readonly streams = new Map<RequestId, AnswerStream>();
  private closed = false;
  private readonly options: SessionTransportOptions;
  /** With `resume`: the requests answered on this class's own streams, as the host sent them. */
  private readonly requests = new Map<RequestId, PlainRequest>();
  /** Confirmations recorded in the store, by the peer's id of the question: claimed when answered. */
  private readonly recorded = new Map<number, RequestId>();
  /** Calls taken over from a replica that died, by request id, and by their question's id. */
  private readonly takeovers = new Map<RequestId, Takeover>();
  private readonly byQuestion = new Map<string, RequestId>();

  constructor(options: SessionTransportOptions) {
    this.options = options;
    this.inner = new StreamableHTTPServerTransport({
      sessionIdGenerator: options.sessionId,
      onsessioninitialized: options.onInitialized,
      onsessionclosed: () => options.onDeleted(),
    });
    this.inner.onmessage = (message) => {
      let ours = message as unknown as JsonRpcMessage;
      if (isResponse(ours) && options.relay !== undefined) {
        if (this.answersTakeover(ours)) return;
        const own = this.untagged(ours, options.relay);
        if (own === undefined) return;
        if (this.claimsRecorded(own)) return;
        ours = own;
      }
      // A cancelled request is answered by no one: it is owed nothing any more.
      if ('method' in ours && ours.method === 'notifications/cancelled') {
        const cancelled = (ours.params as { requestId?: RequestId } | undefined)?.requestId as RequestId;
        this.owed.delete(cancelled);
        this.cancelElsewhere(cancelled);
      }
      if (isRequest(ours)) {
        const meta = (ours.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta;
        this.open.set(ours.id as RequestId, meta?.progressToken);
      }
      this.onmessage?.(ours);
    };
    this.inner.onclose = () => {
      this.endStreams();
      this.onclose?.();
    };
    this.inner.onerror = (error) => this.onerror?.(error);
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
    if (this.answersTakeover(message) || tagged.replica !== relay?.replica) return;
    const own = { ...message, id: tagged.id } as JsonRpcMessage;
    if (!this.claimsRecorded(own)) this.onmessage?.(own);
  }

  /**
   * A host that gives up on a call whose stream broke cancels it, and the cancellation may come
   * here, where the call is not running: it claims the call's record in the store for the host,
   * so that no replica takes it over and runs it after all. Nothing waits for it.
   */
  private cancelElsewhere(requestId: RequestId): void {
    const { resume } = this.options;
    const session = this.inner.sessionId;
    if (resume === undefined || session === undefined || this.open.has(requestId)) return;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    resume.calls
      .cancel(session, requestId)
      .catch((error: unknown) =>
        resume.log(
          `the host's cancellation of request ${JSON.stringify(requestId)} could not be noted in the shared store: ${(error as Error).message}`,
        ),
      );
  }

  /**
   * Takes the host's answer to the question a replica that died asked about a call this one
   * took over: it answers the same question asked again here (kept from the host).
   */
  private answersTakeover(message: JsonRpcMessage): boolean {
    const { id } = message as { id?: unknown };
    const requestId = typeof id === 'string' ? this.byQuestion.get(id) : undefined;
    const takeover = requestId === undefined ? undefined : this.takeovers.get(requestId);
    if (takeover === undefined) return false;
    takeover.answer ??= message;
    this.answerTakenOver(takeover);
    return true;
  }

  /** Gives the question asked again in a taken-over call the host's answer, once both are here. */
  private answerTakenOver(takeover: Takeover): void {
    const { answer, asked } = takeover;
    if (answer === undefined || asked === undefined) return;
    takeover.asked = undefined;
    queueMicrotask(() => this.onmessage?.({ ...answer, id: asked } as JsonRpcMessage));
  }

  /**
   * The host's answer to a confirmation recorded in the store goes on only once this replica
   * has claimed the call there: another replica may have taken it over, believing this one
   * gone. Then, or when the store cannot say, the question fails (the call does not run here).
   */
  private claimsRecorded(message: JsonRpcMessage): boolean {
    const { id } = message as { id?: unknown };
    const requestId = typeof id === 'number' ? this.recorded.get(id) : undefined;
    const resume = this.options.resume;
    const session = this.inner.sessionId;
    if (requestId === undefined || resume === undefined || session === undefined) return false;
    this.recorded.delete(id as number);
    const failed = (why: string): JsonRpcMessage =>
      ({ jsonrpc: '2.0', id, error: { code: RpcErrorCode.InternalError, message: why } }) as JsonRpcMessage;
    resume.calls.claim(session, requestId).then(
      (claim) => {
        const by = claim !== undefined && 'takenBy' in claim ? claim.takenBy : undefined;
        this.onmessage?.(
          by === undefined || by.replica === this.options.relay?.replica
            ? message
            : failed(
                by === HOST_CANCELLED
                  ? 'the host cancelled the call through another replica'
                  : `the call was taken over by replica ${by.auditSession}, which runs it`,
              ),
        );
      },
      (error: unknown) =>
        this.onmessage?.(
          failed(`the answer could not be claimed in the shared store: ${(error as Error).message}`),
        ),
    );
    return true;
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
    const position =
      req.method === 'GET' && typeof lastEventId === 'string' && this.options.resume !== undefined
        ? positionOf(lastEventId)
        : undefined;
    if (position !== undefined && sessionId !== undefined && !this.closed)
      return this.resume(res, position, sessionId);
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
    if (this.options.resume !== undefined) this.requests.set(message.id, message);
    this.inner.onmessage?.(message as unknown as JSONRPCMessage);
  }

  /** A new answer stream for request `id` on `res`, its events numbered when they can be resumed. */
  private openStream(res: ServerResponse, id: RequestId, sessionId: string): AnswerStream {
    const { relay, resume } = this.options;
    const stream = new AnswerStream(
      res,
      sessionId,
      this.options.keepAliveMs ?? KEEP_ALIVE_MS,
      relay === undefined || resume === undefined
        ? undefined
        : { replica: relay.replica, auditSession: resume.calls.auditSession, requestId: id },
    );
    this.streams.set(id, stream);
    res.once('close', () => {
      stream.stop();
      if (this.streams.get(id) === stream) this.streams.delete(id);
    });
    return stream;
  }

  /**
   * Serves a host's GET that resumes a call's stream after it broke (its `Last-Event-ID` names
   * the call and the replica that ran it). The stream of a call still running here is picked up
   * again; a call whose replica died while it waited for its confirmation is taken over here,
   * once over all replicas; any other call gets an error saying what became of it at once,
   * rather than the host waiting for an answer that will not come.
   */
  private async resume(res: ServerResponse, position: StreamPosition, sessionId: string): Promise<void> {
    const resume = this.options.resume!;
    const { requestId } = position;
    const shown = `request ${JSON.stringify(requestId)}`;
    // The stream it resumes had its answer: nothing more will come on it.
    if (position.position === 'end') {
      res.writeHead(204).end();
      return;
    }
    if (position.replica === this.options.relay?.replica || this.takeovers.has(requestId)) {
      if (this.open.has(requestId)) {
        this.openStream(res, requestId, sessionId).prime();
        return;
      }
      return endWithError(
        res,
        sessionId,
        position,
        `the call of ${shown} has ended: its answer cannot be sent again`,
      );
    }
    if (!resume.acquire()) {
      resume.log(`a host's stream of ${shown} could not be resumed here: too many are being resumed at once`);
      res
        .writeHead(503, { 'Retry-After': '5', 'Content-Type': 'text/plain' })
        .end('too many streams are being resumed; retry later');
      return;
    }
    let held = true;
    const release = () => {
      if (held) resume.release();
      held = false;
    };
    res.once('close', release);
    const dead = `replica ${position.auditSession}`;
    try {
      if (await resume.alive(position.replica)) {
        release();
        return endWithError(
          res,
          sessionId,
          position,
          `the stream of ${shown} broke, but ${dead} still runs the call; its answer cannot be resumed through another replica`,
        );
      }
      const claim = await resume.calls.claim(sessionId, requestId);
      if (claim === undefined || !('mine' in claim)) {
        release();
        const by = claim?.takenBy;
        const elsewhere =
          by === HOST_CANCELLED
            ? `the host cancelled the call of ${shown}`
            : by !== undefined && by.replica !== position.replica
              ? `the call of ${shown} was already taken over by replica ${by.auditSession}`
              : `the call of ${shown} was lost with ${dead}, which stopped while it ran: it may or may not have run; check before calling again`;
        resume.log(
          `a host resumed the stream of ${shown} in session ${sessionId.slice(0, 12)}…: ${elsewhere}`,
        );
        return endWithError(res, sessionId, position, elsewhere);
      }
      if (res.destroyed || this.closed) {
        release();
        return;
      }
      this.takeOver(res, claim.mine, claim.answer, sessionId, release);
      resume.log(
        `the call of ${shown} in session ${sessionId.slice(0, 12)}… was taken over here from ${dead}, which stopped while its confirmation was pending`,
      );
    } catch (error) {
      release();
      return endWithError(
        res,
        sessionId,
        position,
        `the stream of ${shown} could not be resumed: ${(error as Error).message}`,
      );
    }
  }

  /**
   * Runs here the call a replica that died was asking the host to confirm: the host's request
   * as it sent it, through the whole pipeline again (the policy decides afresh), answered on
   * the resumed stream. Its confirmation is not shown to the user twice: the question asked
   * again here waits for the host's answer to the first one (see `answersTakeover`).
   */
  private takeOver(
    res: ServerResponse,
    pending: PendingCall,
    answer: unknown,
    sessionId: string,
    release: () => void,
  ): void {
    const { request } = pending;
    const params: Params =
      typeof request.params === 'object' && request.params !== null ? (request.params as Params) : {};
    noteTakenOver(params, this.options.resume!.calls.auditSession);
    const takeover: Takeover = {
      question: pending.question,
      ...(isAnswer(answer) && { answer }),
    };
    this.takeovers.set(request.id, takeover);
    this.byQuestion.set(pending.question, request.id);
    this.openStream(res, request.id, sessionId).prime();
    res.once('close', () => {
      release();
      this.byQuestion.delete(pending.question);
      this.takeovers.delete(request.id);
    });
    const message: PlainRequest = { jsonrpc: '2.0', id: request.id, method: request.method, params };
    this.inner.onmessage?.(message as unknown as JSONRPCMessage);
  }

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
      if (isRequest(message) && message.method === 'elicitation/create' && isOwnQuestion(message.params))
        return this.confirmationOf(related!.relatedRequestId, message.id as number, sent, stream);
      stream.event(serializeMessage(sent));
      return Promise.resolve();
    }
    return this.inner.send(sent as unknown as JSONRPCMessage, related);
  }

  /**
   * Puts the gateway's own confirmation of call `requestId` to the host. With resumable calls it
   * is recorded in the store first, so another replica can take the call over should this one
   * die while the user decides; a confirmation that cannot be recorded is not asked (the call
   * fails closed). In a call taken over, it is not sent at all: the host already has it.
   */
  private confirmationOf(
    requestId: RequestId,
    questionId: number,
    sent: JsonRpcMessage,
    stream: AnswerStream,
  ): Promise<void> {
    const takeover = this.takeovers.get(requestId);
    if (takeover !== undefined) {
      takeover.asked = questionId;
      this.answerTakenOver(takeover);
      return Promise.resolve();
    }
    const { resume } = this.options;
    const request = this.requests.get(requestId);
    const session = this.inner.sessionId;
    if (resume === undefined || request === undefined || session === undefined) {
      stream.event(serializeMessage(sent));
      return Promise.resolve();
    }
    const entry: PendingCall = {
      request: {
        id: request.id,
        method: request.method,
        ...(request.params !== undefined && { params: request.params }),
      },
      question: String((sent as { id: unknown }).id),
      owner: resume.owner,
      askedBy: resume.calls.auditSession,
      expiresAt: Date.now() + resume.calls.waitMs,
    };
    return resume.calls.record(session, entry).then(
      () => {
        this.recorded.set(questionId, requestId);
        stream.event(serializeMessage(sent));
      },
      (error: unknown) => {
        throw new Error(
          `the confirmation could not be recorded in the shared store, so it was not asked: ${(error as Error).message}`,
        );
      },
    );
  }

  /** Forgets the request `id` as open, and takes its own answer stream, when it has one. */
  private answered(id: RequestId): AnswerStream | undefined {
    this.open.delete(id);
    this.owed.delete(id);
    if (this.requests.delete(id) && this.recorded.size > 0)
      for (const [question, call] of this.recorded) if (call === id) this.recorded.delete(question);
    const stream = this.streams.get(id);
    if (stream !== undefined) this.streams.delete(id);
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
    this.requests.clear();
    this.recorded.clear();
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

/** Whether `value`, as the store kept it, is a host's answer (a JSON-RPC response). */
function isAnswer(value: unknown): value is JsonRpcMessage {
  return typeof value === 'object' && value !== null && isResponse(value as JsonRpcMessage);
}

/** A POST's one request, in the shape `isPlainRequest` admits. */
interface PlainRequest {
  readonly jsonrpc: '2.0';
  readonly id: RequestId;
  readonly method: string;
  readonly params?: Record<string, unknown>;
}

const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * Whether this POST is one request this class answers itself: headers the SDK's transport would
 * accept as they are (Accept naming both JSON and SSE, a JSON Content-Type, a protocol version
 * it supports or none), and a body its schema would take unchanged (a JSON-RPC request with only
 * the four members, an integer or string id, params an object whose `_meta` holds a valid
 * progress token or none, and no task member the schema would rewrite). Anything else goes to
 * the SDK, which refuses or takes it as it always did.
 */
function isPlainRequest(req: IncomingMessage, body: unknown): body is PlainRequest {
  const { accept, 'content-type': type, 'mcp-protocol-version': version } = req.headers;
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream'))
    return false;
  if (type === undefined || !JSON_TYPE.test(type)) return false;
  if (
    version !== undefined &&
    (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
  )
    return false;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const { jsonrpc, id, method, params } = body as Record<string, unknown>;
  if (jsonrpc !== '2.0' || typeof method !== 'string' || method === 'initialize') return false;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return false;
  for (const key in body) if (!REQUEST_KEYS.has(key)) return false;
  if (params === undefined) return true;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return false;
  const meta = (params as { _meta?: unknown })._meta;
  if (meta === undefined) return true;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return false;
  const token = (meta as { progressToken?: unknown }).progressToken;
  if (token !== undefined && typeof token !== 'string' && !Number.isSafeInteger(token)) return false;
  return !(RELATED_TASK in meta);
}

/** A Content-Type whose media type is JSON, whatever its parameters. */
const JSON_TYPE = /^application\/json\s*(;|$)/i;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

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
