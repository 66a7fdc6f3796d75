import type { IncomingHttpHeaders } from 'node:http';
import { hasEnvelope, INVALID_ENVELOPE, META } from '../core/protocol/envelope.js';
import { decodeHeaderValue, MCP_NAME_PARAM } from '../core/protocol/httpHeaders.js';
import { holderOf, STATE_PREFIX } from '../core/tasks/inputBridge.js';
import { paramHeaderMismatch, paramHeadersOf } from '../core/protocol/paramHeaders.js';
import type { Logger } from '../core/logger.js';
import { principalKey, type Principal } from '../core/principal.js';
import { EncodedResult } from '../core/rpc/encoded.js';
import {
  isNotification,
  isResponse,
  RpcErrorCode,
  serializeMessage,
  type JsonRpcMessage,
  type JsonRpcResponse,
  type Params,
} from '../core/protocol/jsonRpc.js';
import type { MessageTransport, OutgoingMessage } from '../core/rpc/transport.js';
import type { ServedConnection, StatelessDispatch, StatelessRequest } from './listener.js';
import { retryAfterOf } from './replies.js';
import type { RelayedRetry, Reply, RetryRelay } from './retryRelay.js';
import { Sweeper } from './sweeper.js';

/** The revision's code for headers that are missing, malformed or disagree with the body. */
export const HEADER_MISMATCH = -32020;

/**
 * HTTP statuses the stateless revision gives some JSON-RPC errors, so a client (or a balancer)
 * can tell a modern server's refusal from a legacy server's 400/404 without reading the body.
 * Every other answer, errors included, is 200.
 */
const STATUS_FOR_CODE: ReadonlyMap<number, number> = new Map([
  [HEADER_MISMATCH, 400],
  [-32021, 400], // a required client capability is missing
  [-32022, 400], // unsupported protocol version
  [RpcErrorCode.MethodNotFound, 404],
  [RpcErrorCode.InvalidRequest, 400],
  [RpcErrorCode.ParseError, 400],
]);

/** How often a quiet response stream gets an SSE comment, so proxies and clients keep it open. */
const KEEP_ALIVE_MS = 15_000;

export interface StatelessOptions {
  /** A connection for one request; `profile`: the one its path named (`/mcp/<profile>`). */
  readonly connect: (transport: MessageTransport, principal: Principal, profile?: string) => ServedConnection;
  readonly logger: Logger;
  /** Comment interval on open response streams (default 15 s). */
  readonly keepAliveMs?: number;
  /**
   * Replicas share continuations through a store: a retry whose call does not wait here is
   * served on a new connection, whose bridge asks the store (see ModernInputBridge).
   */
  readonly sharedContinuations?: boolean;
  /**
   * Replicas sharing a store: a retry whose call only its replica can continue (a server asked
   * during it) is sent on to that replica, and its answer brought back.
   */
  readonly relay?: RetryRelay;
}

/**
 * Connections kept open after their answer because a call in them waits for the host's retry
 * (an InputRequiredResult the gateway itself issued), at most this many per principal and in all.
 */
const MAX_PARKED_PER_PRINCIPAL = 32;
const MAX_PARKED = 1_000;

/**
 * Connections whose request was answered, kept for a later request they can serve as a new one
 * would: at most this many for one principal and envelope, this many in all, each for this long.
 */
const MAX_IDLE_PER_KEY = 4;
const MAX_IDLE = 256;
const IDLE_MS = 10_000;

interface Parked {
  readonly key: string;
  readonly connection: ServedConnection;
  readonly transport: StatelessTransport;
  timer: NodeJS.Timeout | undefined;
  /** What a request must match to be served on this connection once it is idle (see reuseKey). */
  reuse: string | undefined;
  /** When it was last kept idle (see IdleConnections). */
  keptAt: number;
}

