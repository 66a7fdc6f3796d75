/*
 * The whole HTTP edge in one place: the routes, the DNS-rebinding checks, authentication and
 * body bounds, so that every request passes the same checks in the same order. The sessions
 * live in sessionTable.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopback } from '../config/team.js';
import type { AuthConfig, ListenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import { ANONYMOUS, type Principal } from '../core/principal.js';
import { hasEnvelope } from '../core/protocol/envelope.js';
import { HOST_MAX_DEPTH, nestingExceeds, type Params } from '../core/protocol/jsonRpc.js';
import type { MessageTransport } from '../core/rpc/transport.js';
import type { SubjectTokens } from '../core/subjectTokens.js';
import type { ResumableCalls } from './resumableCalls.js';
import type { RetryRelay } from './retryRelay.js';
import type { AnswerRelay } from './answerRelay.js';
import { AuthRefusal, createTokenVerifier, type TokenVerifier } from './auth.js';
import type { FrontDoor } from './frontDoor/frontDoor.js';
import { sendJson, sendRpcError } from './replies.js';
import { createSessionIds, type SessionIds } from './sessionIds.js';
import {
  SessionTable,
  type ServedConnection,
  type SessionRecords,
  type SessionTableOptions,
} from './sessionTable.js';
import { quietStreams, type AnswerStream } from './answerStream.js';
import { BodyReads, SlowBodyError } from './bodyReads.js';
import type { Sweeper } from './sweeper.js';

export type { ServedConnection } from './sessionTable.js';

export interface ListenerOptions {
  readonly listen: ListenConfig;
  readonly auth?: AuthConfig;
  /** `gateway.maxMessageSize`: the bound on a POST body. */
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  /**
   * Serves one more host connection made by `principal` (`Gateway.connect`); `profile`: the one
   * its path named (`/mcp/<profile>`).
   */
  readonly connect: (transport: MessageTransport, principal: Principal, profile?: string) => ServedConnection;
  /** The names of `profiles:`: each is served at `/mcp/<name>` too. */
  readonly profiles?: ReadonlySet<string>;
  /** Whether the gateway is ready to serve: config loaded, upstreams' first start settled. */
  readonly ready: () => boolean;
  /**
   * Requests without a session that are not an initialize: the stateless protocol revision
   * (2026-07-28, each request carries its own envelope and `Mcp-Method` header) is dispatched
   * here. Absent: they are refused with 400, as a 2025-11-25 server does.
   */
  readonly stateless?: StatelessDispatch;
  /** Names this replica in session ids (default random). */
  readonly replica?: string;
  /** `auth.frontDoor`: the gateway's own authorization server, whose tokens are accepted too. */
  readonly frontDoor?: FrontDoor;
  /**
   * Given each verified request's bearer token, for exchanging it at the identity provider for
   * an upstream's own (token exchange); the token goes nowhere else.
   */
  readonly subjectTokens?: Pick<SubjectTokens, 'remember'>;
  /** Sessions shared with the other replicas (a store); absent: each lives on its replica. */
  readonly sessionRecords?: SessionRecords;
  /**
   * Carries the hosts' answers to the replica whose request they answer (a store); its tag
   * names this replica in session ids too. Absent: an answer is taken where it lands.
   */
  readonly relay?: AnswerRelay;
  /** With `relay`: calls' streams resume on any replica, and a dead replica's confirmations are taken over. */
  readonly resumable?: ResumableCalls;
  /** With `resumable`: a stream resumed here of a call another replica runs is relayed from it. */
  readonly streamRelay?: RetryRelay;
  /** Audits a request refused because the session it names is another principal's. */
  readonly record?: SessionTableOptions['record'];
}

/** A request without a session, already authenticated and parsed, for the stateless dispatcher. */
export interface StatelessRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly body: unknown;
  readonly principal: Principal;
  /** The profile the request's path named (`/mcp/<profile>`). */
  readonly profile?: string;
}

/**
 * Serves the stateless requests (see createStatelessDispatch) and keeps connections between
 * them, which the listener's `stopAccepting` and `close` reach too.
 */
export interface StatelessDispatch {
  serve(request: StatelessRequest): Promise<void>;
  /** Keeps no more connections for reuse, and closes those kept; calls in flight go on. */
  stopAccepting(): void;
  /** Closes every connection it keeps; a request that still comes is refused with 503. */
  close(): Promise<void>;
}

export interface Listener {
  /** The /mcp URL, with the port actually bound. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections; requests already in flight go on. */
  stopAccepting(): void;
  /** Closes every session and connection that is left. */
  close(): Promise<void>;
}

