import { MethodNotFoundError } from '../errors.js';
import { CAPABILITY_FOR } from '../host/hostSession.js';
import { routedMessage } from '../pipeline/routedMessage.js';
import type { MessageKind, Next, RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Cancellation } from '../rpc/cancellation.js';
import type { Outcome } from '../rpc/outcome.js';
import type { PoolView } from '../upstreams/upstreamPool.js';
import type { MessageStamps } from './stamps.js';

/**
 * Requests an upstream makes of the client (sampling, elicitation, roots), as messages routed
 * through the pipeline to the host: those a server sends as requests, and the questions a modern
 * server puts in an InputRequiredResult, which are asked the same way.
 */
export class HostRequests {
  constructor(
    private readonly options: {
      readonly pool: PoolView;
      readonly pipeline: Next;
      readonly stamps: MessageStamps;
    },
  ) {}

  /**
   * A question a modern upstream put in an InputRequiredResult, for a host that takes requests:
   * routed through the pipeline to the host like the request a legacy server would have sent.
   */
  ask(
    server: string,
    method: string,
    params: Params | undefined,
    signal: Cancellation,
    meta?: Params,
  ): Promise<Outcome> {
    if (!this.options.pool.byName.has(server) || !CAPABILITY_FOR.has(method))
      return Promise.reject(new MethodNotFoundError(`Method not found: ${method}`));
    return this.options.pipeline(this.message(server, method, params, meta, signal));
  }

  /** The message `server`'s request `method` makes, on its way to the host. */
  message(
    server: string,
    method: string,
    params: Params | undefined,
    meta: Params | undefined,
    signal: Cancellation,
    requestId?: RoutedMessage['requestId'],
  ): RoutedMessage {
    const stamp = this.options.stamps.unanswered(server);
    return routedMessage({
      kind: method as MessageKind,
      direction: 'host',
      server,
      target: '',
      exposedName: '',
      arguments: params,
      params: method === 'elicitation/create' ? namedQuestion(server, params) : params,
      meta,
      requestId,
      signal,
      hostEra: stamp.hostEra,
      upstreamEra: stamp.upstreamEra,
      host: stamp.host,
      principal: stamp.principal,
    });
  }
}

/**
 * An elicitation as the user sees it: its message starts with the name of the server that asks,
 * `[github] …`, since behind one gateway the host can no longer tell its servers apart.
 */
function namedQuestion(server: string, params: Params | undefined): Params | undefined {
  if (params === undefined || typeof params.message !== 'string') return params;
  return { ...params, message: `[${server}] ${params.message}` };
}
