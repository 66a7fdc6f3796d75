import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { JsonRpcMessage } from '../rpc/jsonRpc.js';
import type { MessageTransport } from './streamTransport.js';
import { limitedFetch, type HttpOversize } from './httpLimits.js';

export interface HttpTransportOptions {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** `gateway.maxMessageSize`: the bound on a response body and on one SSE event. */
  readonly maxMessageBytes: number;
  /** A body or event passed the bound and was cut off (see limitedFetch). */
  readonly onOversize: (info: HttpOversize) => void;
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

  constructor(options: HttpTransportOptions) {
    this.inner = new StreamableHTTPClientTransport(new URL(options.url), {
      requestInit: { headers: { ...options.headers } },
      fetch: limitedFetch({ maxMessageBytes: options.maxMessageBytes, onOversize: options.onOversize }),
    });
    this.inner.onmessage = (message) => this.onmessage?.(message as unknown as JsonRpcMessage);
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JsonRpcMessage): Promise<void> {
    // Our ids towards an upstream are always plain numbers, so the SDK's types hold.
    return this.inner.send(message as unknown as JSONRPCMessage);
  }

  /** The SDK transport sends the negotiated version as a header on every later request. */
  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion(version);
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
