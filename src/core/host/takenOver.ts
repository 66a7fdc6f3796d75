import type { Params } from '../protocol/jsonRpc.js';

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
