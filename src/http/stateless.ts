import type { ServerResponse } from 'node:http';
import type { Logger } from '../core/logger.js';
import type { Principal } from '../core/principal.js';
import { EncodedResult } from '../core/rpc/encoded.js';
import { isResponse, type JsonRpcMessage } from '../core/rpc/jsonRpc.js';
import type { MessageTransport, OutgoingMessage } from '../core/transports/streamTransport.js';
import type { ServedConnection, StatelessRequest } from './listener.js';

/** The params key each method's `Mcp-Name` header mirrors. */
const NAME_KEY: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

/**
 * Serves the stateless revision (2026-07-28) on the HTTP listener: each POST without a session
 * is one host connection of the gateway that lives for that request only, so the same code that
 * serves a modern host on stdio (the era decided by the request's envelope) serves it here, and
 * any replica can answer. `Mcp-Method` and `Mcp-Name`, which let a balancer route without
 * reading the body, must agree with the body: one that does not is refused with 400.
 */
export function createStatelessDispatch(options: {
  readonly connect: (transport: MessageTransport, principal: Principal) => ServedConnection;
  readonly logger: Logger;
}): (request: StatelessRequest) => Promise<void> {
  return async ({ req, res, body, principal }) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body) || !('method' in body))
      return refuse(res, 'expected one JSON-RPC request or notification as the body');
    const message = body as JsonRpcMessage & { method: string; id?: unknown; params?: unknown };
    const disagreement = headerDisagreement(req.headers, message.method, message.params);
    if (disagreement !== undefined) {
      options.logger.warn(`refused a stateless HTTP request: ${disagreement}`);
      return refuse(res, disagreement);
    }
    const transport = new OneShotTransport(message.id === undefined ? undefined : message.id, res);
    const connection = options.connect(transport, principal);
    // The audit trail is written before any answer leaves, as on every other transport.
    transport.beforeWrite = () => connection.beforeWrite();
    // A host that goes away before its answer frees the connection (and its upstream calls).
    res.once('close', () => void connection.close());
    await transport.start();
    transport.onmessage?.(message);
    if (message.id === undefined) {
      res.writeHead(202).end();
      await connection.close();
      return;
    }
    await transport.answered;
    await connection.close();
  };
}

function headerDisagreement(
  headers: StatelessRequest['req']['headers'],
  method: string,
  params: unknown,
): string | undefined {
  const headerMethod = headers['mcp-method'];
  if (typeof headerMethod === 'string' && headerMethod !== method)
    return `the Mcp-Method header says ${JSON.stringify(headerMethod)} but the body's method is ${JSON.stringify(method)}`;
  const headerName = headers['mcp-name'];
  const key = NAME_KEY[method];
  if (typeof headerName === 'string' && key !== undefined) {
    const bodyName = (params as Record<string, unknown> | undefined)?.[key];
    if (headerName !== bodyName)
      return `the Mcp-Name header says ${JSON.stringify(headerName)} but the body's params.${key} is ${JSON.stringify(bodyName)}`;
  }
  return undefined;
}

function refuse(res: ServerResponse, message: string): void {
  const text = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message } });
  res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * The connection's side of one request: the answer to it is the HTTP response; anything else
 * the gateway would send (notifications) has no stream to go to in this mode and is dropped.
 */
class OneShotTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  beforeWrite?: () => void;
  readonly answered: Promise<void>;
  private settle!: () => void;

  constructor(
    private readonly id: unknown,
    private readonly res: ServerResponse,
  ) {
    this.answered = new Promise((resolve) => (this.settle = resolve));
    res.once('close', () => this.settle());
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  send(outgoing: OutgoingMessage): Promise<void> {
    const message = outgoing instanceof EncodedResult ? outgoing.toMessage() : outgoing;
    if (!isResponse(message) || message.id !== this.id || this.res.headersSent) return Promise.resolve();
    this.beforeWrite?.();
    const text = JSON.stringify(message);
    this.res.writeHead(200, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
    });
    this.res.end(text);
    this.settle();
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.settle();
    this.onclose?.();
    return Promise.resolve();
  }
}
