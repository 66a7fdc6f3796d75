/**
 * Typed errors. Every error the gateway makes up is one of these; `rpc/errorsToWire.ts`
 * is the one place they are mapped to JSON-RPC errors or `isError` tool results.
 *
 * `expose` says whether `message` is safe to show the host (and so the model). When false,
 * the host gets a generic message and the details go to the log only.
 */

export type WardenErrorCode =
  | 'METHOD_NOT_FOUND'
  | 'RESOURCE_NOT_FOUND'
  | 'NOT_SERVING'
  | 'UNKNOWN_TOOL'
  | 'UNKNOWN_PROMPT'
  | 'INVALID_PARAMS'
  | 'UPSTREAM_UNAVAILABLE'
  | 'UPSTREAM_FAILED'
  | 'UPSTREAM_ERROR'
  | 'CALL_TIMEOUT'
  | 'CALL_CANCELLED'
  | 'QUEUE_FULL'
  | 'PRINCIPAL_LIMIT'
  | 'RATE_LIMITED'
  | 'DENIED'
  | 'TOOL_CHANGED'
  | 'INVALID_ARGUMENTS'
  | 'PROTOCOL'
  | 'INTERNAL';

export interface WardenErrorOptions {
  cause?: unknown;
  /** Default true: the messages we write are meant for users. */
  expose?: boolean;
}

export class WardenError extends Error {
  readonly code: WardenErrorCode;
  readonly expose: boolean;

  constructor(code: WardenErrorCode, message: string, options: WardenErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.expose = options.expose ?? true;
  }
}

/** The request's params are not what its method needs. Maps to JSON-RPC -32602. */
export class InvalidParamsError extends WardenError {
  constructor(message: string) {
    super('INVALID_PARAMS', message);
  }
}

/** The gateway does not serve this method (or cannot forward it). Maps to JSON-RPC -32601. */
export class MethodNotFoundError extends WardenError {
  constructor(message: string) {
    super('METHOD_NOT_FOUND', message);
  }
}

/** No upstream offers this resource URI. Maps to MCP's -32002, with the URI as data. */
export class ResourceNotFoundError extends WardenError {
  readonly uri: string;

  constructor(uri: string) {
    super('RESOURCE_NOT_FOUND', `Resource not found: ${uri}`);
    this.uri = uri;
  }
}

/** The gateway is shutting down and takes no new requests. Maps to JSON-RPC -32603 with this message. */
export class NotServingError extends WardenError {
  constructor(message: string) {
    super('NOT_SERVING', message);
  }
}

/** A request named a tool the catalog does not have. Maps to JSON-RPC -32602. */
export class UnknownToolError extends WardenError {
  /** `why`: what the gateway knows of the name, when it knows more than that it is not listed. */
  constructor(name: string, why?: string) {
    super('UNKNOWN_TOOL', why === undefined ? `Unknown tool: ${name}` : `Unknown tool: ${name}; ${why}`);
  }
}

/** A request named a prompt the catalog does not have. Maps to JSON-RPC -32602. */
export class UnknownPromptError extends WardenError {
  constructor(name: string) {
    super('UNKNOWN_PROMPT', `Unknown prompt: ${name}`);
  }
}

/** The upstream that owns a tool is not connected (starting, restarting or failed). */
export class UpstreamUnavailableError extends WardenError {
  constructor(server: string, detail: string) {
    super('UPSTREAM_UNAVAILABLE', `Upstream server "${server}" is not available: ${detail}`);
  }
}

/**
 * The upstream needs its user to sign in (OAuth) before it can be reached: no stored token, or
 * one the server refused that could not be refreshed. Not a failure of the server: the gateway
 * offers the sign-in instead of its tools.
 */
export class SignInRequiredError extends WardenError {
  constructor(
    readonly server: string,
    detail: string,
    options: WardenErrorOptions = {},
  ) {
    super('UPSTREAM_UNAVAILABLE', `Upstream server "${server}" needs sign-in: ${detail}`, options);
  }
}

/** The upstream died or its connection broke while a request was in flight. */
export class UpstreamFailedError extends WardenError {
  /** The message without the server prefix, for wrapping with more context. */
  readonly detail: string;

  constructor(server: string, detail: string, options: WardenErrorOptions = {}) {
    super('UPSTREAM_FAILED', `Upstream server "${server}" failed: ${detail}`, options);
    this.detail = detail;
  }
}

/**
 * Whether a failure to connect is one that trying again cannot mend: it, or an error it was
 * caused by, says `lasting: true` (a refusal that only a change of config or identity removes,
 * such as a token exchange on a gateway whose callers bring no token). Retrying it would only
 * tell the user "try again shortly" about something that will fail the same way.
 */
export function isLasting(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++)
    if ((e as { lasting?: unknown }).lasting === true) return true;
  return false;
}

