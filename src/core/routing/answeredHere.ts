import { routedMessage } from '../pipeline/routedMessage.js';
import type { MessageKind, RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import type { RouteBoundary } from './boundary.js';
import type { MessageStamps } from './stamps.js';

/** The members a request the gateway answers itself is described by. */
export type AnsweredWhat = Pick<
  RoutedMessage,
  'kind' | 'server' | 'target' | 'exposedName' | 'definition' | 'arguments'
>;

interface AnsweredHereOptions {
  readonly stamps: MessageStamps;
  readonly boundary: RouteBoundary;
  /** Records a request the gateway answers itself; absent, it is answered unrecorded. */
  readonly record?: (message: RoutedMessage, answer: () => Promise<Outcome>) => Promise<Outcome>;
}

/**
 * Host requests the gateway answers itself (a refusal at the edge, a name nobody serves): each
 * passes only the stages that record, so the audit trail shows it, and no stage may judge it.
 */
export class AnsweredHere {
  constructor(private readonly options: AnsweredHereOptions) {}

  /** A host's request the gateway answers itself, as the stages that record see it. */
  message(request: IncomingRequest, what: AnsweredWhat): RoutedMessage {
    const stamp = this.options.stamps.unanswered(what.server);
    return routedMessage({
      ...what,
      direction: 'upstream',
      signal: request,
      hostEra: stamp.hostEra,
      upstreamEra: stamp.upstreamEra,
      host: stamp.host,
      principal: stamp.principal,
    });
  }

  /**
   * A request for a name no server serves, answered with `error`: recorded first (by the stages
   * that record, and no other), so that probing for names shows in the audit trail. Nothing
   * serves it, so the message names no server.
   */
  unserved(
    request: IncomingRequest,
    kind: MessageKind,
    name: string,
    args: Params | undefined,
    error: Error,
  ): void {
    const { record } = this.options;
    if (record === undefined) return this.options.boundary.answerError(request, error);
    this.recorded(record, request, { kind, name, args }, () => Promise.reject(error));
  }

  /**
   * A request the gateway serves itself with `result` (the catalogue's search tool): recorded
   * first by the stages that record, like `unserved`.
   */
  answered(
    request: IncomingRequest,
    kind: MessageKind,
    name: string,
    args: Params | undefined,
    result: Params,
  ): void {
    const { record } = this.options;
    if (record === undefined) return request.respond(Outcome.of(result));
    this.recorded(record, request, { kind, name, args }, () => Promise.resolve(Outcome.of(result)));
  }

  /** Passes `answer` through the stages that record, as a message that names no server, and responds. */
  private recorded(
    record: NonNullable<AnsweredHereOptions['record']>,
    request: IncomingRequest,
    { kind, name, args }: { kind: MessageKind; name: string; args: Params | undefined },
    answer: () => Promise<Outcome>,
  ): void {
    const { boundary } = this.options;
    const message = this.message(request, {
      kind,
      server: '',
      target: name,
      exposedName: name,
      definition: undefined,
      arguments: args,
    });
    record(message, answer).then(
      (outcome) => request.respond(outcome),
      (failure: unknown) => boundary.answerError(request, failure),
    );
  }
}
