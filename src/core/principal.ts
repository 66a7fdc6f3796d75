import { createHash } from 'node:crypto';
import { hostname, userInfo } from 'node:os';

/**
 * Who is behind a host connection: the person (or service) a call is made for. Policy rules
 * match on it, every audit record names it, and isolation between users is keyed on it.
 *
 * - On stdio, the gateway runs as the user at the keyboard: the principal is that OS account
 *   on this machine (`source: 'os'`, `subject` the user name, `hostname` the machine).
 * - On HTTP with `auth:`, it comes from the validated bearer token (`source: 'token'`):
 *   `subject` is `sub`, `issuer` is `iss`, `clientId` is `client_id` (or `azp`), and `claims`
 *   holds the claims the config names (`auth.claims`, e.g. `email`, `groups`).
 * - On HTTP without `auth:` (loopback only), nobody is authenticated (`source: 'anonymous'`).
 *
 * Field names are part of the audit format: never renamed, new information gets a new field.
 */
export interface Principal {
  readonly source: 'os' | 'token' | 'anonymous';
  /** The OS user name, or the token's `sub`; `anonymous` when nobody is authenticated. */
  readonly subject: string;
  /** The token's issuer (`iss`). */
  readonly issuer?: string;
  /** The OAuth client the token was issued to (`client_id`, else `azp`). */
  readonly clientId?: string;
  /** On stdio, the machine the gateway runs on. */
  readonly hostname?: string;
  /** The configured claims the token carried (only those named in `auth.claims`). */
  readonly claims?: Readonly<Record<string, unknown>>;
}

/** The user the gateway process runs as, on this machine: the principal of a stdio host. */
export function osPrincipal(): Principal {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for our uid (common in containers): the environment is the best we have.
    user = process.env.USER ?? process.env.USERNAME ?? `uid:${process.getuid?.() ?? 'unknown'}`;
  }
  return Object.freeze({ source: 'os' as const, subject: user, hostname: hostname() });
}

/** Nobody authenticated: an HTTP listener on loopback without `auth:`. */
export const ANONYMOUS: Principal = Object.freeze({ source: 'anonymous', subject: 'anonymous' });

/**
 * The principal of a validated token's claims. `wanted` are the extra claims the config asks to
 * keep (`auth.claims`); any other claim stays out of policy and audit.
 */
export function tokenPrincipal(
  claims: Readonly<Record<string, unknown>>,
  wanted: readonly string[],
): Principal {
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const kept: Record<string, unknown> = {};
  for (const name of wanted) if (claims[name] !== undefined) kept[name] = claims[name];
  const issuer = text(claims.iss);
  const clientId = text(claims.client_id) ?? text(claims.azp);
  return Object.freeze({
    source: 'token' as const,
    subject: text(claims.sub) ?? 'unknown',
    ...(issuer !== undefined && { issuer }),
    ...(clientId !== undefined && { clientId }),
    ...(Object.keys(kept).length > 0 && { claims: Object.freeze(kept) }),
  });
}

/**
 * Each principal's key, made once per principal object: a request's principal is the object its
 * verified token was kept with, so its key, looked up in several maps per request, is built and
 * hashed once rather than each time. Principals are frozen when made, so a key never goes stale.
 */
const principalKeys = new WeakMap<Principal, string>();

/**
 * One string per principal, for keying what must not be shared between principals (remembered
 * confirmations, per-principal processes and limits): the subject within its issuer or machine.
 */
export function principalKey(principal: Principal): string {
  let key = principalKeys.get(principal);
  if (key === undefined) {
    key = `${principal.source}\u0000${principal.issuer ?? principal.hostname ?? ''}\u0000${principal.subject}`;
    principalKeys.set(principal, key);
  }
  return key;
}

/**
 * A principal's key (`principalKey`) as a log line shows it: where it comes from and
 * `subject@issuer` (or machine), quoted. For a key that came from elsewhere (another replica,
 * through the shared store), whose shape nothing checked: one of any other shape is shown whole.
 */
export function describePrincipalKey(key: string): string {
  const [source, where, subject, ...rest] = key.split('\u0000');
  if (subject === undefined || rest.length > 0) return `the principal key ${JSON.stringify(key)}`;
  return `${source} principal ${JSON.stringify(where === '' ? subject : `${subject}@${where}`)}`;
}

/** How much of the subject an id keeps readable. */
const READABLE_LENGTH = 32;

/**
 * A name for a principal that is safe as one path segment, an argument or a variable's value
 * (`${principal.id}`): the subject made readable (lower case; letters, digits, `.`, `_` and `-`,
 * any other run of characters as one `_`, starting with a letter or digit, at most 32
 * characters), a `-`, and the first 16 hex digits of the SHA-256 of `principalKey` (the
 * subject within its issuer or machine). The readable part may be the same for two principals
 * (`Alice` and `alice`, or one subject at two issuers); the hash tells them apart, so two
 * principals share an id only if 64 bits of SHA-256 collide. Stable: the same token subject
 * from the same issuer gets the same id (and folder) after a restart and on every replica.
 */
export function principalId(principal: Principal): string {
  const readable =
    principal.subject
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '_')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, READABLE_LENGTH)
      .replace(/[^a-z0-9]+$/, '') || 'principal';
  const hash = createHash('sha256').update(principalKey(principal)).digest('hex').slice(0, 16);
  return `${readable}-${hash}`;
}

/** How a principal reads in a log line or a report: `alice@https://idp.example`, `bob@laptop`. */
export function describePrincipal(principal: Principal): string {
  const where = principal.issuer ?? principal.hostname;
  return where === undefined ? principal.subject : `${principal.subject}@${where}`;
}
