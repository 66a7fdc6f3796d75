/**
 * `${principal.id}`, `${principal.home}` and `${principal.claims.NAME}`: values of the user a
 * server's process is started for. Behind the HTTP listener a stdio server runs one process per
 * principal; these let each process have its own files (a memory file, a folder to serve) instead
 * of every user's process sharing the same ones.
 *
 * They have no value when the config is read: interpolate.ts keeps each string that names them as
 * a template (literal parts and principal parts), and the upstream that starts one principal's
 * process fills them in (core/upstreams/principalServers.ts). This module says which names exist
 * and checks, once the config is read, that they stand only where a principal is known.
 */
import type { PrincipalTemplate } from './types.js';

export const PRINCIPAL_PREFIX = 'principal.';

/** The forms, for messages. */
export const PRINCIPAL_FORMS = '${principal.id}, ${principal.home} or ${principal.claims.NAME}';

const CLAIMS = 'claims.';

/**
 * The value a `${principal.…}` reference names (`id`, `home`, `claims.NAME`), or a problem; `body`
 * is what stands between `${` and `}`, starting with `principal.`.
 */
export function principalField(body: string): { readonly field: string } | { readonly problem: string } {
  const field = body.slice(PRINCIPAL_PREFIX.length);
  if (field === 'id' || field === 'home') return { field };
  if (field.startsWith(CLAIMS) && field.length > CLAIMS.length) return { field };
  return {
    problem: `unknown placeholder "\${${body}}": the principal's values are ${PRINCIPAL_FORMS} (no default may follow them)`,
  };
}

/** The claim a field names (`claims.email` → `email`), or undefined for `id` and `home`. */
export function claimOf(field: string): string | undefined {
  return field.startsWith(CLAIMS) ? field.slice(CLAIMS.length) : undefined;
}

/** A template as the config shows it: each principal part as its `${principal.…}` reference. */
export function templateText(template: PrincipalTemplate): string {
  return template
    .map((part) => (typeof part === 'string' ? part : `\${principal.${part.principal}}`))
    .join('');
}

/** What decides whether a server's process is started for one principal. */
export interface PrincipalUse {
  /** The server's name. */
  readonly server: string;
  readonly transport: 'stdio' | 'http';
  readonly shared: boolean;
  /**
   * Whether the gateway serves hosts over HTTP: true with `listen:` (or `--http`), false when it
   * is known to serve stdio only, undefined when the command does not serve (`check`, `tools`).
   */
  readonly listening: boolean | undefined;
}

/** Why `${principal.…}` has no value in this server, or undefined when it has one. */
export function noPrincipalHere(use: PrincipalUse): string | undefined {
  const name = `server "${use.server}"`;
  if (use.transport === 'http')
    return `${name} is an HTTP server: the principal's values exist only for a stdio server's process started for one principal (its args, env and cwd)`;
  if (use.shared)
    return `${name} has "shared: true", so one process serves every principal and ${PRINCIPAL_FORMS} have no value; leave out "shared: true" to run one process per principal`;
  if (use.listening === false)
    return `${name} runs once for everyone: without an HTTP listener ("listen:" in the config, or --http) the gateway serves one host and starts no process per principal`;
  return undefined;
}

/** Why a template's claim cannot reach the gateway, or undefined when it can. */
export function unknownClaim(field: string, claims: readonly string[] | undefined): string | undefined {
  const claim = claimOf(field);
  if (claim === undefined) return undefined;
  if (claims === undefined)
    return `\${principal.${field}}: claims come from the bearer tokens that "auth:" checks, and this config has no "auth:" section`;
  if (claims.includes(claim)) return undefined;
  return `\${principal.${field}}: "${claim}" is not listed in auth.claims, and only the claims listed there are kept of a token; add it to auth.claims`;
}
