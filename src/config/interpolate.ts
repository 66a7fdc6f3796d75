/**
 * `${VAR}` / `${VAR:-default}` expansion in the string values of a parsed config, with the
 * editors' own forms (`${env:VAR}`, `${userHome}`, `${workspaceFolder}`, ..., see
 * hostVariables.ts) so that a VS Code or Cursor `mcp.json` reads as it does in the editor.
 *
 * Works on plain parsed data (strings, numbers, lists, mappings) and reports problems with the
 * key path; the loader turns paths into file positions. Keys are never expanded: a mapping's
 * shape must be visible in the file.
 */
import { resolveHostVariable, type HostVariableOptions } from './hostVariables.js';
import { KEYCHAIN_PREFIX, resolveKeychain, type KeychainValues } from './keychain.js';
import { PRINCIPAL_PREFIX, principalField, templateText } from './principalPlaceholders.js';
import type { PrincipalTemplate } from './types.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** A key path into parsed data: mapping keys are strings, list indexes are numbers. */
export type KeyPath = readonly (string | number)[];

export interface InterpolationProblem {
  readonly path: KeyPath;
  readonly message: string;
}

export interface InterpolateOptions extends HostVariableOptions {
  /** Where `${NAME}` and `${env:NAME}` are looked up; usually `process.env`. */
  readonly env: Env;
  /** Told of every environment variable a string reads, and whether it has a default. */
  readonly onVariable?: (name: string, options: { readonly hasDefault: boolean }) => void;
  /** The secrets `${keychain:NAME}` reads, found in the credential store before interpolation. */
  readonly keychain?: KeychainValues;
  /**
   * Keep `${principal.id}`, `${principal.home}` and `${principal.claims.NAME}` for the start of a
   * principal's own process (principalPlaceholders.ts): the string is returned as written, with
   * its parts in `template`. Without it, such a reference is a problem.
   */
  readonly keepPrincipal?: boolean;
}

/** A string that names the principal, at its key path, as parts (see `expandString`). */
export interface TemplateFound {
  readonly path: KeyPath;
  readonly template: PrincipalTemplate;
}

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/;

/** The editors write `${env:NAME}` for what is `${NAME}` here; both read the environment. */
const ENV_PREFIX = 'env:';

const FORMS =
  'expected ${NAME}, ${NAME:-default}, ${env:NAME}, ${keychain:NAME}, ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator} or ${/}; write $${ for a literal "${"';

/**
 * Expands one string. `$${` is a literal `${`. In `${NAME:-default}` the default is used when
 * NAME is unset or empty (as in POSIX shells and docker compose); it runs to the first `}` and
 * is not itself expanded. `${env:NAME:-default}` is the same: the editors have no defaults, but
 * the prefix only says where the value comes from, so the two forms behave alike. Problems are
 * messages; the result is still returned for the caller to discard.
 *
 * With `keepPrincipal`, a string naming the principal comes back with `template`: its literal
 * text (variables already expanded) and principal parts in order, so that a value from the
 * environment or a `$${` is never read as a placeholder when the process starts. `value` then
 * shows the references as written.
 */
export function expandString(
  text: string,
  options: InterpolateOptions,
): { value: string; problems: string[]; template?: PrincipalTemplate } {
  const problems: string[] = [];
  const parts: (string | { readonly principal: string })[] = [''];
  let principal = false;
  const emit = (literal: string) => {
    const last = parts.length - 1;
    const tail = parts[last];
    if (typeof tail === 'string') parts[last] = tail + literal;
    else parts.push(literal);
  };
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      emit('${');
      i += 3;
      continue;
    }
    if (!text.startsWith('${', i)) {
      emit(text[i]!);
      i += 1;
      continue;
    }
    const close = text.indexOf('}', i + 2);
    if (close === -1) {
      problems.push(`unterminated "\${" in ${JSON.stringify(text.slice(i))}: ${FORMS}`);
      emit(text.slice(i));
      break;
    }
    const body = text.slice(i + 2, close);
    i = close + 1;
    if (body.startsWith(PRINCIPAL_PREFIX)) {
      const found = principalField(body);
      if ('problem' in found) problems.push(found.problem);
      else if (options.keepPrincipal !== true)
        problems.push(
          `\${${body}} has a value only in a server's args, env or cwd, when its process starts for one principal`,
        );
      else {
        parts.push({ principal: found.field });
        principal = true;
      }
      continue;
    }
    const host = resolveHostVariable(body, options);
    if (host !== undefined) {
      if ('problem' in host) problems.push(host.problem);
      else emit(host.value);
      continue;
    }
    if (body.startsWith(KEYCHAIN_PREFIX)) {
      const secret = resolveKeychain(body, options.keychain);
      if ('problem' in secret) problems.push(secret.problem);
      else emit(secret.value);
      continue;
    }
    const variable = resolveEnvVariable(body, options);
    if ('problem' in variable) problems.push(variable.problem);
    else emit(variable.value);
  }
  const template = parts.filter((part) => part !== '');
  if (!principal) return { value: parts.join(''), problems };
  return { value: templateText(template), problems, template };
}

/** `NAME`, `NAME:-default` or `env:NAME…`, read from the environment the config is loaded with. */
function resolveEnvVariable(
  body: string,
  options: InterpolateOptions,
): { value: string } | { problem: string } {
  const prefix = body.startsWith(ENV_PREFIX) ? ENV_PREFIX : '';
  const match = REFERENCE.exec(body.slice(prefix.length));
  if (match === null) return { problem: `invalid variable reference "\${${body}}": ${FORMS}` };
  const [, name = '', fallback] = match;
  options.onVariable?.(name, { hasDefault: fallback !== undefined });
  // hasOwn, so `${constructor}` does not find Object.prototype.constructor in a plain env object.
  const value = Object.hasOwn(options.env, name) ? options.env[name] : undefined;
  if (fallback !== undefined) return { value: value === undefined || value === '' ? fallback : value };
  if (value === undefined) {
    return {
      problem: `environment variable "${name}" is not set (use \${${prefix}${name}:-default} to give a default)`,
    };
  }
  return { value };
}

/** Expands every string in `value`, returning a new tree (the input is not modified). */
export function interpolate(
  value: unknown,
  options: InterpolateOptions,
): { value: unknown; problems: InterpolationProblem[]; templates: TemplateFound[] } {
  const problems: InterpolationProblem[] = [];
  const templates: TemplateFound[] = [];
  const walk = (node: unknown, path: KeyPath): unknown => {
    if (typeof node === 'string') {
      const result = expandString(node, options);
      for (const message of result.problems) problems.push({ path, message });
      if (result.template !== undefined) templates.push({ path, template: result.template });
      return result.value;
    }
    if (Array.isArray(node)) return node.map((item, index) => walk(item, [...path, index]));
    if (typeof node === 'object' && node !== null) {
      // fromEntries defines own properties, so a `__proto__` key stays data, not a prototype.
      return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, walk(item, [...path, key])]));
    }
    return node;
  };
  return { value: walk(value, []), problems, templates };
}

/**
 * `servers.fs.args[0]`. Keys that would read ambiguously in dotted form (containing `.`, brackets,
 * quotes or spaces, or empty) are written as `["key"]`.
 */
export function formatKeyPath(keyPath: KeyPath): string {
  let out = '';
  for (const segment of keyPath) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[^.[\]"\s]+$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}
