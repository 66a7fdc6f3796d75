/**
 * `servers.<name>.oauth.tokenExchange`, normalized. The schema has checked each key's type; what
 * is left is what a type cannot say: that the endpoint is a URL a token may be sent to, and that
 * the resource is an absolute URL without a fragment (RFC 8707 §2).
 */
import { isLoopback } from './team.js';
import type { TokenExchangeConfig } from './types.js';

type Data = Readonly<Record<string, unknown>>;

/** Reports a problem at a key under `tokenExchange` (load.ts places it by file and line). */
export type ExchangeReport = (key: string, message: string) => void;

export function normalizeTokenExchange(
  value: unknown,
  serverUrl: string,
  report: ExchangeReport,
): TokenExchangeConfig | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const section = value as Data;
  const text = (key: string): string | undefined =>
    typeof section[key] === 'string' ? section[key] : undefined;
  const tokenEndpoint = text('tokenEndpoint');
  if (tokenEndpoint !== undefined) {
    const problem = endpointProblem(tokenEndpoint);
    if (problem !== undefined) report('tokenEndpoint', problem);
  }
  const clientSecret = text('clientSecret');
  if (section['clientAuth'] === 'post' && clientSecret === undefined)
    report('clientAuth', '"post" sends the client secret in the form, and this entry has no clientSecret');
  const resource = section['resource'] === false ? false : (text('resource') ?? serverUrl);
  if (typeof resource === 'string' && section['resource'] !== undefined) {
    const problem = resourceProblem(resource);
    if (problem !== undefined) report('resource', problem);
  }
  const audience = text('audience');
  return {
    ...(tokenEndpoint !== undefined && { tokenEndpoint }),
    clientId: text('clientId') ?? '',
    ...(clientSecret !== undefined && { clientSecret }),
    clientAuth: section['clientAuth'] === 'post' ? 'post' : 'basic',
    ...(audience !== undefined && { audience }),
    resource,
    ...(Array.isArray(section['scopes']) && {
      scopes: section['scopes'].filter((s): s is string => typeof s === 'string'),
    }),
    fallback: section['fallback'] === 'signIn' ? 'signIn' : 'error',
  };
}

/** A token endpoint receives the principal's token: https only, or http to this machine. */
function endpointProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return 'expected a URL';
  const url = new URL(value);
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))) return undefined;
  return `must be an https URL (http only to a loopback address): the principal's token is sent there`;
}

function resourceProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return 'expected an absolute URL (RFC 8707 resource indicator)';
  if (new URL(value).hash !== '') return 'a resource indicator must not have a fragment (#...)';
  return undefined;
}
