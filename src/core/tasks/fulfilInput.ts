import { UpstreamFailedError } from '../errors.js';
import type { RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';
import { CAPABILITY_FOR } from '../host/hostSession.js';

/** A modern upstream may ask again after each retry; past this many rounds the call fails. */
export const MAX_INPUT_ROUNDS = 8;
/** At most this many questions in one InputRequiredResult. */
export const MAX_INPUT_REQUESTS = 16;

/**
 * A modern upstream answered a call with an InputRequiredResult: the gateway asks the host each
 * question the way the host understands (a request of its own for a legacy host; its own sealed
 * InputRequiredResult for a modern one), through the pipeline, then retries the call upstream
 * with the answers as `inputResponses` and the upstream's `requestState` echoed exactly, until
 * the upstream completes (bounded rounds).
 */
export async function fulfilInput(options: {
  readonly message: RoutedMessage;
  readonly outcome: Outcome;
  readonly retry: (extra: Params) => Promise<Outcome>;
  readonly ask: (method: string, params: Params | undefined) => Promise<Outcome>;
}): Promise<Outcome> {
  const { message, retry, ask } = options;
  let outcome = options.outcome;
  for (let round = 0; ; round++) {
    const result = outcome.result as Params;
    const { resultType } = result;
    if (resultType !== 'input_required') {
      // A result type the gateway does not know cannot be read, so it cannot be passed on either
      // (the revision has clients treat one as invalid); an absent one means complete.
      if (resultType === undefined || resultType === 'complete' || resultType === 'task') return outcome;
      throw new UpstreamFailedError(
        message.server,
        `answered ${message.kind} with resultType ${JSON.stringify(resultType)?.slice(0, 100)}, which mcp-warden does not know`,
      );
    }
    if (round === MAX_INPUT_ROUNDS)
      throw new UpstreamFailedError(
        message.server,
        `asked for input ${MAX_INPUT_ROUNDS} times for one ${message.kind}; mcp-warden gave up`,
      );
    const requests = result.inputRequests;
    const entries =
      typeof requests === 'object' && requests !== null ? Object.entries(requests as Params) : [];
    if (entries.length > MAX_INPUT_REQUESTS)
      throw new UpstreamFailedError(
        message.server,
        `asked for ${entries.length} inputs at once (mcp-warden answers at most ${MAX_INPUT_REQUESTS})`,
      );
    const inputResponses: Params = {};
    for (const [key, request] of entries) {
      const { method, params } = (request ?? {}) as Params;
      if (typeof method !== 'string' || !CAPABILITY_FOR.has(method))
        throw new UpstreamFailedError(
          message.server,
          `asked for input of an unknown kind (${JSON.stringify(method)?.slice(0, 100)}) in its InputRequiredResult`,
        );
      inputResponses[key] = (await ask(method, params as Params | undefined)).result;
    }
    const extra: Params = { inputResponses };
    if (typeof result.requestState === 'string') extra.requestState = result.requestState;
    outcome = await retry(extra);
  }
}