/**
 * Serves the stateless revision (2026-07-28) on the HTTP listener: each POST without a session
 * is one host connection of the gateway, so the same code that serves a modern host on stdio
 * (the era decided by the request's envelope) serves it here, and any replica can answer.
 *
 * The answer is one JSON object, or, once the request has something to say before it (progress,
 * log messages, the notifications of a `subscriptions/listen` stream) and the client accepts it,
 * an SSE stream scoped to the request that ends with the answer. Closing that stream cancels the
 * request. `Mcp-Method`, `Mcp-Name` and `MCP-Protocol-Version`, which let a balancer route
 * without reading the body, must be present and agree with the body, or the request is refused
 * with 400 and HeaderMismatch before anything runs.
 *
 * A call that needs the host's answer (the gateway's own confirmation, or a legacy upstream
 * asking) answers with an InputRequiredResult while the call itself keeps running: its
 * connection is then kept, bound to the principal and for as long as the call waits, and the
 * host's retry (a new POST carrying the sealed `requestState`) is served on it.
 *
 * Closing it closes the connections it keeps, idle or parked: a parked call ends as it would
 * with its connection, and its retry is then refused as any retry whose call does not wait.
 */
export function createStatelessDispatch(options: StatelessOptions): StatelessDispatch {
  const context: Dispatch = {
    options,
    keepAliveMs: options.keepAliveMs ?? KEEP_ALIVE_MS,
    parked: new ParkedConnections(options.logger),
    idle: new IdleConnections(),
    closed: false,
  };
  void options.relay?.listen((retry, reply) => {
    continueRelayed(context, retry, reply).catch((error: unknown) => {
      options.logger.warn(
        `a retry sent on from replica ${retry.from} failed here: ${(error as Error).message}`,
      );
      if (!reply.writableEnded) reply.end();
    });
  });
  // The relay has no way to stop listening: the store's own close ends that. A retry it brings
  // after this dispatcher closed finds no call parked, and is refused as not waiting.
  return {
    serve: (request) => dispatch(context, request),
    stopAccepting: () => void context.idle.close(),
    async close() {
      context.closed = true;
      await Promise.all([context.idle.close(), context.parked.close()]);
    },
  };
}

interface Dispatch {
  readonly options: StatelessOptions;
  readonly keepAliveMs: number;
  readonly parked: ParkedConnections;
  readonly idle: IdleConnections;
  /** Closed with the listener: a request that still comes is refused, not given a connection. */
  closed: boolean;
}

/** What a request that comes after the listener closed is told (with 503). */
const SHUTTING_DOWN =
  'mcp-warden is shutting down; send the request again (to another replica, if there is one)';

type StatelessMessage = JsonRpcMessage & { method: string; id?: unknown; params?: Params };

/** One POST: checked, then served on the connection its call waits on, or on a new one. */
async function dispatch(
  context: Dispatch,
  { req, res, body, principal, profile }: StatelessRequest,
): Promise<void> {
  const { options, parked } = context;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('method' in body))
    return refuse(
      res,
      RpcErrorCode.InvalidRequest,
      'expected one JSON-RPC request or notification as the body',
    );
  const message = body as StatelessMessage;
  if (context.closed) return sendError(res, 503, message.id, RpcErrorCode.InternalError, SHUTTING_DOWN);
  const isRequest = message.id !== undefined;
  // The revision defines header rules for requests only; a notification POST is taken as it is.
  const mismatch = isRequest ? headerMismatch(req.headers, message.method, message.params) : undefined;
  if (mismatch !== undefined) {
    options.logger.warn(`refused a stateless HTTP request: ${mismatch}`);
    return refuse(res, HEADER_MISMATCH, `Header mismatch: ${mismatch}`, message.id);
  }
  const key = principalKey(principal);
  const requestState = message.params?.requestState;
  const waiting = isRequest ? parked.claim(key, requestState) : undefined;
  const holder = waiting === undefined && isRequest ? holderOf(requestState) : undefined;
  const { relay } = options;
  if (holder !== undefined && relay !== undefined) {
    // Only the replica holding the call can continue it: there, or sent on to it. Not run
    // afresh here, nor let its shared record be taken by a retry that cannot continue it.
    if (holder === relay.replica)
      return answerError(res, message.id, RpcErrorCode.InvalidParams, notWaitingOn(holder));
    return sendOn(context, relay, holder, { req, res, message, key });
  }
  if (
    waiting === undefined &&
    options.sharedContinuations !== true &&
    typeof requestState === 'string' &&
    requestState.startsWith(STATE_PREFIX)
  )
    return answerError(
      res,
      message.id,
      RpcErrorCode.InvalidParams,
      'requestState refused: the call it continues is not waiting here (it has ended, its wait expired, it belongs to another principal, or this is another replica: with several replicas, route a principal to one, for instance by its Authorization header)',
    );
  // An initialize is answered by what a new connection has not yet decided (its era).
  const reuse =
    isRequest && message.method !== 'initialize' ? reuseKey(principal, profile, message.params) : undefined;
  const entry =
    waiting ??
    (reuse === undefined ? undefined : context.idle.take(reuse)) ??
    (await connect(context, key, principal, profile));
  if (waiting === undefined) entry.reuse = reuse;
  const { transport, connection } = entry;
  // Arguments mirrored into Mcp-Param-* headers are checked against the tool this connection
  // lists, so the check needs the connection; a refused request runs nothing.
  const paramMismatch = isRequest ? mirroredParamMismatch(req.headers, message, connection) : undefined;
  if (paramMismatch !== undefined) {
    options.logger.warn(`refused a stateless HTTP request: ${paramMismatch}`);
    refuse(res, HEADER_MISMATCH, `Header mismatch: ${paramMismatch}`, message.id);
    if (waiting === undefined) await connection.close();
    else parked.parkOrClose(entry);
    return;
  }
  if (!isRequest) {
    transport.onmessage?.(message);
    res.writeHead(202).end();
    await connection.close();
    return;
  }
  await serveRequest(acceptsEventStream(req.headers.accept), res, message, entry, context);
}

