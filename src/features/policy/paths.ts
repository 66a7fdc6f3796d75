/**
 * The `paths` condition of a rule: does any filesystem path in a call's arguments lie inside
 * (or, for tools that walk a whole tree, contain) one of the rule's folders?
 *
 * Arguments are judged as the server will act on them, not as raw JSON: `~` is expanded,
 * relative paths are resolved, `.`, `..` and repeated slashes collapse, `file://` URIs are
 * decoded, and symlinks are followed on the part of the path that exists. Whatever cannot be
 * judged that way (a path too long, a symlink loop, a component we may not read, too many or
 * too deeply nested arguments) is `unverifiable`, which the engine denies: this condition
 * never lets a call through because it could not look.
 */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ArgumentVerdict, PathCondition, PathConditionSpec } from './types.js';

/** What a compiled condition needs to know about the machine; every field has a default. */
export interface PathConditionOptions {
  /** Expands `~`. Default: `os.homedir()` when the policy loads (the HOME variable on POSIX). */
  readonly homedir?: string;
  /**
   * Folders a relative path is resolved against; it matches when it lands under a folder from
   * any of them. Default: the gateway's working directory and the home directory, since the
   * server's own base (its working directory, or the filesystem server's allowed folders) is
   * not known to the policy.
   */
  readonly relativeTo?: readonly string[];
  /** Compare without regard to case. Default: true on macOS and Windows, false elsewhere. */
  readonly caseInsensitive?: boolean;
}

/** Bounds on what one call may ask the condition to look at; past them the call is unverifiable. */
export const PATH_LIMITS = Object.freeze({
  /** Linux's PATH_MAX; a longer path cannot name a file, so it is a trick or a mistake. */
  maxPathBytes: 4096,
  maxPathArguments: 1000,
  maxDepth: 32,
  /** Values of every kind visited while looking for paths. */
  maxNodes: 100_000,
});

/** Property names the heuristic takes to hold paths (compared without case). */
export const PATH_PROPERTY_NAMES: readonly string[] = Object.freeze([
  'path',
  'paths',
  'file',
  'files',
  'filename',
  'filepath',
  'dir',
  'dirs',
  'directory',
  'directories',
  'folder',
  'folders',
  'root',
  'roots',
  'source',
  'destination',
  'target',
  'cwd',
]);

/** A value the heuristic takes for a path wherever it appears. */
const PATH_LIKE = /^(?:\/|~(?:\/|\\|$)|\.\.?(?:\/|\\)|file:|[A-Za-z]:[\\/]|\\\\)/i;

type Normalised =
  | { readonly kind: 'ok'; readonly forms: readonly string[] }
  | { readonly kind: 'unverifiable'; readonly why: string };

interface Resolver {
  readonly homedir: string;
  readonly relativeTo: readonly string[];
  readonly fold: (p: string) => string;
}

function makeResolver(options: PathConditionOptions): Resolver {
  const homedir = path.resolve(options.homedir ?? os.homedir());
  const insensitive =
    options.caseInsensitive ?? (process.platform === 'darwin' || process.platform === 'win32');
  return {
    homedir,
    relativeTo: (options.relativeTo ?? [process.cwd(), homedir]).map((base) => path.resolve(base)),
    fold: insensitive ? (p) => p.toLowerCase() : (p) => p,
  };
}

/**
 * Every absolute form `raw` may take as the server acts on it: the lexical form (dots collapsed)
 * and the form with symlinks resolved, for each base a relative path may be resolved against.
 * Exported for tests and the benchmark.
 */
export function normalisePath(raw: string, options: PathConditionOptions = {}): Normalised {
  return normaliseWith(raw, makeResolver(options));
}