/** How long a client has to send a request's headers, and the whole request. */
const HEADERS_TIMEOUT_MS = 30_000;
const REQUEST_TIMEOUT_MS = 120_000;

/**
 * What every request is handled with: the options, the verifier, the sessions, the bound port,
 * and this listener's own timers for request bodies and answer streams.
 */
interface Edge {
  readonly options: ListenerOptions;
  readonly verifier: TokenVerifier | undefined;
  readonly sessions: SessionTable;
  /** The request bodies being read, given up when one pauses too long. */
  readonly bodies: BodyReads;
  /** The answer streams open, each written a keep-alive comment when it has been quiet long. */
  readonly quiet: Sweeper<AnswerStream>;
  /** The port bound (known once listening; the configured one until then). */
  port: number;
  /** The Host values and Origins naming this listener itself, made once the port is bound. */
  own: OwnNames;
}

/** What a request's Host or Origin may say to name this listener (see `rebindingProblem`). */
interface OwnNames {
  /** `name:port` for the listen address and each loopback name. */
  readonly hosts: ReadonlySet<string>;
  /** `http://name:port` for the same names, then `listen.allowedOrigins`. */
  readonly origins: ReadonlySet<string>;
  /**
   * Whether the Host is checked: behind a load balancer the Host is a public name, so it is
   * checked when names are configured, or when the listener is on loopback, where a page
   * rebinding a name to 127.0.0.1 is the threat. Decided once, not per request.
   */
  readonly checkHost: boolean;
}

function ownNames(listen: ListenConfig, port: number): OwnNames {
  const loopbackNames = ['localhost', '127.0.0.1', '[::1]'];
  const own = [listen.host.includes(':') ? `[${listen.host}]` : listen.host, ...loopbackNames];
  return {
    hosts: new Set(own.map((name) => `${name}:${port}`)),
    origins: new Set([...own.map((name) => `http://${name}:${port}`), ...listen.allowedOrigins]),
    checkHost: listen.allowedHosts.length > 0 || isLoopback(listen.host),
  };
}

/**
 * The Streamable HTTP listener at `/mcp` (2025-11-25 sessions), with `/healthz`, `/readyz` and,
 * when `auth` is set, the protected-resource metadata of RFC 9728. Each session is its own host
 * connection of the gateway.
 */