/** The refusal of a retry whose call does not wait on `replica`, which would hold it. */
function notWaitingOn(replica: string): string {
  return `requestState refused: the call it continues is not waiting on replica ${replica}, which holds it (it has ended, its wait expired, it was already continued, or it belongs to another principal)`;
}

/**
 * Serves on this replica a retry another replica took and sent on: exactly as if the host had
 * sent it here (the principal's own parked call, the same checks), with the answer going back.
 */
async function continueRelayed(context: Dispatch, retry: RelayedRetry, reply: Reply): Promise<void> {
  const { options, parked } = context;
  const message = retry.body as StatelessMessage;
  const requestState = message.params?.requestState;
  const waiting = parked.claim(retry.principal, requestState);
  if (waiting === undefined)
    return answerError(reply, message.id, RpcErrorCode.InvalidParams, notWaitingOn(options.relay!.replica));
  const paramMismatch = mirroredParamMismatch(retry.headers, message, waiting.connection);
  if (paramMismatch !== undefined) {
    options.logger.warn(
      `refused a stateless HTTP request sent on from replica ${retry.from}: ${paramMismatch}`,
    );
    refuse(reply, HEADER_MISMATCH, `Header mismatch: ${paramMismatch}`, message.id);
    parked.parkOrClose(waiting);
    return;
  }
  waiting.connection.noteContinuedVia(requestState, retry.from);
  options.logger.info(
    `a host's retry reached replica ${retry.from}, which sent it on: its call continues here`,
  );
  await serveRequest(acceptsEventStream(retry.headers.accept), reply, message, waiting, context);
}

/** The headers the replica holding a call checks a retry by, sent on with it. */
function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined && (name === 'accept' || name.startsWith('mcp-param-')))
      kept[name] = Array.isArray(value) ? value.join(', ') : value;
  return kept;
}

/**
 * Sends a retry on to `holder`, the replica its call waits on, and writes the answer that comes
 * back on the host's response; says the call was lost with its replica when that one is gone or
 * falls silent. The host closing the response cancels the call there.
 */
function sendOn(
  { options }: Dispatch,
  relay: RetryRelay,
  holder: string,
  {
    req,
    res,
    message,
    key,
  }: { req: StatelessRequest['req']; res: Reply; message: StatelessMessage; key: string },
): Promise<void> {
  return new Promise<void>((resolve) => {
    let streaming = false;
    const sent = relay.sendOn(
      holder,
      { principal: key, body: message, headers: forwardedHeaders(req.headers) },
      {
        head: (status, headers) => {
          streaming = String(headers['Content-Type'] ?? headers['content-type']).startsWith(
            'text/event-stream',
          );
          res.writeHead(status, headers);
        },
        chunk: (text) => res.write(text),
        end: (text) => {
          options.logger.info(
            `a host's retry was sent on to replica ${holder}, which holds its call, and answered from there`,
          );
          res.end(text);
          resolve();
        },
        lost: (why) => {
          const lost = `the call this requestState continues was lost with replica ${holder}, which held it: ${why}; call again`;
          options.logger.warn(`a host's retry could not be served: ${lost}`);
          const text = JSON.stringify({
            jsonrpc: '2.0',
            id: message.id ?? null,
            error: { code: RpcErrorCode.InternalError, message: lost },
          });
          if (streaming) res.end(`event: message\ndata: ${text}\n\n`);
          else if (!res.writableEnded) answerError(res, message.id, RpcErrorCode.InternalError, lost);
          resolve();
        },
      },
    );
    res.once('close', () => {
      sent.cancel();
      resolve();
    });
  });
}

