import type { Params } from '../protocol/jsonRpc.js';

/**
 * Progress, re-tagged across the gateway. A request's sender names its own progress token; the
 * gateway never passes the host's token on. Towards an upstream, the token is our own request id
 * there (unique per connection and already in the peer's table, so progress finds its request
 * with one lookup). Towards the host, progress goes out under the token the host chose.
 */

export type ProgressToken = string | number;

/** Receives the params of a `notifications/progress` for one request. */
export type ProgressListener = (params: Params) => void;

/** `params` with `_meta.progressToken` set to `token`, copied, never changed in place. */
export function withProgressToken(params: Params | undefined, token: ProgressToken): Params {
  const meta = params?._meta as Params | undefined;
  return withMember(params, '_meta', withMember(meta, 'progressToken', token));
}

/**
 * `params` (an object made for one request alone, which nothing else holds) given
 * `_meta.progressToken`: the token is written into it, and only its `_meta` is copied (that one
 * may be the sender's own).
 */
export function withProgressTokenIn(params: Params | undefined, token: ProgressToken): Params {
  if (params === undefined) return { _meta: { progressToken: token } };
  params._meta = withMember(params._meta as Params | undefined, 'progressToken', token);
  return params;
}

/** A request's `_meta` split into the sender's progress token and the rest (undefined when empty). */
export function splitProgressToken(meta: Params | undefined): {
  readonly token: ProgressToken | undefined;
  readonly rest: Params | undefined;
} {
  const token = meta?.progressToken;
  if (token === undefined || meta === undefined) return { token: undefined, rest: meta };
  const rest: Params = {};
  let any = false;
  for (const key in meta) {
    if (key === 'progressToken' || !Object.hasOwn(meta, key)) continue;
    setOwn(rest, key, meta[key]);
    any = true;
  }
  return {
    token: typeof token === 'string' || typeof token === 'number' ? token : undefined,
    rest: any ? rest : undefined,
  };
}

/** The params of a progress notification for the host: the upstream's fields under `token`. */
export function retagProgress(params: Params, token: ProgressToken): Params {
  const out: Params = {};
  for (const key in params) {
    if (key !== 'progressToken' && Object.hasOwn(params, key)) setOwn(out, key, params[key]);
  }
  out.progressToken = token;
  return out;
}

/**
 * `{ ...object, [key]: value }`, made by assignment: a spread followed by a member was measured
 * at about 270 bytes for a two-member object, assignment under 100. Used on objects parsed from
 * JSON or built here, which have no symbol keys for a spread to copy.
 */
export function withMember(object: Params | undefined, key: string, value: unknown): Params {
  const copy: Params = {};
  if (object !== undefined) {
    for (const k in object) {
      if (Object.hasOwn(object, k)) setOwn(copy, k, object[k]);
    }
  }
  copy[key] = value;
  return copy;
}

function setOwn(target: Params, key: string, value: unknown): void {
  // JSON.parse makes "__proto__" an own member; assigning it would set the prototype instead.
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