/**
 * The other side of a connection answered one of our requests with a JSON-RPC error. Kept apart
 * from errors we make up so the requester sees that side's own code and message.
 */
export class PeerRpcError extends WardenError {
  readonly rpcCode: number;
  readonly data: unknown;

  constructor(rpcCode: number, message: string, data?: unknown) {
    super('UPSTREAM_ERROR', message);
    this.rpcCode = rpcCode;
    this.data = data;
  }
}

/**
 * A request that breaks a rule of the protocol revision it speaks (a malformed or unsupported
 * per-request envelope, eras mixed on one connection), answered with the JSON-RPC code and data
 * that revision defines for it.
 */
export class ProtocolError extends WardenError {
  readonly rpcCode: number;
  readonly data: unknown;

  constructor(rpcCode: number, message: string, data?: unknown) {
    super('PROTOCOL', message);
    this.rpcCode = rpcCode;
    this.data = data;
  }
}

/**
 * A 2026-07-28 request the gateway cannot serve because the host did not declare, on that
 * request, a capability serving it needs (elicitation to ask for a confirmation, the tasks
 * extension to follow a task). The revision says to answer -32021 naming what is required, so
 * the host knows what to declare on a retry.
 */
export class MissingCapabilityError extends ProtocolError {
  constructor(message: string, requiredCapabilities: Record<string, unknown>) {
    super(-32021, `Missing required client capability: ${message}`, { requiredCapabilities });
  }
}

/** The other side answered with a result that is not an object; `what` says what it was ("a null"). */
export class MalformedAnswerError extends WardenError {
  readonly what: string;

  constructor(method: string, what: string) {
    super('UPSTREAM_ERROR', `the host answered ${method} with ${what} result, not an object`);
    this.what = what;
  }
}

/** An upstream answered with a JSON-RPC error. */
export class UpstreamRpcError extends PeerRpcError {
  readonly server: string;

  constructor(server: string, rpcCode: number, message: string, data?: unknown) {
    super(rpcCode, message, data);
    this.server = server;
  }
}

/** Which limit ended a call: the idle timeout (no answer or progress for that long) or the hard maximum. */
export type TimeoutKind = 'idle' | 'max';

/** The request took longer than its limit; the upstream has been sent `notifications/cancelled`. */
export class CallTimeoutError extends WardenError {
  readonly kind: TimeoutKind;
  readonly limitMs: number;

  constructor(options: {
    /** The request's method; a tool call's message names the tool. */
    readonly method: string;
    /** `host`: a request the server made of the host, which the host left unanswered. */
    readonly direction?: 'upstream' | 'host';
    readonly server: string;
    /** The tool (or prompt, or URI) the request addressed. */
    readonly target: string;
    readonly kind: TimeoutKind;
    readonly limitMs: number;
    /**
     * What the request was still waiting for before it could be sent, when it was (another
     * replica using the same process): it then never ran, and the message says so.
     */
    readonly waitingOn?: string | undefined;
  }) {
    const { method, server, target, kind, limitMs, waitingOn } = options;
    const limit = formatMs(limitMs);
    const what =
      method === 'tools/call' ? `Tool "${target}" on server "${server}"` : `${method} to server "${server}"`;
    super(
      'CALL_TIMEOUT',
      options.direction === 'host'
        ? `${method} from server "${server}" got no answer from the host within ${limit}`
        : waitingOn !== undefined
          ? `${what} timed out after ${limit} without running: ${waitingOn}.`
          : method !== 'tools/call'
            ? kind === 'idle'
              ? `${method} to server "${server}" got no answer within ${limit}`
              : `${method} to server "${server}" ran for ${limit}, its maximum (maxTimeout), despite progress`
            : kind === 'idle'
              ? `Tool "${target}" on server "${server}" timed out: no answer or progress for ${limit} ` +
                `(its timeout); the call was cancelled upstream.`
              : `Tool "${target}" on server "${server}" timed out: it ran for ${limit}, its maximum ` +
                `(maxTimeout), despite progress; the call was cancelled upstream.`,
    );
    this.kind = kind;
    this.limitMs = limitMs;
  }
}

/** The host cancelled the call (`notifications/cancelled`); no response goes back for it. */
export class HostCancelledError extends WardenError {
  constructor(reason: string) {
    super('CALL_CANCELLED', `cancelled by the host: ${reason}`);
  }
}

/**
 * A question a task's server asked the host is no longer wanted: the server's listing of what
 * the task needs left it out (it was answered another way, timed out, or the task moved on), or
 * the task ended. The gateway withdraws it from the host; audited as cancelled.
 */
export class QuestionWithdrawnError extends WardenError {
  constructor(server: string, why: string) {
    super('CALL_CANCELLED', `withdrawn: server "${server}" no longer asks this question (${why})`);
  }
}