/** A new host connection of the gateway for one request (and the retries that continue its call). */
async function connect(
  context: Dispatch,
  key: string,
  principal: Principal,
  profile: string | undefined,
): Promise<Parked> {
  const transport = new StatelessTransport({
    keepAliveMs: context.keepAliveMs,
    logger: context.options.logger,
  });
  const connection = context.options.connect(transport, principal, profile);
  // The audit trail is written before any answer leaves, as on every other transport.
  transport.beforeWrite = () => connection.beforeWrite();
  await transport.start();
  return { key, connection, transport, timer: undefined, reuse: undefined, keptAt: 0 };
}

/** Serves a request on its connection until answered, then keeps the connection or ends it. */
async function serveRequest(
  acceptsStream: boolean,
  res: Reply,
  message: StatelessMessage,
  entry: Parked,
  { parked, idle }: Dispatch,
): Promise<void> {
  const { transport, connection } = entry;
  // Closing the response before the answer is how this revision cancels a request: it takes
  // the same path as a cancellation on stdio (upstream calls are cancelled, a listen stream
  // gives back its subscriptions), then the connection ends.
  let cancelled = false;
  const answered = transport.serve(message.id, res, acceptsStream, () => {
    cancelled = true;
    transport.onmessage?.({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: message.id, reason: 'the client closed the response stream' },
    } as JsonRpcMessage);
  });
  transport.onmessage?.(message);
  await answered;
  if (cancelled) await connection.close();
  else parked.parkOrClose(entry, (done) => idle.keepOrClose(done));
}

/** Connections kept after their answer because a call in them waits for the host's retry. */
class ParkedConnections {
  private readonly parked = new Map<string, Set<Parked>>();
  private count = 0;
  private closed = false;

  constructor(private readonly logger: Logger) {}

  /**
   * Keeps `entry` for its retry, or closes it when no room is left; when nothing in it waits,
   * hands it to `settled` (by default, closes it).
   */
  parkOrClose(entry: Parked, settled: (entry: Parked) => void = closeEntry): void {
    if (this.closed) return closeEntry(entry);
    const window = entry.connection.retryWindowMs();
    if (window === undefined || window <= 0) {
      settled(entry);
      return;
    }
    const own = this.parked.get(entry.key) ?? new Set<Parked>();
    if (own.size >= MAX_PARKED_PER_PRINCIPAL || this.count >= MAX_PARKED) {
      this.logger.warn(
        `a call waits for its host's retry, but ${own.size >= MAX_PARKED_PER_PRINCIPAL ? `this principal already has ${MAX_PARKED_PER_PRINCIPAL}` : `${MAX_PARKED} in all`} are waiting: it is ended, and its retry will be refused`,
      );
      void entry.connection.close();
      return;
    }
    own.add(entry);
    this.parked.set(entry.key, own);
    this.count++;
    // Woken when the wait is over: the bridge has failed the questions by then, and the call has
    // run on without answers; a connection that still waits (asked again) is kept for longer.
    entry.timer = setTimeout(() => {
      this.unpark(entry);
      this.parkOrClose(entry);
    }, window + 50);
    entry.timer.unref();
  }

  /** The parked connection `requestState` belongs to, taken out of the table. */
  claim(key: string, requestState: unknown): Parked | undefined {
    for (const entry of this.parked.get(key) ?? [])
      if (entry.connection.continuesCall(requestState)) {
        this.unpark(entry);
        return entry;
      }
    return undefined;
  }

  /**
   * Closes every parked connection, which ends its call as a closed connection does, and parks
   * none from now on (a connection answered later is closed).
   */
  close(): Promise<void> {
    this.closed = true;
    const all = [...this.parked.values()].flatMap((own) => [...own]);
    for (const entry of all) this.unpark(entry);
    return closeAll(all);
  }

