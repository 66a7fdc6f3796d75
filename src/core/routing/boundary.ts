import type { Logger } from '../logger.js';
import type { Next, RoutedMessage } from '../pipeline/types.js';
import { RpcErrorCode } from '../protocol/jsonRpc.js';
import { DENIED_CODE, errorToWire, requestErrorToWire } from '../rpc/errorsToWire.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import type { ModernInputBridge } from '../tasks/inputBridge.js';

/**
 * Where routed requests meet the pipeline, and the one error boundary: every request a host
 * connection routes goes through `route`, and every failure is answered by `answerError`.
 */
export class RouteBoundary {
  constructor(
    private readonly options: {
      /** The one pipeline every routed message passes, composed with its terminal. */
      readonly pipeline: Next;
      /** Questions for a modern host, through Multi Round-Trip Requests (tasks/inputBridge.ts). */
      readonly bridge: ModernInputBridge;
      readonly logger: Logger;
    },
  ) {}

  /** Sends a routed message through the pipeline and answers its request with what comes back. */
  route(request: IncomingRequest, message: RoutedMessage, after?: (outcome: Outcome) => Outcome): void {
    // A modern host's call may be asked questions: the bridge answers it (and its retries).
    const { bridge, pipeline } = this.options;
    if (request.shape !== undefined && bridge.applies(request))
      return bridge.route(
        request,
        message,
        pipeline,
        (outcome) => request.respond(after === undefined ? outcome : after(outcome)),
        (error) => this.answerError(request, error, message),
      );
    const answer = pipeline(message);
    this.respond(request, after === undefined ? answer : answer.then(after), message);
  }

  /** Answers `request` with what `answer` settles with, its failure through the boundary. */
  respond(request: IncomingRequest, answer: Promise<Outcome>, message?: RoutedMessage): void {
    answer.then(
      (outcome) => request.respond(outcome),
      (error: unknown) => this.answerError(request, error, message),
    );
  }

  /**
   * The one place a failed request is answered. A tool call's failures the model can act on are
   * `isError` results; every other request gets a JSON-RPC error.
   */
  answerError(request: IncomingRequest, error: unknown, message?: RoutedMessage): void {
    if (request.answered) return;
    // The host cancelled it: it gets no answer (the peer sends none once cancelled), but it is
    // done, and failing it is what tells the peer so; draining the connection waits for it else.
    if (request.cancelledByPeer)
      return request.fail({ code: RpcErrorCode.InternalError, message: 'cancelled by the host' });
    const log = this.options.logger;
    if (request.method === 'tools/call') {
      const outcome = errorToWire(error, log);
      if (outcome.kind === 'error') return request.fail(outcome.error);
      const first = outcome.result.content[0];
      const what = message?.exposedName ?? String(request.params?.name);
      log.warn(`tools/call ${what}: ${first?.type === 'text' ? first.text : 'failed'}`);
      return request.respond(Outcome.of(outcome.result));
    }
    const wire = requestErrorToWire(error, log);
    if (
      message?.direction === 'host' &&
      (wire.code === RpcErrorCode.InternalError || wire.code === DENIED_CODE)
    )
      log.warn(`${request.method} from ${message.server}: ${wire.message}`);
    request.fail(wire);
  }
}