export async function startListener(options: ListenerOptions): Promise<Listener> {
  const { listen, logger } = options;
  const replica = options.replica ?? options.relay?.replica;
  const ids: SessionIds = createSessionIds({
    ...(listen.sessionKey !== undefined && { key: listen.sessionKey }),
    ...(replica !== undefined && { replica }),
  });
  // Timers of this listener's own, not of the module: a second listener in the process keeps
  // its own, and closing this one stops them.
  const quiet = quietStreams();
  const edge: Edge = {
    options,
    verifier:
      options.auth === undefined
        ? undefined
        : createTokenVerifier(options.auth, {
            logger,
            ...(options.frontDoor !== undefined && { own: options.frontDoor.tokens }),
          }),
    sessions: new SessionTable({
      listen,
      ids,
      logger,
      connect: options.connect,
      quietStreams: quiet,
      ...(options.sessionRecords !== undefined && { records: options.sessionRecords }),
      ...(options.relay !== undefined && { relay: options.relay }),
      ...(options.resumable !== undefined && { resumable: options.resumable }),
      ...(options.streamRelay !== undefined && { streamRelay: options.streamRelay }),
      ...(options.record !== undefined && { record: options.record }),
    }),
    bodies: new BodyReads(),
    quiet,
    port: listen.port,
    own: ownNames(listen, listen.port),
  };
  await options.relay?.listen((id, message) => edge.sessions.deliver(id, message));
  const server: Server = createServer((req, res) => {
    handle(edge, req, res).catch((error: unknown) => failed(logger, req, res, error));
  });
  // A slow client may not hold a socket open without sending: headers must come promptly, and
  // the whole request (headers and body) within a bound. This bounds receiving the request
  // only: an SSE answer streams as long as it needs, and idle sessions are swept by the table.
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  edge.port = (server.address() as AddressInfo).port;
  edge.own = ownNames(listen, edge.port);
  const shownHost = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${shownHost}:${edge.port}/mcp`,
    port: edge.port,
    stopAccepting: () => {
      edge.sessions.stopSweeping();
      options.stateless?.stopAccepting();
      server.close();
    },
    async close() {
      await Promise.all([edge.sessions.closeAll(), options.stateless?.close()]);
      server.closeAllConnections();
      server.close();
      edge.bodies.stop();
      edge.quiet.stop();
    },
  };
}

/** The last word on a request whose handling threw. */
function failed(logger: Logger, req: IncomingMessage, res: ServerResponse, error: unknown): void {
  if (error instanceof SlowBodyError) {
    logger.info(`HTTP ${req.method} ${req.url}: ${error.message}; the connection was closed`);
    return;
  }
  logger.error(`HTTP ${req.method} ${req.url}: ${(error as Error).stack ?? String(error)}`);
  if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
  else res.end();
}

/** One request: the checks every request passes in order, then its session or a new one. */
async function handle(edge: Edge, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // The path, read once: the checks before authentication and the profile both need it. The
  // path every MCP request names is taken as it is; any other is parsed and normalised.
  const pathname = req.url === '/mcp' ? '/mcp' : new URL(req.url ?? '/', 'http://localhost').pathname;
  if (answeredBeforeAuth(edge, req, res, pathname)) return;
  const principal = knownPrincipal(edge, req) ?? (await authenticate(edge, req, res));
  if (principal === undefined) return;
  let body: unknown;
  if (req.method === 'POST') {
    const read = await readJsonBody(edge.bodies, req, res, edge.options.maxBodyBytes);
    if (read === undefined) return;
    body = read.body;
  }
  const { options, sessions } = edge;
  // Checked before authentication (answeredBeforeAuth): the path is /mcp or a profile's.
  const profile = profileOf(pathname, options.profiles) ?? undefined;
  const id = req.headers['mcp-session-id'];
  if (typeof id === 'string' && id !== '') return sessions.serve(req, res, id, principal, body);
  // An initialize carrying the per-request envelope is a stateless request (one the stateless
  // revision refuses, saying what to send instead), not the handshake of a session.
  if (req.method === 'POST' && isInitialize(body) && !(options.stateless !== undefined && enveloped(body)))
    return sessions.open(req, res, principal, body, profile);
  if (req.method === 'POST' && options.stateless !== undefined)
    return options.stateless.serve({ req, res, body, principal, ...(profile !== undefined && { profile }) });
  return sendRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; send initialize first');
}

/**
 * Answers what needs no principal: the health probes, a DNS-rebinding refusal, the resource
 * metadata, a wrong path or method. Says whether it answered.
 */
function answeredBeforeAuth(
  edge: Edge,
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
): boolean {
  const { options } = edge;
  if (req.method === 'GET' && pathname === '/healthz') {
    sendJson(res, 200, { status: 'ok' });
    return true;
  }
  if (req.method === 'GET' && pathname === '/readyz') {
    if (options.ready()) sendJson(res, 200, { status: 'ready' });
    else sendJson(res, 503, { status: 'starting' });
    return true;
  }
  const rebinding = rebindingProblem(req, options.listen, edge.own);
  if (rebinding !== undefined) {
    options.logger.warn(`refused an HTTP request: ${rebinding}`);
    sendJson(res, 403, { error: 'forbidden', error_description: rebinding });
  } else if (pathname.startsWith('/.well-known/oauth-protected-resource'))
    resourceMetadata(options.auth, options.frontDoor, res);
  else if (options.frontDoor?.serves(pathname) === true)
    options.frontDoor
      .handle(req, res, pathname, edge.bodies.readBody)
      .catch((error: unknown) => failed(options.logger, req, res, error));
  else if (profileOf(pathname, options.profiles) === null)
    sendJson(res, 404, { error: notServedHere(pathname, options.profiles) });
  else if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
    res.setHeader('Allow', 'GET, POST, DELETE');
    sendJson(res, 405, { error: `method ${req.method} is not allowed on /mcp` });
  } else return false;
  return true;
}

/** The principal of a request whose token was verified before and is still good, at once. */
function knownPrincipal(edge: Edge, req: IncomingMessage): Principal | undefined {
  if (edge.verifier === undefined) return ANONYMOUS;
  const authorization = req.headers.authorization;
  const principal = edge.verifier.known(authorization, req.socket);
  if (principal !== undefined)
    // Known, so the header is `Bearer <token>` with a single space.
    edge.options.subjectTokens?.remember(principal, authorization!.slice('Bearer '.length));
  return principal;
}

/** The request's principal, or undefined when the token was refused (the refusal is answered). */
async function authenticate(
  edge: Edge,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<Principal | undefined> {
  if (edge.verifier === undefined) return ANONYMOUS;
  try {
    const principal = await edge.verifier.verify(req.headers.authorization);
    // Verified, so the header is `Bearer <token>`.
    edge.options.subjectTokens?.remember(
      principal,
      req.headers.authorization!.replace(/^Bearer\s+/i, '').trim(),
    );
    return principal;
  } catch (error) {
    if (!(error instanceof AuthRefusal)) throw error;
    refuse(edge, req, res, error);
    return undefined;
  }
}

/** The POST body parsed, or undefined when it is too big, not JSON or too deep (answered). */
async function readJsonBody(
  bodies: BodyReads,
  req: IncomingMessage,
  res: ServerResponse,
  maxBodyBytes: number,
): Promise<{ body: unknown } | undefined> {
  const text = await bodies.read(req, maxBodyBytes);
  if (text === undefined) {
    sendRpcError(res, 413, -32600, `the request body is over ${maxBodyBytes} bytes (gateway.maxMessageSize)`);
    return undefined;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    sendRpcError(res, 400, -32700, 'Parse error: the body is not JSON');
    return undefined;
  }
  if (nestingExceeds(text, HOST_MAX_DEPTH)) {
    sendRpcError(res, 400, -32600, `the request nests deeper than ${HOST_MAX_DEPTH} levels`);
    return undefined;
  }
  return { body };
}

/** Host and Origin checks against DNS rebinding: a web page must not reach a local gateway. */
function rebindingProblem(req: IncomingMessage, listen: ListenConfig, own: OwnNames): string | undefined {
  const host = req.headers.host;
  if (
    own.checkHost &&
    (host === undefined ||
      (!own.hosts.has(host) &&
        !listen.allowedHosts.some((allowed) => host === allowed || host.replace(/:\d+$/, '') === allowed)))
  )
    return `Host ${JSON.stringify(host ?? '')} is not this gateway (listen.allowedHosts)`;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  if (!own.origins.has(origin))
    return `Origin ${JSON.stringify(origin)} is not allowed (listen.allowedOrigins)`;
  return undefined;
}

function metadataUrl(edge: Edge): string {
  const audience = edge.options.auth?.audience ?? '';
  try {
    const url = new URL(audience);
    if (url.protocol === 'https:' || url.protocol === 'http:')
      return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    // Not a URL: this listener's own address says where the metadata is.
  }
  return `http://${edge.options.listen.host}:${edge.port}/.well-known/oauth-protected-resource/mcp`;
}

