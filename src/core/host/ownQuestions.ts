import type { Params } from '../protocol/jsonRpc.js';

/**
 * The questions the gateway asks a host on its own behalf (a confirmation), told apart from
 * those it passes on from an upstream server by the identity of their params object, which
 * travels unchanged from the asking stage to the transport. Nothing is added to the wire.
 *
 * A transport whose calls can be taken over by another replica records only these: such a
 * question comes before anything has gone upstream, so a call waiting for its answer can be
 * run afresh elsewhere; a server's own question cannot (its call is already running there).
 */
const own = new WeakSet<object>();

/** Marks `params` as those of the gateway's own question. */
export function markOwnQuestion(params: Params): Params {
  own.add(params);
  return params;
}

export function isOwnQuestion(params: unknown): boolean {
  return typeof params === 'object' && params !== null && own.has(params);
}

/**
 * Calls taken over from a replica that died, by the params object of the request the taking
 * replica runs again; the value is that replica's name, for the call's audit record.
 */
const takenOver = new WeakMap<object, string>();

export function noteTakenOver(params: Params, by: string): void {
  takenOver.set(params, by);
}

export function takenOverBy(params: Params | undefined): string | undefined {
  return params === undefined ? undefined : takenOver.get(params);
}
