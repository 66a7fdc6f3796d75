/*
 * Longer than most modules because it is the whole HTTP edge in one place: the routes, the
 * DNS-rebinding checks, authentication, body bounds and the table of sessions, so that every
 * request passes the same checks in the same order.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopback } from '../config/team.js';
import type { AuthConfig, ListenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import { ANONYMOUS, describePrincipal, principalKey, type Principal } from '../core/principal.js';
import { hasEnvelope } from '../core/protocol/envelope.js';
import { HOST_MAX_DEPTH, nestingExceeds, type Params } from '../core/protocol/jsonRpc.js';
import type { MessageTransport } from '../core/rpc/transport.js';
import { AuthRefusal, createTokenVerifier, type TokenVerifier } from './auth.js';
import { createSessionIds, type SessionIds } from './sessionIds.js';
import { SessionTransport } from './sessionTransport.js';

/** What the listener needs of a host connection the gateway serves (gateway/hostConnection.ts `Connection`). */
export interface ServedConnection {
  readonly beforeWrite: () => void;
  /** Whether `requestState` continues one of this connection's calls waiting for a host's retry. */
  continuesCall(requestState: unknown): boolean;
  /** How long this connection still waits for a host's retry, or undefined if it does not. */
  retryWindowMs(): number | undefined;
  /** The `inputSchema` of a tool this connection lists under `name` (its mirrored arguments). */
  toolInputSchema(name: string): unknown;
  close(): Promise<void>;
}

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
  readonly stateless?: (request: StatelessRequest) => Promise<void>;
  /** Names this replica in session ids (default random). */
  readonly replica?: string;
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

export interface Listener {
  /** The /mcp URL, with the port actually bound. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections; requests already in flight go on. */
  stopAccepting(): void;
  /** Closes every session and connection that is left. */
  close(): Promise<void>;
}

interface Session {
  readonly transport: SessionTransport;
  connection: ServedConnection | undefined;
  readonly principal: Principal;
  readonly owner: string;
  lastSeen: number;
  /** Open GET streams: a session with one is in use even when no request comes. */
  streams: number;
}

/** A request body that stopped coming: its connection is already closed, nothing is answered. */
class SlowBodyError extends Error {
  override readonly name = 'SlowBodyError';
}

/** How long a client has to send a request's headers, and the whole request. */
const HEADERS_TIMEOUT_MS = 30_000;
const REQUEST_TIMEOUT_MS = 120_000;
/** How long a request body may pause between two chunks before the request is given up. */
const BODY_IDLE_MS = 15_000;
/**
 * How long a connection lives after an answer sent before its request was read whole (a
 * refusal): long enough for the answer to reach the client, too short to be held open.
 */
const CLOSE_GRACE_MS = 1000;

/** JSON-RPC's code for a session the server does not know, as the SDK's clients expect it. */
const SESSION_NOT_FOUND = -32001;

/**
 * The Streamable HTTP listener at `/mcp` (2025-11-25 sessions), with `/healthz`, `/readyz` and,
 * when `auth` is set, the protected-resource metadata of RFC 9728. Each session is its own host
 * connection of the gateway.
 */
