import type { CancelSignal } from './rpc/cancellation.js';
import type { JsonRpcResponse, Params } from './rpc/jsonRpc.js';
import type { MessageTransport } from './transports/streamTransport.js';
import type { RequestAnswer } from './upstreams/upstream.js';

/**
 * Requests the gateway sends to the host: an upstream's sampling, elicitation and roots requests
 * (forwarded under our own ids, so ids from different upstreams can never collide), and later
 * the gateway's own confirmation prompts. The host's answers come back through `handleResponse`.
 */
export class HostRequester {
  private readonly pending = new Map<number, (answer: RequestAnswer) => void>();
  private nextId = 1;

  constructor(private readonly host: MessageTransport) {}

  /** Sends a request; settles with the host's result or error, or an error when `signal` is cancelled. */
  request(
    method: string,
    params: Params | undefined,
    signal?: CancelSignal,
  ): { id: number; answer: Promise<RequestAnswer> } {
    const id = this.nextId++;
    const answer = new Promise<RequestAnswer>((resolve) => {
      let stopListening = (): void => {};
      this.pending.set(id, (a) => {
        stopListening();
        resolve(a);
      });
      if (signal !== undefined) {
        stopListening = signal.onCancel((reason) => {
          if (!this.pending.delete(id)) return;
          // The spec's way to withdraw a request: the host stops asking its user.
          void this.host.send({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: id, reason: reason.message },
          });
          resolve({ error: { code: -32800, message: 'Request cancelled' } });
        });
      }
    });
    void this.host.send(
      params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params },
    );
    return { id, answer };
  }

  /** True when `response` answered one of our requests. */
  handleResponse(response: JsonRpcResponse): boolean {
    if (typeof response.id !== 'number') return false;
    const settle = this.pending.get(response.id);
    if (settle === undefined) return false;
    this.pending.delete(response.id);
    settle('error' in response ? { error: response.error } : { result: response.result });
    return true;
  }

  /** The host is going away: every open question is answered with an error. */
  failAll(message: string): void {
    for (const [id, settle] of this.pending) {
      this.pending.delete(id);
      settle({ error: { code: -32603, message } });
    }
  }
}