  private unpark(entry: Parked): void {
    const own = this.parked.get(entry.key);
    if (own === undefined || !own.delete(entry)) return;
    this.count--;
    if (own.size === 0) this.parked.delete(entry.key);
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    entry.timer = undefined;
  }
}

function closeEntry(entry: Parked): void {
  void entry.connection.close();
}

async function closeAll(entries: readonly Parked[]): Promise<void> {
  await Promise.all(entries.map((entry) => entry.connection.close()));
}

/**
 * Connections whose request was answered and in which nothing waits, kept a short while for the
 * next request of the same principal with the same envelope. Building a host connection (its
 * peer, router, host session and tool view) and closing it again was, after the socket writes,
 * the largest cost of a stateless request; a host sending one call after another now pays it
 * once. A kept connection serves one request at a time, as a new one would: it is taken out
 * while it serves, and only a request it would have been built the same for takes it (see
 * `reuseKey`). Bounded per principal and envelope and in all, the longest unused going first;
 * each is closed once unused for IDLE_MS (up to a second more).
 */
class IdleConnections {
  /** By reuse key, in the order the keys were last given a connection back. */
  private readonly idle = new Map<string, Parked[]>();
  private count = 0;
  /** Once the listener stops accepting, nothing is kept: no next request is expected. */
  private closed = false;
  /** One timer for all that are kept, rather than one made and cleared per request. */
  private readonly expiry = new Sweeper<Parked>(1000, (entry, now) => {
    if (now - entry.keptAt >= IDLE_MS && entry.reuse !== undefined) this.drop(entry.reuse, entry);
  });

  /** An idle connection for a request with this reuse key, taken out; undefined when none. */
  take(reuse: string): Parked | undefined {
    const list = this.idle.get(reuse);
    const entry = list?.pop();
    if (entry === undefined) return undefined;
    if (list!.length === 0) this.idle.delete(reuse);
    this.count--;
    this.expiry.delete(entry);
    return entry;
  }

  /** Keeps `entry` for the next request with its reuse key, or closes it. */
  keepOrClose(entry: Parked): void {
    const reuse = entry.reuse;
    const list = reuse === undefined ? undefined : (this.idle.get(reuse) ?? []);
    if (this.closed || reuse === undefined || list === undefined || list.length >= MAX_IDLE_PER_KEY) {
      closeEntry(entry);
      return;
    }
    if (this.count >= MAX_IDLE) this.dropOldest();
    // Last in the map: the key given a connection back most recently is dropped last.
    this.idle.delete(reuse);
    this.idle.set(reuse, list);
    list.push(entry);
    this.count++;
    entry.keptAt = Date.now();
    this.expiry.add(entry);
  }

  /** Closes every connection kept, stops the timer, and keeps none from now on. */
  close(): Promise<void> {
    this.closed = true;
    this.expiry.stop();
    const all = [...this.idle.values()].flat();
    this.idle.clear();
    this.count = 0;
    return closeAll(all);
  }

  private dropOldest(): void {
    const first = this.idle.entries().next();
    if (first.done === true) return;
    const [reuse, list] = first.value;
    const oldest = list[0];
    if (oldest !== undefined) this.drop(reuse, oldest);
  }

  private drop(reuse: string, entry: Parked): void {
    const list = this.idle.get(reuse);
    const at = list?.indexOf(entry) ?? -1;
    if (list === undefined || at < 0) return;
    list.splice(at, 1);
    if (list.length === 0) this.idle.delete(reuse);
    this.count--;
    this.expiry.delete(entry);
    closeEntry(entry);
  }
}

/** Each principal's part of the reuse key, made once per principal object. */
const principalTexts = new WeakMap<Principal, string>();

/**
 * What a request must share with the one a kept connection was built for to be served on it:
 * the whole principal (claims included, so a token with other claims gets its own connection),
 * the profile, and the envelope's client capabilities and identity, which a connection takes
 * from its requests. Undefined for a request without the envelope: only an enveloped request
 * (other than an initialize) finds a connection in the same state whether it is new or kept.
 */
