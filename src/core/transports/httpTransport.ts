import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SignInRequiredError } from '../errors.js';
import type { JsonRpcMessage } from '../protocol/jsonRpc.js';
import type { MessageTransport } from '../rpc/transport.js';
import { limitedFetch, type HttpOversize } from './httpLimits.js';
import { markingFetch } from './postedStreams.js';
import { MODERN_VERSION } from '../protocol/envelope.js';
import { encodeHeaderValue, MCP_NAME_PARAM } from '../protocol/httpHeaders.js';
import { mirroredHeaders, type ParamHeader } from '../protocol/paramHeaders.js';

export interface HttpTransportOptions {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** `gateway.maxMessageSize`: the bound on a response body and on one SSE event. */
  readonly maxMessageBytes: number;
  /** A body or event passed the bound and was cut off (see limitedFetch). */
  readonly onOversize: (info: HttpOversize) => void;
  /** The mirrored arguments (`x-mcp-header`) of the server's tool `name`, for the modern binding. */
  readonly paramHeaders?: (name: string) => readonly ParamHeader[];
  /** OAuth for a server that asks for it (401): tokens on every request, refreshed as needed. */
  readonly authorization?: HttpAuthorization;
}

/**
 * An HTTP upstream's OAuth sign-in, as the transport uses it. The SDK's transport takes the
 * provider (the bearer token on each request, and discovery when the server answers 401 or 403
 * `insufficient_scope`); a provider that cannot sign in silently fails that request with a
 * `SignInRequiredError`.
 */
export interface HttpAuthorization {
  readonly provider: OAuthClientProvider;
  /**
   * The server refused `accessToken` (401), or a request without one (undefined): a token to try
   * instead when there is one, renewed if need be (one refresh at a time: concurrent refusals
   * wait for the same one), else undefined.
   */
  refreshAfterRejection(accessToken: string | undefined): Promise<string | undefined>;
}

/**
 * A Streamable HTTP upstream, through the SDK's own client transport (for HTTP we
 * use the SDK's transports as they are), adapted to our MessageTransport.
 */
export class HttpTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly inner: StreamableHTTPClientTransport;
  /** The server's requests say which of our POSTs they came with (see postedStreams.ts). */
  readonly tiesRequestsToPosts = true;
  /** Whether requests go out in the 2026-07-28 binding (see `setModern`). */
  private modern = false;

  constructor(options: HttpTransportOptions) {
    const limited = markingFetch(
      limitedFetch({ maxMessageBytes: options.maxMessageBytes, onOversize: options.onOversize }),
    );
    const { authorization } = options;
    const base: Fetch = authorization === undefined ? limited : renewingFetch(limited, authorization);
    this.inner = new StreamableHTTPClientTransport(new URL(options.url), {
      requestInit: { headers: { ...options.headers } },
      fetch: (url, init) =>
        this.modern ? modernFetch(base, url, init, options.paramHeaders) : base(url, init),
      ...(authorization && { authProvider: authorization.provider }),
    });
    this.inner.onmessage = (message) => this.onmessage?.(message as unknown as JsonRpcMessage);
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  /** A request could not be sent because the server needs its user to sign in (again). */
  onsigninrequired?: (error: SignInRequiredError) => void;

  async send(message: JsonRpcMessage): Promise<void> {
    try {
      // Our ids towards an upstream are always plain numbers, so the SDK's types hold.
      await this.inner.send(message as unknown as JSONRPCMessage);
    } catch (error) {
      if (error instanceof SignInRequiredError) this.onsigninrequired?.(error);
      throw error;
    }
  }

  /** The SDK transport sends the negotiated version as a header on every later request. */
  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion(version);
  }

  /**
   * Speaks the 2026-07-28 binding (or the handshake one again): its version header and routing
   * headers on every request, and its errors, which come as HTTP 400 with a JSON-RPC error body,
   * read as the answers they are.
   */
  setModern(modern: boolean): void {
    this.modern = modern;
    // An empty version sends no header: the handshake sets the version it negotiates.
    this.inner.setProtocolVersion(modern ? MODERN_VERSION : '');
  }

  async close(): Promise<void> {
    try {
      await this.inner.terminateSession();
    } catch {
      // Servers may not support session termination (405); closing is what matters.
    }
    await this.inner.close();
  }
}

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A request the server refused with 401 is sent once more with a stored or renewed token, before
 * the SDK sees the 401: the SDK's own answer to a 401 is a new sign-in, which the gateway cannot
 * do silently, and a token that merely expired needs none. A server that never asks is never
 * sent a token, and its requests never touch the credential store.
 */
function renewingFetch(base: Fetch, authorization: HttpAuthorization): Fetch {
  return async (url, init) => {
    const response = await base(url, init);
    if (response.status !== 401) return response;
    const headers = new Headers(init?.headers);
    const sent = /^Bearer (.+)$/i.exec(headers.get('authorization') ?? '')?.[1];
    const renewed = await authorization.refreshAfterRejection(sent);
    if (renewed === undefined || renewed === sent) return response;
    await response.body?.cancel();
    headers.set('authorization', `Bearer ${renewed}`);
    return base(url, { ...init, headers });
  };
}

/**
 * One request in the 2026-07-28 binding: `Mcp-Method` (and `Mcp-Name` where the method names
 * something) beside the body, so intermediaries can route it without reading it. A refusal with
 * a JSON-RPC error in its body (an unsupported version, a header mismatch, any error a modern
 * server answers with HTTP 400) becomes that error answering the request, so a probe can tell a
 * modern server's "no" from a legacy one's; a body without one becomes an error saying so.
 */
async function modernFetch(
  base: Fetch,
  url: string | URL,
  init: RequestInit | undefined,
  paramHeaders: ((name: string) => readonly ParamHeader[]) | undefined,
): Promise<Response> {
  const request = parseBody(init?.body);
  if (request === undefined) return base(url, init);
  const headers = new Headers(init?.headers);
  headers.set('mcp-method', request.method);
  const key = MCP_NAME_PARAM[request.method];
  const name = key === undefined ? undefined : request.params?.[key];
  if (typeof name === 'string') headers.set('mcp-name', encodeHeaderValue(name));
  // Arguments the tool marks with x-mcp-header go beside the body too; the server refuses the
  // call (HeaderMismatch) when one it expects is missing.
  if (request.method === 'tools/call' && typeof name === 'string' && paramHeaders !== undefined)
    for (const [header, value] of mirroredHeaders(paramHeaders(name), request.params?.arguments))
      headers.set(header, value);
  const response = await base(url, { ...init, headers });
  if (response.ok || response.status === 401 || response.status === 403 || request.id === undefined)
    return response;
  const text = await response.text().catch(() => '');
  let error: unknown;
  try {
    error = (JSON.parse(text) as { error?: unknown }).error;
  } catch {
    error = undefined;
  }
  const valid =
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'number' &&
    typeof (error as { message?: unknown }).message === 'string';
  const answer = {
    jsonrpc: '2.0',
    id: request.id,
    error: valid ? error : { code: -32600, message: `HTTP ${response.status}: ${text.slice(0, 200)}` },
  };
  return new Response(JSON.stringify(answer), {
    status: 200,
    headers: { 'content-type': 'application/json' },
  });
}

function parseBody(
  body: RequestInit['body'] | undefined,
): { id?: unknown; method: string; params?: Record<string, unknown> } | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const message = JSON.parse(body) as { method?: unknown };
    return typeof message.method === 'string' ? (message as { method: string }) : undefined;
  } catch {
    return undefined;
  }
}
