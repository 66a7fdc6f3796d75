import { describeError, UpstreamFailedError, UpstreamRpcError } from '../errors.js';
import type { CancelSignal } from '../pipeline/cancellation.js';
import {
  isNotification,
  isRequest,
  isResponse,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type Params,
} from '../protocol/jsonRpc.js';
import type { MessageTransport } from '../transports/streamTransport.js';
import { attachRawResponse } from '../protocol/rawJson.js';

export type ProgressListener = (params: Params) => void;

export interface UpstreamRequestOptions {
  /** Cancelling sends the upstream `notifications/cancelled` and drops any late answer. */
  readonly signal?: CancelSignal;
  /** When given, progress is requested under our own token and delivered here (FIELD_NOTES "Timeouts"). */
  readonly onProgress?: ProgressListener;
}

interface Pending {
  readonly method: string;
  readonly resolve: (result: Record<string, unknown>) => void;
  readonly reject: (error: Error) => void;
  readonly onProgress: ProgressListener | undefined;
  readonly cleanup: (() => void) | undefined;
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
export class UpstreamSession {
  private readonly options: UpstreamSessionOptions;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closedWith: Error | null = null;

  constructor(options: UpstreamSessionOptions) {
    this.options = options;
    const { transport } = options;
    transport.onmessage = (message, line, bytes) => {
      if (isResponse(message)) {
        const id = message.id;
        const entry = typeof id === 'number' ? this.pending.get(id) : undefined;
        // Unknown ids are late answers to calls we already gave up on: drop them.
        if (entry === undefined || typeof id !== 'number') return;
        this.settle(id);
        if ('error' in message) {
          const e = message.error;
          entry.reject(new UpstreamRpcError(options.server, e.code, e.message, e.data));
        } else {
          if (line !== undefined && typeof message.result === 'object' && message.result !== null)
            attachRawResponse(message.result, line, bytes);
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

  request(method: string, params: Params | undefined, options: UpstreamRequestOptions = {}) {
    if (this.closedWith !== null) return Promise.reject(this.closedWith);
    const { signal, onProgress } = options;
    if (signal?.cancelled) return Promise.reject(signal.reason!);
    const id = this.nextId++;
    let sent = params;
    if (onProgress !== undefined) {
      // Our id doubles as the progress token: unique per upstream and already in the table.
      const meta = (params?._meta as Params | undefined) ?? {};
      sent = { ...params, _meta: { ...meta, progressToken: id } };
    }
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      let cleanup: (() => void) | undefined;
      if (signal !== undefined) {
        cleanup = signal.onCancel((reason) => {
          if (!this.pending.has(id)) return;
          this.settle(id);
          void this.notify('notifications/cancelled', { requestId: id, reason: reason.message });
          reject(reason);
        });
      }
      this.pending.set(id, { method, resolve, reject, onProgress, cleanup });
      const message: JsonRpcRequest =
        sent === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params: sent };
      this.options.transport.send(message).catch((error: unknown) => {
        if (!this.pending.has(id)) return;
        this.settle(id);
        reject(
          new UpstreamFailedError(this.options.server, `cannot send ${method}: ${describeError(error)}`, {
            cause: error,
          }),
        );
      });
    });
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
    entry?.cleanup?.();
  }
}
