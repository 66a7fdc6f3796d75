/**
 * The team-mode sections of the config: `listen:` (the HTTP listener) and `auth:` (bearer
 * tokens). Kept apart from load.ts, which calls `normalizeTeam` with its own reporting helpers.
 */
import type { KeyPath } from './interpolate.js';
import type { AuthConfig, FrontDoorConfig, ListenConfig, PerPrincipalConfig, WardenConfig } from './types.js';

type Data = Readonly<Record<string, unknown>>;

/** How load.ts lets this module report problems and read durations. */
export interface TeamContext {
  add(keyPath: KeyPath, at: 'key' | 'value', message: string): void;
  duration(keyPath: KeyPath, value: unknown): number | undefined;
}

/** Addresses that only this machine can reach: the only ones served without `auth:`. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127(\.\d{1,3}){3}$/.test(bare);
}

/** `HOST:PORT` (IPv6 in brackets) as host and port, or a message saying what is wrong. */
export function parseListenAddress(text: string): { host: string; port: number } | string {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(text.trim());
  if (match === null)
    return `expected HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080, got ${JSON.stringify(text)}`;
  const port = Number(match[2]);
  if (port > 65535) return `port ${port} is out of range (0 to 65535)`;
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

/** Why a listener on `host` may not run without `auth:`, or undefined when it may. */
export function needsAuth(host: string, auth: AuthConfig | undefined): string | undefined {
  if (auth !== undefined || isLoopback(host)) return undefined;
  return `listening on ${host} (not a loopback address) needs an auth: section: anyone who can reach it could use every upstream server`;
}

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

/** An issuer or JWKS URL: https, or http to a loopback address (a local test issuer). */
function checkUrl(ctx: TeamContext, keyPath: KeyPath, value: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.add(keyPath, 'value', `expected a URL, got ${JSON.stringify(value)}`);
    return undefined;
  }
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && isLoopback(url.hostname)) return url;
  ctx.add(keyPath, 'value', `must be an https URL (http only to a loopback address), got ${value}`);
  return undefined;
}

/** `listen:` and `auth:`, normalized; problems go to `ctx`. */
export function normalizeTeam(
  data: Data,
  ctx: TeamContext,
): { readonly listen?: ListenConfig; readonly auth?: AuthConfig } {
  const auth = normalizeAuth(data['auth'], ctx);
  const listen = normalizeListen(data['listen'], auth, ctx);
  return { ...(listen && { listen }), ...(auth && { auth }) };
}

function normalizeAuth(value: unknown, ctx: TeamContext): AuthConfig | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const section = value as Data;
  const issuer = typeof section['issuer'] === 'string' ? section['issuer'] : '';
  if (issuer !== '') checkUrl(ctx, ['auth', 'issuer'], issuer);
  const jwksUri = typeof section['jwksUri'] === 'string' ? section['jwksUri'] : undefined;
  if (jwksUri !== undefined) checkUrl(ctx, ['auth', 'jwksUri'], jwksUri);
  const audience = typeof section['audience'] === 'string' ? section['audience'] : '';
  const frontDoor = normalizeFrontDoor(section['frontDoor'], audience, ctx);
  return {
    issuer,
    audience,
    ...(frontDoor !== undefined && { frontDoor }),
    ...(jwksUri !== undefined && { jwksUri }),
    requiredScopes: strings(section['requiredScopes']),
    claims: strings(section['claims']),
    clockSkewMs: ctx.duration(['auth', 'clockSkew'], section['clockSkew']) ?? 30_000,
    jwksCooldownMs: ctx.duration(['auth', 'jwksCooldown'], section['jwksCooldown']) ?? 30_000,
  };
}

/**
 * `auth.frontDoor`. Hosts find the gateway's authorization server from the resource metadata,
 * and the SDKs insist the resource is the URL they connect to: so with a front door the
 * audience must be the gateway's /mcp URL, and the base URL defaults to its origin.
 */
function normalizeFrontDoor(value: unknown, audience: string, ctx: TeamContext): FrontDoorConfig | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const section = value as Data;
  const at = (key: string): KeyPath => ['auth', 'frontDoor', key];
  const text = (key: string) => (typeof section[key] === 'string' ? (section[key] as string) : undefined);
  let resource: URL | undefined;
  try {
    resource = new URL(audience);
  } catch {
    // Reported below.
  }
  if (audience !== '' && (resource === undefined || !/^https?:$/.test(resource.protocol)))
    ctx.add(
      ['auth', 'audience'],
      'value',
      `with auth.frontDoor the audience must be this gateway's /mcp URL as hosts connect to it (such as https://mcp.example.com/mcp), got ${JSON.stringify(audience)}`,
    );
  const configuredBase = text('baseUrl');
  const base = configuredBase === undefined ? resource : checkUrl(ctx, at('baseUrl'), configuredBase);
  // The front door answers at the root of its origin (/oauth/..., /.well-known/...), which is
  // where hosts look for an issuer without a path.
  if (configuredBase !== undefined && base !== undefined && base.href !== `${base.origin}/`)
    ctx.add(
      at('baseUrl'),
      'value',
      `must be an origin alone, such as https://mcp.example.com (the gateway serves /oauth/ and /.well-known/ at its root), got ${configuredBase}`,
    );
  const scopes = Array.isArray(section['scopes'])
    ? strings(section['scopes'])
    : ['openid', 'profile', 'email'];
  if (!scopes.includes('openid'))
    ctx.add(
      at('scopes'),
      'value',
      `must include openid: the principal is taken from the identity provider's ID token, which only an OpenID sign-in returns (got ${scopes.join(' ') || 'none'})`,
    );
  const clientSecret = text('clientSecret');
  const signingKey = text('signingKey');
  return {
    clientId: text('clientId') ?? '',
    ...(clientSecret !== undefined && { clientSecret }),
    scopes,
    baseUrl: base === undefined ? '' : base.origin,
    ...(signingKey !== undefined && { signingKey }),
    accessTokenMs: ctx.duration(at('accessTokenLifetime'), section['accessTokenLifetime']) ?? 10 * 60_000,
    refreshTokenMs:
      ctx.duration(at('refreshTokenLifetime'), section['refreshTokenLifetime']) ?? 12 * 3_600_000,
  };
}

