import { PeerRpcError } from '../errors.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';

/** A 2025-11-25 server's "URL elicitation required" error, naming the URLs to visit first. */
export const URL_ELICITATION_REQUIRED = -32042;
/** At most this many URLs of one such error are put to the host; a longer list is passed on. */
const MAX_URL_ELICITATIONS = 8;

/** The URL-mode elicitations an upstream's -32042 error asks for, or undefined when it is not one. */
function urlElicitationsOf(error: unknown): Params[] | undefined {
  if (!(error instanceof PeerRpcError) || error.rpcCode !== URL_ELICITATION_REQUIRED) return undefined;
  const listed = (error.data as { elicitations?: unknown } | undefined)?.elicitations;
  if (!Array.isArray(listed) || listed.length === 0 || listed.length > MAX_URL_ELICITATIONS) return undefined;
  const valid = listed.every(
    (e) =>
      typeof e === 'object' &&
      e !== null &&
      (e as Params).mode === 'url' &&
      typeof (e as Params).url === 'string',
  );
  return valid ? (listed as Params[]) : undefined;
}

/**
 * A 2026-07-28 host has no -32042: in its revision a call that needs the user to visit a URL asks
 * for it within the call (an input-required round trip) and is then retried. So when a
 * 2025-11-25 server fails a modern host's call with -32042, each URL it names is put to the host
 * as a URL-mode `elicitation/create` (`ask`, through the pipeline like any server question), and
 * once the user has accepted them all the call is sent once more (`retry`). A user who declines,
 * or an error that is not one the gateway can read, reaches the host as the server sent it, and
 * so does a second -32042.
 */
export async function afterUrlElicitation(
  error: unknown,
  ask: (method: string, params: Params) => Promise<Outcome>,
  retry: () => Promise<Outcome>,
): Promise<Outcome> {
  const elicitations = urlElicitationsOf(error);
  if (elicitations === undefined) throw error;
  for (const params of elicitations) {
    const answer = (await ask('elicitation/create', params)).result as { action?: unknown };
    if (answer.action !== 'accept') throw error;
  }
  return retry();
}
