/**
 * The hosts that register with the front door: their client ids, sealed with the gateway's
 * key, and the rules for the redirect URIs they may register and use.
 */
import { timingSafeEqual } from 'node:crypto';
import type { SigningKey } from './keys.js';
import type { Client } from './signIn.js';

const MAX_TEXT = 512;

/** A client id for a host that redirects to `redirectUris`: its registration, sealed. */
export function sealClient(key: SigningKey, redirectUris: readonly string[], name?: string): Client {
  const registration = Buffer.from(
    JSON.stringify({ r: redirectUris, ...(name !== undefined && { n: name }) }),
  ).toString('base64url');
  const seal = key.mac(registration);
  return {
    id: `${registration}.${seal}`,
    tag: seal.slice(0, 16),
    redirectUris,
    ...(name !== undefined && { name }),
  };
}

/** The host a client id names, if the gateway's key sealed it; undefined otherwise. */
export function openClient(key: SigningKey, clientId: string): Client | undefined {
  const dot = clientId.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const registration = clientId.slice(0, dot);
  const seal = Buffer.from(clientId.slice(dot + 1));
  const expected = Buffer.from(key.mac(registration));
  if (seal.length !== expected.length || !timingSafeEqual(seal, expected)) return undefined;
  const { r, n } = JSON.parse(Buffer.from(registration, 'base64url').toString('utf8')) as {
    r: string[];
    n?: string;
  };
  return {
    id: clientId,
    tag: expected.toString().slice(0, 16),
    redirectUris: r,
    ...(n !== undefined && { name: n }),
  };
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Schemes a redirect may never use: ones a browser runs or reads itself (script, data, files),
 * and the network ones other than https (a code sent there travels in the clear, or not to an app).
 */
const FORBIDDEN_SCHEMES = new Set([
  'javascript:',
  'data:',
  'file:',
  'blob:',
  'vbscript:',
  'about:',
  'ftp:',
  'ws:',
  'wss:',
]);

/**
 * Why a host may not register this redirect URI, or undefined when it may: https, http to a
 * loopback address (a desktop host's own listener), or an app's private-use scheme (RFC 8252
 * §7.1, as Cursor's `cursor://…` is); never http elsewhere, a browser's own schemes, or a
 * fragment. A code sent to any of these is still useless without the host's PKCE verifier.
 */
export function redirectProblem(uri: string): string | undefined {
  if (uri.length > MAX_TEXT) return `a redirect URI may be at most ${MAX_TEXT} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `the redirect URI ${JSON.stringify(uri)} is not a URL`;
  }
  if (url.hash !== '') return `the redirect URI ${uri} has a #fragment, which OAuth forbids`;
  if (url.username !== '' || url.password !== '') return `the redirect URI ${uri} carries credentials`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return undefined;
  if (url.protocol !== 'http:' && !FORBIDDEN_SCHEMES.has(url.protocol)) return undefined;
  return `the redirect URI ${uri} is not https, http to a loopback address (127.0.0.1, [::1], localhost) or an app's own scheme: this gateway sends codes only there`;
}

/**
 * Whether a host's redirect URI is one it registered: the same text, or for loopback http the
 * same but for the port, which a desktop host picks anew each time (RFC 8252 §7.3).
 */
export function sameRedirect(registered: string, asked: string): boolean {
  if (registered === asked) return true;
  let a: URL;
  let b: URL;
  try {
    a = new URL(registered);
    b = new URL(asked);
  } catch {
    return false;
  }
  return (
    a.protocol === 'http:' &&
    b.protocol === 'http:' &&
    LOOPBACK.has(a.hostname) &&
    a.hostname === b.hostname &&
    a.pathname === b.pathname &&
    a.search === b.search
  );
}