export async function startListener(options: ListenerOptions): Promise<Listener> {
  const { listen, logger } = options;
  const verifier: TokenVerifier | undefined =
    options.auth === undefined ? undefined : createTokenVerifier(options.auth, { logger });
  const ids: SessionIds = createSessionIds({
    ...(listen.sessionKey !== undefined && { key: listen.sessionKey }),
    ...(options.replica !== undefined && { replica: options.replica }),
  });
  const sessions = new Map<string, Session>();
  /** Sessions set up but not yet initialized count against the bounds too (by owner). */
  let starting = 0;
  const startingBy = new Map<string, number>();
  const countStarting = (owner: string, by: 1 | -1): void => {
    starting += by;
    const left = (startingBy.get(owner) ?? 0) + by;
    if (left > 0) startingBy.set(owner, left);
    else startingBy.delete(owner);
  };
  /** The sessions `owner` holds now, initialized or being set up. */
  const sessionsOf = (owner: string): number => {
    let n = startingBy.get(owner) ?? 0;
    for (const session of sessions.values()) if (session.owner === owner) n++;
    return n;
  };
  let port = listen.port;

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof SlowBodyError) {
        logger.info(`HTTP ${req.method} ${req.url}: ${error.message}; the connection was closed`);
        return;
      }
      logger.error(`HTTP ${req.method} ${req.url}: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      else res.end();
    });
  });
  // A slow client may not hold a socket open without sending: headers must come promptly, and
  // the whole request (headers and body) within a bound. This bounds receiving the request
  // only: an SSE answer streams as long as it needs, and idle sessions are swept below.
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'GET' && url.pathname === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'GET' && url.pathname === '/readyz')
      return options.ready()
        ? sendJson(res, 200, { status: 'ready' })
        : sendJson(res, 503, { status: 'starting' });
    const rebinding = rebindingProblem(req);
    if (rebinding !== undefined) {
      logger.warn(`refused an HTTP request: ${rebinding}`);
      return sendJson(res, 403, { error: 'forbidden', error_description: rebinding });
    }
    if (url.pathname.startsWith('/.well-known/oauth-protected-resource')) return resourceMetadata(res);
    const profile = profileOf(url.pathname, options.profiles);
    if (profile === null) return sendJson(res, 404, { error: notServedHere(url.pathname, options.profiles) });
    if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
      res.setHeader('Allow', 'GET, POST, DELETE');
      return sendJson(res, 405, { error: `method ${req.method} is not allowed on /mcp` });
    }
    let principal: Principal = ANONYMOUS;
    if (verifier !== undefined) {
      try {
        principal = await verifier.verify(req.headers.authorization);
      } catch (error) {
        if (error instanceof AuthRefusal) return refuse(req, res, error);
        throw error;
      }
    }
    let body: unknown;
    if (req.method === 'POST') {
      const text = await readBody(req, options.maxBodyBytes);
      if (text === undefined)
        return sendRpcError(
          res,
          413,
          -32600,
          `the request body is over ${options.maxBodyBytes} bytes (gateway.maxMessageSize)`,
        );
      try {
        body = JSON.parse(text);
      } catch {
        return sendRpcError(res, 400, -32700, 'Parse error: the body is not JSON');
      }
      if (nestingExceeds(text, HOST_MAX_DEPTH))
        return sendRpcError(res, 400, -32600, `the request nests deeper than ${HOST_MAX_DEPTH} levels`);
    }
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string' && id !== '') return inSession(req, res, id, principal, body);
    // An initialize carrying the per-request envelope is a stateless request (one the stateless
    // revision refuses, saying what to send instead), not the handshake of a session.
    if (req.method === 'POST' && isInitialize(body) && !(options.stateless !== undefined && enveloped(body)))
      return newSession(req, res, principal, body, profile);
    if (req.method === 'POST' && options.stateless !== undefined)
      return options.stateless({ req, res, body, principal, ...(profile !== undefined && { profile }) });
    return sendRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; send initialize first');
  }

  async function inSession(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    principal: Principal,
    body: unknown,
  ): Promise<void> {
    const session = sessions.get(id);
    if (session === undefined) {
      const judged = ids.judge(id);
      logger.info(
        judged === 'other-replica'
          ? `session ${id.slice(0, 12)}… belongs to another replica (or to this one before a restart): 404, the host initializes again`
          : judged === 'this-replica'
            ? `session ${id.slice(0, 12)}… has ended: 404`
            : `a request named a session id this gateway never issued: 404`,
      );
      return sendRpcError(res, 404, SESSION_NOT_FOUND, 'Session not found');
    }
    if (principalKey(principal) !== session.owner) {
      logger.warn(
        `${describePrincipal(principal)} used the session of ${describePrincipal(session.principal)}: refused`,
      );
      return sendRpcError(res, 403, -32000, 'this session belongs to another principal');
    }
    session.lastSeen = Date.now();
    if (req.method === 'GET') {
      session.streams++;
      res.once('close', () => {
        session.streams--;
        session.lastSeen = Date.now();
      });
    }
    await session.transport.handle(req, res, body);
  }

  async function newSession(
    req: IncomingMessage,
    res: ServerResponse,
    principal: Principal,
    body: unknown,
    profile: string | undefined,
  ): Promise<void> {
    if (sessions.size + starting >= listen.maxSessions) {
      logger.warn(`refused a new session: ${listen.maxSessions} are open (listen.maxSessions)`);
      res.setHeader('Retry-After', '30');
      return sendRpcError(
        res,
        503,
        -32000,
        `too many sessions (listen.maxSessions is ${listen.maxSessions}); retry later`,
      );
    }
    const owner = principalKey(principal);
    const { maxSessions: ownLimit } = listen.perPrincipal;
    if (sessionsOf(owner) >= ownLimit) {
      // 429, not 503: the gateway has room; this principal has used its share of it, and can
      // make room itself by ending one of its own sessions.
      logger.warn(
        `refused a new session for ${describePrincipal(principal)}: it holds ${ownLimit} (listen.perPrincipal.maxSessions)`,
      );
      res.setHeader('Retry-After', '30');
      return sendRpcError(
        res,
        429,
        -32000,
        `too many sessions for ${describePrincipal(principal)} (listen.perPrincipal.maxSessions is ${ownLimit}); end one of them (DELETE) or retry later`,
      );
    }
    countStarting(owner, 1);
    let session: Session | undefined;
    const transport = new SessionTransport({
      sessionId: () => ids.mint(),
      onInitialized: (id) => {
        countStarting(owner, -1);
        session = {
          transport,
          connection: undefined,
          principal,
          owner,
          lastSeen: Date.now(),
          streams: 0,
        };
        sessions.set(id, session);
        logger.info(`session ${id.slice(0, 12)}… opened for ${describePrincipal(principal)}`);
      },
      onDeleted: () => void end(transport.sessionId, 'the host ended it'),
      beforeWrite: () => connection.beforeWrite(),
    });
    const connection = options.connect(transport, principal, profile);
    await transport.start();
    try {
      await transport.handle(req, res, body);
    } finally {
      if (session === undefined) {
        // The initialize was refused by the transport (a batch, a bad request): nothing to keep.
        countStarting(owner, -1);
        await connection.close();
      } else session.connection = connection;
    }
  }

  async function end(id: string | undefined, why: string): Promise<void> {
    const session = id === undefined ? undefined : sessions.get(id);
    if (session === undefined || id === undefined) return;
    sessions.delete(id);
    logger.info(`session ${id.slice(0, 12)}… closed: ${why}`);
    await session.connection?.close();
  }

  /** Host and Origin checks against DNS rebinding: a web page must not reach a local gateway. */
  function rebindingProblem(req: IncomingMessage): string | undefined {
    const loopbackNames = ['localhost', '127.0.0.1', '[::1]'];
    const own = [listen.host.includes(':') ? `[${listen.host}]` : listen.host, ...loopbackNames];
    const host = req.headers.host;
    const hostAllowed =
      host !== undefined &&
      (own.some((name) => host === `${name}:${port}`) ||
        listen.allowedHosts.some((allowed) => host === allowed || host.replace(/:\d+$/, '') === allowed));
    // Behind a load balancer the Host is a public name: checked when names are configured, or
    // when the listener is on loopback, where a page rebinding a name to 127.0.0.1 is the threat.
    const checkHost = listen.allowedHosts.length > 0 || isLoopback(listen.host);
    if (checkHost && !hostAllowed)
      return `Host ${JSON.stringify(host ?? '')} is not this gateway (listen.allowedHosts)`;
    const origin = req.headers.origin;
    if (origin === undefined) return undefined;
    const origins = [...own.map((name) => `http://${name}:${port}`), ...listen.allowedOrigins];
    if (!origins.includes(origin))
      return `Origin ${JSON.stringify(origin)} is not allowed (listen.allowedOrigins)`;
    return undefined;
  }

  function metadataUrl(): string {
    const audience = options.auth?.audience ?? '';
    try {
      const url = new URL(audience);
      if (url.protocol === 'https:' || url.protocol === 'http:')
        return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`;
    } catch {
      // Not a URL: this listener's own address says where the metadata is.
    }
    return `http://${listen.host}:${port}/.well-known/oauth-protected-resource/mcp`;
  }

  function resourceMetadata(res: ServerResponse): void {
    const { auth } = options;
    if (auth === undefined) return sendJson(res, 404, { error: 'this gateway has no auth: section' });
    sendJson(res, 200, {
      resource: auth.audience,
      authorization_servers: [auth.issuer],
      bearer_methods_supported: ['header'],
      ...(auth.requiredScopes.length > 0 && { scopes_supported: auth.requiredScopes }),
      resource_name: 'mcp-warden',
    });
  }

  function refuse(req: IncomingMessage, res: ServerResponse, refusal: AuthRefusal): void {
    const parts = [`resource_metadata="${metadataUrl()}"`];
    if (refusal.error !== undefined && refusal.status !== 503) {
      parts.push(`error="${refusal.error}"`, `error_description="${refusal.message.replace(/"/g, "'")}"`);
      if (refusal.error === 'insufficient_scope')
        parts.push(`scope="${options.auth!.requiredScopes.join(' ')}"`);
    }
    if (refusal.status !== 503) res.setHeader('WWW-Authenticate', `Bearer ${parts.join(', ')}`);
    logger.info(`HTTP ${req.method} /mcp refused with ${refusal.status}: ${refusal.message}`);
    sendJson(res, refusal.status, {
      error: refusal.error ?? 'invalid_request',
      error_description: refusal.message,
    });
  }

  // Idle sessions are closed, so a host that went away does not hold a session slot for ever.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions)
        if (session.streams === 0 && now - session.lastSeen > listen.sessionIdleMs)
          void end(id, `idle for ${Math.round(listen.sessionIdleMs / 1000)} s (listen.sessionIdleTimeout)`);
    },
    Math.max(1000, Math.min(60_000, listen.sessionIdleMs / 4)),
  );
  sweep.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shownHost = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${shownHost}:${port}/mcp`,
    port,
    stopAccepting: () => {
      clearInterval(sweep);
      server.close();
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.keys()].map((id) => end(id, 'the gateway is shutting down')));
      server.closeAllConnections();
      server.close();
    },
  };
}

function enveloped(body: unknown): boolean {
  return hasEnvelope((body as { params?: Params }).params);
}

function isInitialize(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'initialize';
}

/**
 * The body as text, or undefined when it passes `max` bytes (the rest is not read: the answer
 * closes the connection). A body that pauses for BODY_IDLE_MS fails the request.
 */
function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const idle = setTimeout(() => {
      req.removeAllListeners('data');
      // Nothing more is read; the connection goes at once, it has sent nothing for a while.
      req.socket.destroy();
      reject(new SlowBodyError(`the request body paused for ${BODY_IDLE_MS / 1000} s`));
    }, BODY_IDLE_MS);
    idle.unref();
    req.on('data', (chunk: Buffer) => {
      idle.refresh();
      size += chunk.length;
      if (size > max) {
        clearTimeout(idle);
        req.removeAllListeners('data');
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      clearTimeout(idle);
      resolve(size > max ? undefined : Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', (error) => {
      clearTimeout(idle);
      reject(error);
    });
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  const unread = !res.req.complete;
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    // Answered before its request was read whole (a refusal, a body over the bound): what the
    // client still sends is not read, so the connection ends, rather than being held open by a
    // client that sends its body a byte at a time.
    ...(unread && { Connection: 'close' }),
  });
  res.end(text);
  if (unread) {
    const { socket } = res.req;
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  }
}

function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', id: null, error: { code, message } });
}

/**
 * The profile a request path names: undefined for `/mcp`, the name for `/mcp/<profile>` of a
 * configured profile, null for any other path (not served).
 */
function profileOf(pathname: string, profiles: ReadonlySet<string> | undefined): string | undefined | null {
  if (pathname === '/mcp') return undefined;
  const name = pathname.startsWith('/mcp/') ? decodeURIComponent(pathname.slice('/mcp/'.length)) : undefined;
  return name !== undefined && profiles?.has(name) === true ? name : null;
}

/** The 404 message for a path that is not served: where MCP is. */
function notServedHere(pathname: string, profiles: ReadonlySet<string> | undefined): string {
  if (!pathname.startsWith('/mcp/') || profiles === undefined || profiles.size === 0)
    return 'not found: MCP is served at /mcp';
  return `not found: no profile named "${pathname.slice('/mcp/'.length)}"; MCP is served at /mcp and at /mcp/<profile> for ${[...profiles].join(', ')}`;
}