function normaliseWith(raw: string, resolver: Resolver): Normalised {
  if (Buffer.byteLength(raw, 'utf8') > PATH_LIMITS.maxPathBytes) {
    return unverifiable(`a path is longer than ${PATH_LIMITS.maxPathBytes} bytes`);
  }
  if (raw.includes('\u0000')) return unverifiable('a path contains a NUL character');
  let text = raw;
  if (/^file:/i.test(text)) {
    try {
      // Decodes percent-encoding; accepts an empty host or "localhost", refuses any other.
      text = fileURLToPath(new URL(text));
    } catch (error) {
      return unverifiable(`the file URI ${quote(raw)} cannot be read as a local path (${messageOf(error)})`);
    }
  }
  if (text === '~') text = resolver.homedir;
  else if (text.startsWith('~/') || text.startsWith('~\\')) text = path.join(resolver.homedir, text.slice(2));
  // A relative path is as the server resolves it, which the policy cannot know: every base.
  const joined = path.isAbsolute(text)
    ? [text]
    : resolver.relativeTo.map((base) => `${base}${path.sep}${text}`);
  const forms = new Set<string>();
  for (const absolute of joined) {
    const lexical = path.resolve(absolute);
    forms.add(lexical);
    // Symlinks followed on the path as written, where the system applies `..` after following
    // a link, and on the lexical form, which is what servers that collapse dots first open.
    for (const candidate of lexical === absolute ? [lexical] : [lexical, absolute]) {
      const real = realpathOfExisting(candidate);
      if (real.kind === 'unverifiable') return real;
      forms.add(real.path);
    }
  }
  return { kind: 'ok', forms: [...forms] };
}

