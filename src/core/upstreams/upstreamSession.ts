import { UpstreamFailedError, UpstreamRpcError } from '../errors.js';
import { describeError } from '../../lib/describeError.js';
import type { CancelListener, CancelSignal } from '../rpc/cancellation.js';
import { Deferred } from '../../lib/deferred.js';
import {
  isNotification,
  isRequest,
  isResponse,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type Params,
} from '../rpc/jsonRpc.js';
import type { MessageTransport } from '../transports/streamTransport.js';
import { attachRawResponse } from '../rpc/rawResult.js';

export type ProgressListener = (params: Params) => void;

export interface UpstreamRequestOptions {
  /** Cancelling sends the upstream `notifications/cancelled` and drops any late answer. */
  readonly signal?: CancelSignal;
  /** When given, progress is requested under our own token and delivered here (FIELD_NOTES "Timeouts"). */
  readonly onProgress?: ProgressListener;
}

/**
 * A request in flight: its promise, progress listener and cancellation, in one object (it is
 * also what listens to the signal), so a request costs few allocations (issue 7).
 */
class Pending extends Deferred<Record<string, unknown>> implements CancelListener {
  constructor(
    private readonly session: UpstreamSession,
    readonly id: number,
    readonly method: string,
    readonly onProgress: ProgressListener | undefined,
    readonly signal: CancelSignal | undefined,
  ) {
    super();
  }

  onCancelled(reason: Error): void {
    this.session.cancelled(this, reason);
  }
}

export interface UpstreamSessionOptions {
  /** The server's name in the config, for messages. */
  readonly server: string;
  readonly transport: MessageTransport;
  /** Notifications from the upstream other than progress (which is routed to its request). */
  readonly onNotification: (notification: JsonRpcNotification) => void;
  /** Requests from the upstream (sampling, elicitation, roots, ping). */
  readonly onRequest: (request: JsonRpcRequest) => void;
}

/**
 * One live JSON-RPC conversation with an upstream: our own request ids, the table of
 * requests in flight, progress routing and cancellation. Ids are plain integers we choose, so
 * they never collide across upstreams or with the host's.
 */
const NO_OPTIONS: UpstreamRequestOptions = {};

export class UpstreamSession {
  private readonly options: UpstreamSessionOptions;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closedWith: Error | null = null;

  constructor(options: UpstreamSessionOptions) {
    this.options = options;
    const { transport } = options;
    transport.onmessage = (message, line, large) => {
      if (isResponse(message)) {
        const id = message.id;
        const entry = typeof id === 'number' ? this.pending.get(id) : undefined;
        // Unknown ids are late answers to calls we already gave up on: drop them.
        if (entry === undefined || typeof id !== 'number') return;
        this.settle(id);
        if ('error' in message) {
          const e = message.error;
          entry.reject(new UpstreamRpcError(options.server, e.code, e.message, e.data));
        } else if (
          typeof message.result !== 'object' ||
          message.result === null ||
          Array.isArray(message.result)
        ) {
          // Every MCP result is an object; anything else would fail later with no one named.
          const result: unknown = message.result;
          const what = result === null ? 'a null' : Array.isArray(result) ? 'an array' : `a ${typeof result}`;
          entry.reject(
            new UpstreamFailedError(
              options.server,
              `answered ${entry.method} with ${what} result, not an object`,
            ),
          );
        } else {
          if (line !== undefined) attachRawResponse(message.result, line, large);
          entry.resolve(message.result);
        }
      } else if (isRequest(message)) {
        options.onRequest(message);
      } else if (isNotification(message)) {
        if (message.method === 'notifications/progress') {
          const token = message.params?.progressToken;
          const entry = typeof token === 'number' ? this.pending.get(token) : undefined;
          entry?.onProgress?.(message.params ?? {});
          return;
        }
        options.onNotification(message);
      }
    };
  }