function resourceMetadata(
  auth: AuthConfig | undefined,
  frontDoor: FrontDoor | undefined,
  res: ServerResponse,
): void {
  if (auth === undefined) return sendJson(res, 404, { error: 'this gateway has no auth: section' });
  sendJson(res, 200, {
    resource: auth.audience,
    authorization_servers: [frontDoor?.issuer ?? auth.issuer],
    bearer_methods_supported: ['header'],
    ...(auth.requiredScopes.length > 0 && { scopes_supported: auth.requiredScopes }),
    resource_name: 'mcp-warden',
  });
}

function refuse(edge: Edge, req: IncomingMessage, res: ServerResponse, refusal: AuthRefusal): void {
  const parts = [`resource_metadata="${metadataUrl(edge)}"`];
  if (refusal.error !== undefined && refusal.status !== 503) {
    parts.push(`error="${refusal.error}"`, `error_description="${refusal.message.replace(/"/g, "'")}"`);
    if (refusal.error === 'insufficient_scope')
      parts.push(`scope="${edge.options.auth!.requiredScopes.join(' ')}"`);
  }
  if (refusal.status !== 503) res.setHeader('WWW-Authenticate', `Bearer ${parts.join(', ')}`);
  edge.options.logger.info(`HTTP ${req.method} /mcp refused with ${refusal.status}: ${refusal.message}`);
  sendJson(res, refusal.status, {
    error: refusal.error ?? 'invalid_request',
    error_description: refusal.message,
  });
}

function enveloped(body: unknown): boolean {
  return hasEnvelope((body as { params?: Params }).params);
}

function isInitialize(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'initialize';
}

/**
 * The profile a request path names: undefined for `/mcp`, the name for `/mcp/<profile>` of a
 * configured profile, null for any other path (not served).
 */
function profileOf(pathname: string, profiles: ReadonlySet<string> | undefined): string | undefined | null {
  if (pathname === '/mcp') return undefined;
  if (!pathname.startsWith('/mcp/')) return null;
  let name: string;
  try {
    name = decodeURIComponent(pathname.slice('/mcp/'.length));
  } catch {
    return null; // a malformed escape names no profile
  }
  return profiles?.has(name) === true ? name : null;
}

/** The 404 message for a path that is not served: where MCP is. */
function notServedHere(pathname: string, profiles: ReadonlySet<string> | undefined): string {
  if (!pathname.startsWith('/mcp/') || profiles === undefined || profiles.size === 0)
    return 'not found: MCP is served at /mcp';
  return `not found: no profile named "${pathname.slice('/mcp/'.length)}"; MCP is served at /mcp and at /mcp/<profile> for ${[...profiles].join(', ')}`;
}