/** realpath of the longest part of `p` that exists, with the rest appended. */
function realpathOfExisting(
  p: string,
): { readonly kind: 'ok'; readonly path: string } | { readonly kind: 'unverifiable'; readonly why: string } {
  const missing: string[] = [];
  let current = p;
  for (;;) {
    try {
      const real = realpathSync.native(current);
      return { kind: 'ok', path: missing.length === 0 ? real : path.resolve(real, ...missing.reverse()) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') {
        // ELOOP, EACCES, ENAMETOOLONG, ...: where the path leads is unknown.
        return unverifiable(`the symlinks of ${quote(p)} cannot be followed (${code ?? messageOf(error)})`);
      }
      const parent = path.dirname(current);
      if (parent === current) return { kind: 'ok', path: path.resolve(p) };
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

/**
 * Compiles a `paths` condition. The `under` folders get the same normalisation as arguments,
 * once, now: a folder that is itself a symlink matches by both its names. Throws an `Error`
 * naming the folder when one cannot be used (the loader reports it with its place).
 */
export function compilePathCondition(
  spec: PathConditionSpec,
  options: PathConditionOptions = {},
): PathCondition {
  const resolver = makeResolver(options);
  const folders = new Set<string>();
  for (const folder of spec.under) {
    const problem = folderProblem(folder);
    if (problem !== null) throw new Error(problem);
    const normalised = normaliseWith(folder, resolver);
    if (normalised.kind === 'unverifiable') throw new Error(`folder ${quote(folder)}: ${normalised.why}`);
    for (const form of normalised.forms) folders.add(resolver.fold(form));
  }
  const compiled: CompiledPaths = {
    spec,
    resolver,
    roots: [...folders],
    described: spec.under.map(quote).join(', '),
    relation: (folded, root) =>
      isInside(folded, root) ? 'in' : spec.includingAncestors && isInside(root, folded) ? 'contains' : null,
  };
  const names = spec.pathArguments === null ? null : new Set(spec.pathArguments.map((n) => n.toLowerCase()));
  return {
    spec,
    test(args) {
      try {
        const found = collectPaths(args, names);
        if (found.kind === 'unverifiable') return found;
        return spec.every ? testEvery(compiled, found.paths) : testAny(compiled, found.paths);
      } catch (error) {
        return unverifiable(`the paths could not be checked (${messageOf(error)})`);
      }
    },
  };
}

/** What a compiled condition tests paths against, fixed when the policy loads. */
interface CompiledPaths {
  readonly spec: PathConditionSpec;
  readonly resolver: Resolver;
  /** The `under` folders by every name they have, case-folded as the resolver compares. */
  readonly roots: readonly string[];
  /** The `under` folders as the rule wrote them, for verdict texts. */
  readonly described: string;
  /** How a folded path stands to a root: inside it, or (with `includingAncestors`) above it. */
  readonly relation: (folded: string, root: string) => 'in' | 'contains' | null;
}

/** The default: some path, by some name it has, is in (or above) a folder. */
function testAny(compiled: CompiledPaths, paths: readonly string[]): ArgumentVerdict {
  const { spec, resolver, roots, described, relation } = compiled;
  for (const raw of paths) {
    const normalised = normaliseWith(raw, resolver);
    if (normalised.kind === 'unverifiable') return normalised;
    for (const form of normalised.forms) {
      const folded = resolver.fold(form);
      for (const root of roots) {
        const how = relation(folded, root);
        if (how !== null)
          return {
            kind: 'match',
            why: `path ${quote(raw)} ${how === 'in' ? 'is in' : 'contains'} ${quote(root)}, under ${described}`,
          };
      }
    }
  }
  return {
    kind: 'mismatch',
    why:
      paths.length === 0
        ? 'no argument holds a path'
        : `no path argument is ${spec.includingAncestors ? 'in or above' : 'in'} ${described}`,
  };
}

/**
 * `every`: the call names at least one path, and each of them, by every name it has (collapsed,
 * symlinks followed, each base of a relative path), is in a folder. A path that leaves the
 * folders by `..` or through a symlink fails, so a rule that grants something inside a folder
 * never grants it outside.
 */
function testEvery(compiled: CompiledPaths, paths: readonly string[]): ArgumentVerdict {
  const { spec, resolver, roots, described, relation } = compiled;
  if (paths.length === 0) return { kind: 'mismatch', why: 'no argument holds a path' };
  for (const raw of paths) {
    const normalised = normaliseWith(raw, resolver);
    if (normalised.kind === 'unverifiable') return normalised;
    for (const form of normalised.forms) {
      const folded = resolver.fold(form);
      if (!roots.some((root) => relation(folded, root) !== null)) {
        const shown = form === raw ? '' : ` (as ${quote(form)})`;
        return {
          kind: 'mismatch',
          why: `path ${quote(raw)}${shown} is not ${spec.includingAncestors ? 'in or above' : 'in'} ${described}`,
        };
      }
    }
  }
  return { kind: 'match', why: `every path argument is in ${described}` };
}

/** Why a folder may not be written in `under`, or null. */
export function folderProblem(folder: string): string | null {
  if (folder === '~' || folder.startsWith('~/') || /^file:/i.test(folder) || path.isAbsolute(folder))
    return null;
  return `folder ${quote(folder)} is relative: write an absolute path, or one starting with "~/"`;
}

/** `p` is `root` or inside it (both absolute and normalised). */
function isInside(p: string, root: string): boolean {
  if (p === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return p.startsWith(prefix);
}

/**
 * The strings in `args` that hold paths: with `names`, every string at or below a property so
 * named; without, the heuristic (a property with a path-like name, or a value that looks like
 * a path). Bounded: too many paths, values or levels make the call unverifiable.
 */
function collectPaths(
  args: unknown,
  names: ReadonlySet<string> | null,
):
  | { readonly kind: 'ok'; readonly paths: readonly string[] }
  | { readonly kind: 'unverifiable'; readonly why: string } {
  const paths: string[] = [];
  let nodes = 0;
  const heuristicNames = names ?? HEURISTIC_NAMES;
  // Iterative, so nesting cannot exhaust the stack before the depth bound says so.
  const stack: { value: unknown; depth: number; named: boolean }[] = [
    { value: args, depth: 0, named: false },
  ];
  while (stack.length > 0) {
    const { value, depth, named } = stack.pop()!;
    if (++nodes > PATH_LIMITS.maxNodes)
      return unverifiable(`the arguments hold more than ${PATH_LIMITS.maxNodes} values`);
    if (typeof value === 'string') {
      // A value with a line break is text (a file's content), not a path.
      if (named || (names === null && !value.includes('\n') && PATH_LIKE.test(value))) {
        paths.push(value);
        if (paths.length > PATH_LIMITS.maxPathArguments) {
          return unverifiable(`the arguments hold more than ${PATH_LIMITS.maxPathArguments} paths`);
        }
      }
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= PATH_LIMITS.maxDepth)
      return unverifiable(`the arguments are nested more than ${PATH_LIMITS.maxDepth} deep`);
    if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, depth: depth + 1, named });
      continue;
    }
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      stack.push({ value: item, depth: depth + 1, named: named || heuristicNames.has(key.toLowerCase()) });
    }
  }
  return { kind: 'ok', paths };
}

const HEURISTIC_NAMES: ReadonlySet<string> = new Set(PATH_PROPERTY_NAMES);

function unverifiable(why: string): { readonly kind: 'unverifiable'; readonly why: string } {
  return { kind: 'unverifiable', why };
}

/** Paths go into denial texts: long ones are cut. */
function quote(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