function reuseKey(
  principal: Principal,
  profile: string | undefined,
  params: Params | undefined,
): string | undefined {
  if (!hasEnvelope(params)) return undefined;
  let who = principalTexts.get(principal);
  if (who === undefined) {
    who = JSON.stringify(principal);
    principalTexts.set(principal, who);
  }
  const meta = params!._meta as Record<string, unknown>;
  return `${who}\u0000${profile ?? ''}\u0000${JSON.stringify(meta[META.clientCapabilities] ?? null)}\u0000${JSON.stringify(meta[META.clientInfo] ?? null)}`;
}

function acceptsEventStream(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*(text\/event-stream|text\/\*|\*\/\*)\s*(;|,|$)/i.test(accept);
}

/** Why the mirrored headers do not vouch for this request, or undefined when they do. */
function headerMismatch(headers: IncomingHttpHeaders, method: string, params: unknown): string | undefined {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const bodyVersion = meta?.[META.protocolVersion];
  const headerVersion = headers['mcp-protocol-version'];
  if (typeof bodyVersion === 'string' && headerVersion === undefined)
    return `the MCP-Protocol-Version header is missing (the body's _meta says ${JSON.stringify(bodyVersion)})`;
  if (typeof bodyVersion === 'string' && headerVersion !== bodyVersion)
    return `the MCP-Protocol-Version header says ${JSON.stringify(headerVersion)} but the body's _meta says ${JSON.stringify(bodyVersion)}`;
  const headerMethod = headers['mcp-method'];
  if (headerMethod === undefined)
    return `the Mcp-Method header is missing (the body's method is ${JSON.stringify(method)})`;
  if (headerMethod !== method)
    return `the Mcp-Method header says ${JSON.stringify(headerMethod)} but the body's method is ${JSON.stringify(method)}`;
  const key = MCP_NAME_PARAM[method];
  if (key === undefined) return undefined;
  const bodyName = (params as Record<string, unknown> | undefined)?.[key];
  const rawName = headers['mcp-name'];
  if (typeof rawName !== 'string')
    return `the Mcp-Name header is missing (the body's params.${key} is ${JSON.stringify(bodyName)})`;
  const headerName = decodeHeaderValue(rawName);
  if (headerName === undefined) return `the Mcp-Name header's Base64 value cannot be decoded`;
  if (headerName !== bodyName)
    return `the Mcp-Name header says ${JSON.stringify(headerName)} but the body's params.${key} is ${JSON.stringify(bodyName)}`;
  return undefined;
}

/** Why a call's Mcp-Param-* headers do not match its arguments (see paramHeaders). */
function mirroredParamMismatch(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  message: { method: string; params?: Params },
  connection: ServedConnection,
): string | undefined {
  if (message.method !== 'tools/call' || typeof message.params?.name !== 'string') return undefined;
  const mirrored = paramHeadersOf(connection.toolInputSchema(message.params.name));
  // A tool whose annotations break the rules has no mirrored arguments a host could send.
  if (!('headers' in mirrored) || mirrored.headers.length === 0) return undefined;
  return paramHeaderMismatch(mirrored.headers, message.params.arguments, (name) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  });
}

function refuse(res: Reply, code: number, message: string, id: unknown = null): void {
  sendError(res, 400, id, code, message);
}

/** A JSON-RPC error answer that is not a refusal of the HTTP request itself: status 200. */
function answerError(res: Reply, id: unknown, code: number, message: string): void {
  sendError(res, 200, id, code, message);
}

function sendError(res: Reply, status: number, id: unknown, code: number, message: string): void {
  const text = JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Where the answer to one request goes: its HTTP response, as JSON or as an SSE stream. */
class ResponseSink {
  private streaming = false;
  private keepAlive: NodeJS.Timeout | undefined;
  dropped = 0;
  readonly done: Promise<void>;
  private settle!: () => void;

  constructor(
    readonly res: Reply,
    readonly acceptsStream: boolean,
    private readonly keepAliveMs: number,
  ) {
    this.done = new Promise((resolve) => (this.settle = resolve));
  }

  get open(): boolean {
    return !this.res.writableEnded && !this.res.destroyed;
  }

  /** Writes a notification about the request, opening the SSE stream first if need be. */
  event(text: string): void {
    if (!this.streaming) {
      this.streaming = true;
      this.res.writeHead(200, {
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-cache',
        // Proxies such as nginx would otherwise hold the events back until the stream ends.
        'X-Accel-Buffering': 'no',
      });
      this.keepAlive = setInterval(() => this.res.write(':\n\n'), this.keepAliveMs);
      this.keepAlive.unref();
    }
    this.res.write(`event: message\ndata: ${text}\n\n`);
  }

  answer(text: string, status: number, retryAfterSeconds?: number): void {
    if (this.streaming) this.res.end(`event: message\ndata: ${text}\n\n`);
    else {
      this.res.writeHead(status, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(text),
        ...(retryAfterSeconds !== undefined && { 'Retry-After': String(retryAfterSeconds) }),
      });
      this.res.end(text);
    }
    this.finish();
  }

  finish(): void {
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    if (this.streaming && this.open) this.res.end();
    this.settle();
  }
}

