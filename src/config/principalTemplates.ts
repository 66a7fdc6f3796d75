/**
 * Where the config's `${principal.…}` strings end up once it is read: each stdio server entry takes
 * those of its `args`, `env` and `cwd` as templates (`StdioServerConfig.perPrincipal`), a
 * per-principal server without a `cwd` gets the principal's own folder, and every template that
 * stands where no principal is known is an error naming its key.
 */
import { formatKeyPath, type KeyPath, type TemplateFound } from './interpolate.js';
import { noPrincipalHere, PRINCIPAL_FORMS, unknownClaim } from './principalPlaceholders.js';
import type { PrincipalTemplate, PrincipalTemplates, WardenConfig } from './types.js';

/** What one stdio entry holds that may name the principal. */
export interface EntryStrings {
  /** Where the entry is: `servers.<name>`. */
  readonly at: KeyPath;
  /** The entry's `args` as written (a non-string item is the schema's to report). */
  readonly args: unknown;
  /** The names under the entry's `env`. */
  readonly env: unknown;
  /** Whether the entry gives a `cwd`. */
  readonly hasCwd: boolean;
  /** Whether this server runs one process per principal (with `listen:`, not `shared: true`). */
  readonly perPrincipal: boolean;
}

/** The templates of the config, and a record of which a server entry took. */
export interface TemplateLookup {
  readonly templates: ReadonlyMap<string, TemplateFound>;
  readonly used: Set<string>;
}

/** The principal's own folder: where a per-principal process works when its entry gives no `cwd`. */
export const HOME_CWD: PrincipalTemplate = Object.freeze([Object.freeze({ principal: 'home' })]);

/**
 * The templates of one stdio entry, or undefined when none of its strings names the principal and
 * it is not per principal. A per-principal entry without `cwd` works in `${principal.home}`.
 */
export function principalTemplatesOf(
  entry: EntryStrings,
  lookup: TemplateLookup,
): PrincipalTemplates | undefined {
  const take = (keyPath: KeyPath): PrincipalTemplate | undefined => {
    const key = formatKeyPath(keyPath);
    const found = lookup.templates.get(key);
    if (found !== undefined) lookup.used.add(key);
    return found?.template;
  };
  const args: Record<number, PrincipalTemplate> = {};
  if (Array.isArray(entry.args))
    entry.args.forEach((_arg, index) => {
      const template = take([...entry.at, 'args', index]);
      if (template !== undefined) args[index] = template;
    });
  const env: Record<string, PrincipalTemplate> = {};
  if (typeof entry.env === 'object' && entry.env !== null)
    for (const name of Object.keys(entry.env)) {
      const template = take([...entry.at, 'env', name]);
      // Defined, not assigned, so a variable named `__proto__` stays data.
      if (template !== undefined) Object.defineProperty(env, name, { value: template, enumerable: true });
    }
  const cwd = entry.hasCwd ? take([...entry.at, 'cwd']) : entry.perPrincipal ? HOME_CWD : undefined;
  if (Object.keys(args).length === 0 && Object.keys(env).length === 0 && cwd === undefined) return undefined;
  return { args, env, ...(cwd !== undefined && { cwd }) };
}

export interface TemplateCheck {
  readonly templates: readonly TemplateFound[];
  /** Whether a server entry took the template at this key path. */
  readonly used: (keyPath: KeyPath) => boolean;
  /** See `LoadOptions.listening`. */
  readonly listening: boolean | undefined;
  /** The section that declared a server first (`servers` or `mcpServers`). */
  readonly declaredIn: (server: string) => string | undefined;
  readonly add: (keyPath: KeyPath, message: string) => void;
}

/**
 * Reports every `${principal.…}` that has no value where it stands: outside a stdio server's args,
 * env and cwd, in a server that one process runs for everyone, or naming a claim that no token's
 * claims reach the gateway with (not in `auth.claims`).
 */
export function checkPrincipalTemplates(
  config: Pick<WardenConfig, 'servers' | 'auth'>,
  check: TemplateCheck,
): void {
  for (const { path, template } of check.templates) {
    const [section, name] = path;
    const server =
      typeof name === 'string' && check.declaredIn(name) === section
        ? config.servers.find((s) => s.name === name)
        : undefined;
    if (server !== undefined && server.transport === 'http') {
      check.add(
        path,
        noPrincipalHere({ server: server.name, transport: 'http', shared: false, listening: true })!,
      );
      continue;
    }
    if (server === undefined || !check.used(path)) {
      check.add(
        path,
        `${PRINCIPAL_FORMS} have a value only in a stdio server's args, env and cwd, when its process starts for one principal`,
      );
      continue;
    }
    const refusal = noPrincipalHere({
      server: server.name,
      transport: server.transport,
      shared: server.shared,
      listening: check.listening,
    });
    if (refusal !== undefined) {
      check.add(path, refusal);
      continue;
    }
    for (const part of template) {
      if (typeof part === 'string') continue;
      const claim = unknownClaim(part.principal, config.auth?.claims);
      if (claim !== undefined) check.add(path, claim);
    }
  }
}