  /** Requests in flight, for diagnostics and tests. */
  get inFlight(): number {
    return this.pending.size;
  }

  request(
    method: string,
    params: Params | undefined,
    options: UpstreamRequestOptions = NO_OPTIONS,
  ): Promise<Record<string, unknown>> {
    if (this.closedWith !== null) return Promise.reject(this.closedWith);
    const { signal, onProgress } = options;
    if (signal?.cancelled) return Promise.reject(signal.reason!);
    const id = this.nextId++;
    let sent = params;
    if (onProgress !== undefined) {
      // Our id doubles as the progress token: unique per upstream and already in the table.
      const meta = params?._meta as Params | undefined;
      sent = withMember(params, '_meta', withMember(meta, 'progressToken', id));
    }
    const entry = new Pending(this, id, method, onProgress, signal);
    this.pending.set(id, entry);
    signal?.listen(entry);
    const message: JsonRpcRequest =
      sent === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params: sent };
    const { transport } = this.options;
    try {
      const sending = transport.send(message);
      // A transport whose sends cannot fail spares every request a promise and a closure.
      if (transport.sendNeverRejects !== true)
        sending.catch((error: unknown) => this.sendFailed(entry, method, error));
    } catch (error) {
      this.sendFailed(entry, method, error);
    }
    return entry.promise;
  }

  private sendFailed(entry: Pending, method: string, error: unknown): void {
    if (!this.pending.has(entry.id)) return;
    this.settle(entry.id);
    entry.reject(
      new UpstreamFailedError(this.options.server, `cannot send ${method}: ${describeError(error)}`, {
        cause: error,
      }),
    );
  }

  /** The request's signal was cancelled: tell the upstream, and fail the request with the reason. */
  cancelled(entry: Pending, reason: Error): void {
    if (!this.pending.has(entry.id)) return;
    this.settle(entry.id);
    void this.notify('notifications/cancelled', { requestId: entry.id, reason: reason.message });
    entry.reject(reason);
  }

  notify(method: string, params?: Params): Promise<void> {
    if (this.closedWith !== null) return Promise.resolve();
    const message: JsonRpcNotification =
      params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
    return this.options.transport.send(message).catch(() => {});
  }

  /** Sends a response to a request the upstream made of us. */
  respond(message: Parameters<MessageTransport['send']>[0]): Promise<void> {
    if (this.closedWith !== null) return Promise.resolve();
    return this.options.transport.send(message).catch(() => {});
  }

  /** Fails every request in flight with `error`, and any later request too. */
  close(error: Error): void {
    if (this.closedWith !== null) return;
    this.closedWith = error;
    for (const [id, entry] of this.pending) {
      this.settle(id);
      entry.reject(error);
    }
  }

  /**
   * An answer too large to read arrived. When its id can be told from the edges of the line,
   * only that request fails; the caller restarts the upstream otherwise.
   */
  failById(id: number, error: Error): boolean {
    const entry = this.pending.get(id);
    if (entry === undefined) return false;
    this.settle(id);
    entry.reject(error);
    return true;
  }

  private settle(id: number): void {
    const entry = this.pending.get(id);
    this.pending.delete(id);
    entry?.signal?.unlisten(entry);
  }
}

/**
 * `{ ...object, [key]: value }`, made by assignment: a spread followed by a member was measured
 * at about 270 bytes for a two-member object, assignment under 100 (issue 7). Used on objects
 * parsed from JSON or built here, which have no symbol keys for a spread to copy.
 */
function withMember(object: Params | undefined, key: string, value: unknown): Params {
  const copy: Params = {};
  if (object !== undefined) {
    for (const k in object) {
      if (!Object.hasOwn(object, k)) continue;
      // JSON.parse makes "__proto__" an own member; assigning it would set the prototype instead.
      if (k === '__proto__')
        Object.defineProperty(copy, k, {
          value: object[k],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      else copy[k] = object[k];
    }
  }
  copy[key] = value;
  return copy;
}