/**
 * A stateless connection's side: each request it serves has its own HTTP response, which its
 * answer ends. Notifications all concern the request being served (the connection serves one at
 * a time: the first, then the retries that continue its call), so they go on that request's
 * SSE stream when the client accepts one, and are dropped, with a note in the log, when it does
 * not. Requests to the host are never sent this way: a host of this revision is asked through
 * Multi Round-Trip Requests.
 */
class StatelessTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  beforeWrite?: () => void;
  private readonly sinks = new Map<unknown, ResponseSink>();
  /** The request being served: where notifications go. */
  private current: ResponseSink | undefined;

  constructor(private readonly options: { readonly keepAliveMs: number; readonly logger: Logger }) {}

  start(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Serves the request `id` on `res`; settles once it is answered or its response is gone.
   * `abandoned` is called when the response closes before the request was answered (one
   * listener per request does both).
   */
  serve(id: unknown, res: Reply, acceptsStream: boolean, abandoned: () => void): Promise<void> {
    const sink = new ResponseSink(res, acceptsStream, this.options.keepAliveMs);
    this.sinks.set(id, sink);
    this.current = sink;
    res.once('close', () => {
      if (this.sinks.get(id) !== sink) return;
      abandoned();
      this.release(id, sink);
    });
    return sink.done;
  }

  send(outgoing: OutgoingMessage): Promise<void> {
    if (outgoing instanceof EncodedResult) {
      const sink = this.sinks.get(outgoing.id);
      if (sink?.open) {
        this.beforeWrite?.();
        sink.answer(`{"jsonrpc":"2.0","id":${JSON.stringify(outgoing.id)},"result":${outgoing.text}}`, 200);
      }
      this.release(outgoing.id, sink);
      return Promise.resolve();
    }
    if (isResponse(outgoing)) {
      const sink = this.sinks.get(outgoing.id);
      if (sink?.open) {
        this.beforeWrite?.();
        const retryAfter = retryAfterOf(outgoing);
        sink.answer(
          serializeMessage(outgoing),
          retryAfter === undefined ? statusOf(outgoing) : 429,
          retryAfter,
        );
      }
      this.release(outgoing.id, sink);
      return Promise.resolve();
    }
    const sink = this.current;
    if (sink === undefined || !sink.open) return Promise.resolve();
    if (isNotification(outgoing) && sink.acceptsStream) {
      this.beforeWrite?.();
      sink.event(serializeMessage(outgoing));
    } else sink.dropped++;
    return Promise.resolve();
  }

  close(): Promise<void> {
    for (const [id, sink] of [...this.sinks]) this.release(id, sink);
    this.onclose?.();
    return Promise.resolve();
  }

  private release(id: unknown, sink: ResponseSink | undefined): void {
    if (sink === undefined || this.sinks.get(id) !== sink) return;
    this.sinks.delete(id);
    if (this.current === sink) this.current = undefined;
    if (sink.dropped > 0)
      this.options.logger.info(
        `a stateless HTTP request's ${sink.dropped} notification(s) were dropped: its client does not accept text/event-stream`,
      );
    sink.finish();
  }
}

function statusOf(response: JsonRpcResponse): number {
  if (!('error' in response)) return 200;
  const { code, message } = response.error;
  // A malformed envelope is a malformed request, whatever code the revision gives it.
  if (code === RpcErrorCode.InvalidParams && message.startsWith(INVALID_ENVELOPE)) return 400;
  return STATUS_FOR_CODE.get(code) ?? 200;
}