function normalizeListen(value: unknown, auth: AuthConfig | undefined, ctx: TeamContext) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const section = value as Data;
  let address = { host: '127.0.0.1', port: 0 };
  if (typeof section['http'] === 'string') {
    const parsed = parseListenAddress(section['http']);
    if (typeof parsed === 'string') ctx.add(['listen', 'http'], 'value', parsed);
    else {
      address = parsed;
      const refusal = needsAuth(parsed.host, auth);
      if (refusal !== undefined) ctx.add(['listen', 'http'], 'value', refusal);
    }
  }
  const sessionKey = typeof section['sessionKey'] === 'string' ? section['sessionKey'] : undefined;
  const configured = section['maxSessions'];
  const maxSessions =
    typeof configured === 'number' && Number.isInteger(configured) ? configured : LISTEN_DEFAULTS.maxSessions;
  const listen: ListenConfig = {
    ...address,
    stdio: section['stdio'] === true,
    allowedHosts: strings(section['allowedHosts']),
    allowedOrigins: strings(section['allowedOrigins']),
    maxSessions,
    sessionIdleMs:
      ctx.duration(['listen', 'sessionIdleTimeout'], section['sessionIdleTimeout']) ?? 30 * 60_000,
    ...(sessionKey !== undefined && { sessionKey }),
    perPrincipal: normalizePerPrincipal(section['perPrincipal'], maxSessions, ctx),
  };
  return listen;
}

/** `listen.perPrincipal` as written; its keys are checked against the JSON schema first. */
function normalizePerPrincipal(value: unknown, maxSessions: number, ctx: TeamContext): PerPrincipalConfig {
  const section = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Data) : {};
  const count = (key: string): number | undefined => {
    const n = section[key];
    return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : undefined;
  };
  const maxConcurrency = count('maxConcurrency');
  const ratePerMinute = count('ratePerMinute');
  const sessions = count('maxSessions');
  if (sessions !== undefined && sessions > maxSessions)
    ctx.add(
      ['listen', 'perPrincipal', 'maxSessions'],
      'value',
      `${sessions} is more than listen.maxSessions (${maxSessions}), the sessions of all principals together`,
    );
  return {
    idleMs:
      ctx.duration(['listen', 'perPrincipal', 'idleTimeout'], section['idleTimeout']) ??
      PER_PRINCIPAL_DEFAULTS.idleMs,
    maxProcesses: count('maxProcesses') ?? PER_PRINCIPAL_DEFAULTS.maxProcesses,
    maxSessions: sessions ?? sessionsPerPrincipal(maxSessions),
    ...(maxConcurrency !== undefined && { maxConcurrency }),
    ...(ratePerMinute !== undefined && { ratePerMinute }),
  };
}

/**
 * Sessions one principal may hold when the config does not say: a quarter of all of them, so
 * one user (or one leaked token) leaves most slots to the others, and a user with a few hosts
 * open (an editor, a desktop app, a script) is never refused at the default.
 */
function sessionsPerPrincipal(maxSessions: number): number {
  return Math.max(1, Math.ceil(maxSessions / 4));
}

const DEFAULT_MAX_SESSIONS = 100;

/** What `listen.perPrincipal` holds when the config does not say. */
export const PER_PRINCIPAL_DEFAULTS: PerPrincipalConfig = {
  idleMs: 10 * 60_000,
  maxProcesses: 64,
  maxSessions: sessionsPerPrincipal(DEFAULT_MAX_SESSIONS),
};

/** What `listen:` holds when only `--http` was given. */
const LISTEN_DEFAULTS: Omit<ListenConfig, 'host' | 'port'> = {
  stdio: false,
  allowedHosts: [],
  allowedOrigins: [],
  maxSessions: DEFAULT_MAX_SESSIONS,
  sessionIdleMs: 30 * 60_000,
  perPrincipal: PER_PRINCIPAL_DEFAULTS,
};

/**
 * The config with `--http HOST:PORT` applied over `listen.http`, or a message saying why the
 * flag cannot be used (a malformed address, a non-loopback address without `auth:`).
 */
export function listenFrom(config: WardenConfig, flag: string | undefined): WardenConfig | string {
  if (flag === undefined) return config;
  const address = parseListenAddress(flag);
  if (typeof address === 'string') return `--http: ${address}`;
  const refusal = needsAuth(address.host, config.auth);
  if (refusal !== undefined) return `--http: ${refusal} (${config.file})`;
  const listen: ListenConfig = { ...LISTEN_DEFAULTS, ...config.listen, ...address };
  return Object.freeze({ ...config, listen });
}
