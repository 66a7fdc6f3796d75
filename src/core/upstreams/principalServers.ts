/**
 * A per-principal server's entry made concrete for one principal: its `${principal.id}`,
 * `${principal.home}` and `${principal.claims.NAME}` (kept as templates by config loading) filled
 * in, just before that principal's process is made. Claims are the only values a user can shape
 * (within the identity provider), so a claim that would not be safe as one path segment or one
 * argument is refused, never rewritten: rewriting could map two users' values to the same folder.
 */
import { mkdir, chmod } from 'node:fs/promises';
import path from 'node:path';
import { claimOf } from '../../config/principalPlaceholders.js';
import type {
  PrincipalTemplate,
  SandboxConfig,
  ServerConfig,
  StdioServerConfig,
} from '../../config/types.js';
import { describePrincipal, principalId, type Principal } from '../principal.js';
import { stateFolder } from '../../lib/stateFolder.js';

/**
 * The folder every principal's own folder is made in: `mcp-warden/principals` in the user's state
 * folder (`$XDG_STATE_HOME`, else `~/.local/state`), where the gateway keeps its other state.
 */
export function principalHomes(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(stateFolder(env), 'principals');
}

/** A claim's value that may stand in a path or an argument: no separator, no shell syntax, no option. */
const SAFE_CLAIM = /^[A-Za-z0-9_@+][A-Za-z0-9._@+-]*$/;
const MAX_CLAIM_LENGTH = 128;

/**
 * `server` as `principal`'s process runs it: each template filled in, a relative `cwd` resolved
 * against the config's folder, the principal's folder (`principalHome`) named when used and
 * granted to its sandbox. Entries without templates come back as they are. A claim that is
 * missing or unsafe leaves the templates unfilled and sets `cannotStart` saying which.
 */
export function forPrincipal(server: ServerConfig, principal: Principal, homes: string): ServerConfig {
  if (server.transport !== 'stdio' || server.perPrincipal === undefined) return server;
  const { perPrincipal: templates, ...entry } = server;
  const id = principalId(principal);
  const home = path.join(homes, id);
  let usesHome = false;
  const refusals: string[] = [];
  const valueOf = (field: string): string => {
    if (field === 'id') return id;
    if (field === 'home') {
      usesHome = true;
      return home;
    }
    const claim = claimOf(field) ?? field;
    const value = claimValue(principal, claim);
    if (typeof value === 'string') return value;
    refusals.push(`\${principal.claims.${claim}} ${value.problem}`);
    return '';
  };
  const fill = (template: PrincipalTemplate): string =>
    template.map((part) => (typeof part === 'string' ? part : valueOf(part.principal))).join('');
  const args = entry.args.map((arg, index) => {
    const template = templates.args[index];
    return template === undefined ? arg : fill(template);
  });
  const env = { ...entry.env };
  for (const [name, template] of Object.entries(templates.env))
    Object.defineProperty(env, name, { value: fill(template), enumerable: true, writable: true });
  const cwd =
    templates.cwd === undefined
      ? entry.cwd
      : path.resolve(path.dirname(entry.source.file), fill(templates.cwd));
  if (refusals.length > 0)
    return {
      ...entry,
      cannotStart: `its process for ${describePrincipal(principal)} cannot start: ${[...new Set(refusals)].join('; ')}`,
    };
  const resolved: StdioServerConfig = { ...entry, args, env, cwd };
  if (!usesHome) return resolved;
  return {
    ...resolved,
    principalHome: home,
    ...(entry.sandbox && { sandbox: writable(entry.sandbox, home) }),
  };
}

/** A sandbox that may also write `folder`: a process may always write its principal's folder. */
function writable(sandbox: SandboxConfig, folder: string): SandboxConfig {
  return { ...sandbox, filesystem: { ...sandbox.filesystem, write: [...sandbox.filesystem.write, folder] } };
}

/** A claim's text, or why it cannot be used. */
function claimValue(principal: Principal, claim: string): string | { readonly problem: string } {
  const value = principal.claims?.[claim];
  if (value === undefined || value === null || value === '')
    return { problem: `has no value: the principal's token carries no "${claim}" claim` };
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
    return {
      problem: `is ${Array.isArray(value) ? 'a list' : 'an object'} in the token, and only a single value can stand in a path or an argument`,
    };
  const text = String(value);
  if (text.length > MAX_CLAIM_LENGTH || !SAFE_CLAIM.test(text))
    return {
      problem: `would be ${JSON.stringify(text.slice(0, 40))}${text.length > 40 ? '…' : ''}, and a claim may stand in a path or an argument only when it is at most ${MAX_CLAIM_LENGTH} letters, digits and . _ @ + - (not starting with . or -)`,
    };
  return text;
}

/**
 * Makes a principal's folder if it is not there, readable by the gateway's user only (0700):
 * called before its process starts, so that only principals who use a server get a folder.
 */
export async function makePrincipalHome(folder: string): Promise<void> {
  await mkdir(folder, { recursive: true, mode: 0o700 });
  // A folder made earlier with a looser mode (by hand, or under another umask) is tightened too.
  await chmod(folder, 0o700);
}