/**
 * A confirmation asked through this replica was answered through another one, which took the
 * host's answer from the shared store and ran the call: the copy that waited here gives up,
 * unrun. Audited as cancelled, naming the replica that ran it by its audit session.
 */
export class ContinuedElsewhereError extends WardenError {
  constructor(readonly by: string) {
    super(
      'CALL_CANCELLED',
      `continued on another replica (audit session ${by}), which took the host's answer and ran the call; not run here`,
    );
  }
}

/** Too many calls already wait for this upstream. */
export class QueueFullError extends WardenError {
  constructor(server: string, maxConcurrency: number, maxQueue: number) {
    super(
      'QUEUE_FULL',
      `Server "${server}" is busy: ${maxConcurrency} calls are running and ${maxQueue} are waiting ` +
        `(maxConcurrency/maxQueue); try again later.`,
    );
  }
}

/**
 * Too many requests of one principal wait on this replica for their turn at that principal's own
 * process of a server, which runs one request at a time over all replicas.
 */
export class TurnQueueFullError extends WardenError {
  constructor(message: string) {
    super('QUEUE_FULL', message);
  }
}

/** A server has as many requests open with the host as it may; a further one is refused. */
export class HostRequestsFullError extends WardenError {
  constructor(server: string, method: string, max: number) {
    super(
      'QUEUE_FULL',
      `Server "${server}" already has ${max} requests open with the host (sampling, elicitation, roots); ` +
        `this ${method} was refused. Wait for answers before asking more.`,
    );
  }
}

/** `1500` → `1.5s`, `120000` → `2m`: limits shown the way the config writes them. */
export function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms >= 1000) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/**
 * The call was not run: the policy denied it, or its confirmation was declined, timed out or
 * could not be asked. Answered as an `isError` result whose text the model can act on.
 */
export class DeniedError extends WardenError {
  /** The policy rule behind the denial, when there is one. */
  readonly ruleId: string | null;

  constructor(message: string, ruleId: string | null) {
    super('DENIED', message);
    this.ruleId = ruleId;
  }
}

/**
 * The tool's definition no longer matches its pin (or it has none yet, under `pins.onNew:
 * block`), and `pins.onChange` is `block`: the call was not run. Answered as an `isError` result
 * whose message names the change and the command that reviews and accepts it.
 */
export class ToolChangedError extends WardenError {
  readonly server: string;
  readonly tool: string;

  constructor(server: string, tool: string, message: string) {
    super('TOOL_CHANGED', message);
    this.server = server;
    this.tool = tool;
  }
}

/**
 * A tool call's arguments do not match the tool's own `inputSchema` (or could not be checked
 * against it): the call was not run, and neither the policy nor the upstream saw it. Answered
 * as an `isError` result naming the tool, the property and what was wrong, so the model can
 * correct the call.
 */
export class InvalidArgumentsError extends WardenError {
  readonly server: string;
  readonly tool: string;

  constructor(options: {
    readonly server: string;
    readonly tool: string;
    /** What is wrong, e.g. `/a must be number (got string "1000")`. */
    readonly problem: string;
    /** `invalid`: they do not match; `unchecked`: they could not be checked (the problem says why). */
    readonly kind: 'invalid' | 'unchecked';
  }) {
    const { server, tool, problem, kind } = options;
    super(
      'INVALID_ARGUMENTS',
      kind === 'invalid'
        ? `Invalid arguments for tool "${tool}" on server "${server}": ${problem}. The call was not run.`
        : `The arguments for tool "${tool}" on server "${server}" could not be checked against its ` +
            `inputSchema: ${problem}. The call was not run.`,
    );
    this.server = server;
    this.tool = tool;
  }
}

/**
 * A principal reached one of the per-principal bounds (`listen.perPrincipal`): calls at once,
 * calls per minute, or the gateway's per-principal processes. A JSON-RPC error whose `data`
 * names the bound, so a host (or its user) can tell which one it hit.
 */
/**
 * A request refused by a `rateLimits:` rule whose bucket is empty: how long until it holds a
 * token again travels with it, for the result's words, the JSON-RPC error's `data` and the HTTP
 * listener's `Retry-After`.
 */
export class RateLimitedError extends WardenError {
  constructor(
    /** The rule's place in `rateLimits`. */
    readonly rule: number,
    /** Milliseconds until the bucket holds a token again. */
    readonly retryAfterMs: number,
    message: string,
  ) {
    super('RATE_LIMITED', message);
  }

  /** Whole seconds to wait, at least 1: what Retry-After and the messages say. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.retryAfterMs / 1000));
  }
}

export class PrincipalLimitError extends WardenError {
  constructor(
    readonly bound: 'maxConcurrency' | 'ratePerMinute' | 'maxProcesses',
    readonly limit: number,
    message: string,
  ) {
    super('PRINCIPAL_LIMIT', `${message} (listen.perPrincipal.${bound}: ${limit})`);
  }
}
