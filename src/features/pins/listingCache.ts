/**
 * The listings kept between runs: what each server listed when it last ran (a lazy server's
 * tools, prompts, resources and templates; every server's capabilities and instructions), so a
 * lazy server is listed without being started, and the host's initialize answer need not wait
 * for a slow server it has seen. They live in a folder beside the pins file (see
 * `listingsFolder`).
 *
 * Each listing is kept under a key made of the server entry (command, args, working folder, a
 * hash of its environment, url, a hash of its headers) and of the package it runs (the spec an
 * `npx` or `uvx` command names and, where it can be found on disk (the project, npx's or uv's
 * cache), the installed version): a
 * changed entry or package makes the listing unusable, and the server starts once to be listed
 * again. A listing is never trusted beyond what it lists: the pins check its tools like any
 * other, and the server's first real listing replaces it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { ServerConfig, StdioServerConfig, WardenConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { Params } from '../../core/protocol/jsonRpc.js';
import { LIST_KINDS } from '../../core/upstreams/listSync.js';
import { startsLazily, type ListingStore, type ServerListing } from '../../core/upstreams/startPolicy.js';
import { canonicalJson } from '../../lib/canonicalJson.js';
import { describeError } from '../../lib/describeError.js';
import { sha256Hex } from '../../lib/hash.js';
import { writeAtomically } from './pinFile.js';
import { stateFolder } from '../../lib/stateFolder.js';

/** The format written; a file of another version is ignored (and replaced on the next write). */
const LISTINGS_VERSION = 1;

/** What is kept of every server: small, read for each at start. */
interface KeptFacts {
  readonly version: number;
  /** The entry's key when it was listed (see `listingKey`). */
  readonly key: string;
  readonly keptAt: string;
  readonly capabilities: Params;
  readonly instructions?: string;
}

/**
 * Where a config's listings are kept: a folder beside the pins file, or without `pins:` one in
 * the user's state folder named for the config file. In it, per server, `<name>.json` holds the
 * key, capabilities and instructions, and `<name>.lists.json` (lazy servers only) the lists.
 */
export function listingsFolder(config: Pick<WardenConfig, 'file' | 'pins'>, env = process.env): string {
  if (config.pins !== undefined) return config.pins.file.replace(/(\.json)?$/, '.listings');
  return path.join(stateFolder(env), `listings-${sha256Hex(config.file).slice(0, 16)}`);
}

/**
 * The servers' listings, kept between runs: a lazy server is listed from its own, and any server
 * still starting when the host initializes gives the capabilities and instructions it last
 * declared. Only a lazy server's lists are kept (they may be megabytes): an eager server's
 * capabilities are all that is read of it. A file that cannot be read or written is logged,
 * never fatal: a lazy server then starts to be listed, as if it had never been.
 */
export function createListingCache(
  config: Pick<WardenConfig, 'file' | 'pins'>,
  deps: { readonly logger: Logger; readonly folder?: string },
): ListingCache {
  const folder = deps.folder ?? listingsFolder(config);
  const log = deps.logger;
  const fileOf = (server: ServerConfig, part: '' | '.lists') =>
    path.join(folder, `${encodeURIComponent(server.name)}${part}.json`);
  const look = (server: ServerConfig): ListingLook => {
    const warnings: string[] = [];
    const facts = readJson(fileOf(server, ''), (m) => warnings.push(m));
    if (!isFacts(facts)) return { missing: warnings.length > 0 ? 'unreadable' : 'never', warnings };
    if (facts.key !== listingKey(server)) return { missing: 'changed', warnings };
    const kept = {
      capabilities: facts.capabilities,
      ...(facts.instructions !== undefined && { instructions: facts.instructions }),
      keptAt: facts.keptAt,
    };
    if (!startsLazily(server)) return { listing: kept, warnings };
    const lists = readJson(fileOf(server, '.lists'), (m) => warnings.push(m));
    return isLists(lists)
      ? { listing: { ...kept, lists }, warnings }
      : { missing: warnings.length > 0 ? 'unreadable' : 'never', warnings };
  };
  return {
    look,
    read(server) {
      const found = look(server);
      for (const warning of found.warnings) log.warn(warning);
      if (found.missing === 'changed')
        log.info(`server "${server.name}": its entry or package changed since it was last listed`);
      return found.listing;
    },
    write(server, listing) {
      const facts: KeptFacts = {
        version: LISTINGS_VERSION,
        key: listingKey(server),
        keptAt: new Date().toISOString(),
        capabilities: listing.capabilities,
        ...(listing.instructions !== undefined && { instructions: listing.instructions }),
      };
      try {
        // The lists first: facts that name a key are only ever next to the lists they key.
        if (startsLazily(server) && listing.lists !== undefined)
          writeAtomically(fileOf(server, '.lists'), JSON.stringify(listing.lists));
        writeAtomically(fileOf(server, ''), JSON.stringify(facts));
      } catch (error) {
        log.warn(
          `could not keep the listing of server "${server.name}" in ${folder}: ${describeError(error)}`,
        );
      }
    },
  };
}

/**
 * What the cache holds for one server, and if nothing usable, why: `never` listed (or its lists
 * are missing), its entry or package `changed` since, or its files `unreadable` (`warnings` say
 * how). Reading it logs nothing: `read` logs what it finds, `check` reports it.
 */
export type ListingLook =
  | { readonly listing: ServerListing; readonly missing?: undefined; readonly warnings: readonly string[] }
  | {
      readonly listing?: undefined;
      readonly missing: 'never' | 'changed' | 'unreadable';
      readonly warnings: readonly string[];
    };

/** The listings kept for one config, with a look that says why a server has none. */
export interface ListingCache extends ListingStore {
  look(server: ServerConfig): ListingLook;
}

/**
 * The listings one principal's own processes keep, apart from everyone else's: what a server
 * lists may depend on whose credentials it runs with (a signed-in HTTP server lists that user's
 * resources), so one principal's listing is never shown to another. The folder is named by a
 * hash of the principal's key, which names no one.
 */
export function principalListingCache(
  config: Pick<WardenConfig, 'file' | 'pins'>,
  deps: { readonly logger: Logger; readonly principalKey: string },
): ListingCache {
  const folder = path.join(listingsFolder(config), 'principals', sha256Hex(deps.principalKey).slice(0, 24));
  return createListingCache(config, { logger: deps.logger, folder });
}

/** A file's JSON; undefined when it is missing or unreadable (which `warn` hears of). */
function readJson(file: string, warn: (message: string) => void): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      warn(`cannot read ${file}: ${describeError(error)}; a lazy server starts to be listed`);
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    warn(`${file} is not valid JSON (${describeError(error)}); a lazy server starts to be listed`);
    return undefined;
  }
}

function isFacts(value: unknown): value is KeptFacts {
  if (typeof value !== 'object' || value === null) return false;
  const { version, key, capabilities, instructions } = value as Record<string, unknown>;
  return (
    version === LISTINGS_VERSION &&
    typeof key === 'string' &&
    typeof capabilities === 'object' &&
    capabilities !== null &&
    (instructions === undefined || typeof instructions === 'string')
  );
}

function isLists(value: unknown): value is NonNullable<ServerListing['lists']> {
  return (
    typeof value === 'object' &&
    value !== null &&
    LIST_KINDS.every((kind) => Array.isArray((value as Record<string, unknown>)[kind]))
  );
}

/**
 * What a listing is good for: the server entry as it starts the server, and the package it runs.
 * Values of the environment and headers are hashed with their names, so the file holds no secret.
 */
export function listingKey(server: ServerConfig): string {
  const hashOf = (values: Readonly<Record<string, string>>) => sha256Hex(canonicalJson(values));
  const entry =
    server.transport === 'stdio'
      ? {
          command: server.command,
          args: server.args,
          cwd: server.cwd,
          env: hashOf(server.env),
          installed: installedFor(server),
        }
      : { url: server.url, headers: hashOf(server.headers) };
  return sha256Hex(canonicalJson({ transport: server.transport, ...entry }));
}

/** The installed version of what a stdio entry runs, looked for as its process would (its env). */
function installedFor(server: StdioServerConfig): string | undefined {
  const env = { ...process.env, ...server.env };
  return installedVersion(server.command, server.args, server.cwd, env.HOME || homedir(), env);
}

/**
 * The version of the package an `npx` or `uvx` command runs, as installed. For `npx`: in the
 * working folder's `node_modules` (or a parent's), else the newest copy in npx's own cache. For
 * `uvx`: the newest copy in uv's cache (its version spec, if any, is in the args already, but an
 * unpinned one runs whatever uv last installed). Undefined for other commands and when none is
 * found.
 */
export function installedVersion(
  command: string,
  args: readonly string[],
  cwd: string,
  home = homedir(),
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (/^uvx(\.exe)?$/.test(path.basename(command))) return uvxInstalledVersion(args, uvCache(home, env));
  if (!/^npx(\.cmd)?$/.test(path.basename(command))) return undefined;
  const name = packageName(args);
  if (name === undefined) return undefined;
  const candidates: string[] = [];
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    candidates.push(path.join(dir, 'node_modules', name, 'package.json'));
    if (path.dirname(dir) === dir) break;
  }
  const found = candidates.find(exists) ?? newestInNpxCache(path.join(home, '.npm', '_npx'), name);
  if (found === undefined) return undefined;
  try {
    const version = (JSON.parse(readFileSync(found, 'utf8')) as { version?: unknown }).version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}

/** The package an npx command line runs: `--package`/`-p`'s value, else the first argument not a flag. */
function packageName(args: readonly string[]): string | undefined {
  let spec: string | undefined;
  for (let i = 0; i < args.length && spec === undefined; i++) {
    const arg = args[i]!;
    if (arg === '-p' || arg === '--package') spec = args[i + 1];
    else if (arg.startsWith('--package=')) spec = arg.slice('--package='.length);
    else if (!arg.startsWith('-')) spec = arg;
  }
  if (spec === undefined) return undefined;
  // `@scope/name@1.2.3` or `name@^1`: the name is what comes before the version's `@`.
  const at = spec.indexOf('@', spec.startsWith('@') ? 1 : 0);
  return at === -1 ? spec : spec.slice(0, at);
}

/** Where uv keeps its cache: `UV_CACHE_DIR`, else uv's folder in the user's cache folder. */
function uvCache(home: string, env: NodeJS.ProcessEnv): string {
  if (env.UV_CACHE_DIR) return env.UV_CACHE_DIR;
  return path.join(env.XDG_CACHE_HOME || path.join(home, '.cache'), 'uv');
}

/** uvx's options that take a value: the value is not the package. */
const UVX_VALUED = new Set(['--from', '--with', '--with-editable', '--with-requirements', '--python', '-p']);
const UVX_VALUED_MORE =
  /^--(index|index-url|extra-index-url|default-index|find-links|cache-dir|directory|project|constraints?|overrides?)$/;

/**
 * The version of the package a `uvx` command line runs, as installed in uv's cache: the newest
 * `<name>-<version>.dist-info` in the environments uv made. The package is `--from`'s, else the
 * command uvx runs (the first argument that is neither an option nor an option's value).
 */
function uvxInstalledVersion(args: readonly string[], cache: string): string | undefined {
  let spec: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--from') {
      spec = args[i + 1];
      break;
    }
    if (arg.startsWith('--from=')) {
      spec = arg.slice('--from='.length);
      break;
    }
    if (UVX_VALUED.has(arg) || UVX_VALUED_MORE.test(arg)) i++;
    else if (!arg.startsWith('-')) {
      spec ??= arg;
      break;
    }
  }
  // `name==1.2`, `name@1.2`, `name[extra]>=1`: the name is what comes before the spec's operator.
  const name = spec?.split(/[=<>!~@[;\s]/)[0];
  if (name === undefined || name === '') return undefined;
  const wanted = distName(name);
  let newest: { version: string; mtime: number } | undefined;
  for (const packages of sitePackages(path.join(cache, 'archive-v0'))) {
    let entries: string[];
    try {
      entries = readdirSync(packages);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const match = /^(.+)-([^-]+)\.dist-info$/.exec(entry);
      if (match === null || distName(match[1]!) !== wanted) continue;
      try {
        const mtime = statSync(path.join(packages, entry)).mtimeMs;
        if (newest === undefined || mtime > newest.mtime) newest = { version: match[2]!, mtime };
      } catch {
        // Gone while we looked.
      }
    }
  }
  return newest?.version;
}

/** A Python distribution's name as installers write it: lower case, runs of `-_.` as one `_`. */
function distName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '_');
}

/** The `site-packages` folders of the environments in uv's `archive-v0` cache. */
function sitePackages(archive: string): string[] {
  const found: string[] = [];
  const list = (dir: string) => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  for (const env of list(archive)) {
    const root = path.join(archive, env);
    found.push(path.join(root, 'Lib', 'site-packages'));
    for (const lib of list(path.join(root, 'lib')))
      if (lib.startsWith('python')) found.push(path.join(root, 'lib', lib, 'site-packages'));
  }
  return found;
}

function newestInNpxCache(cache: string, name: string): string | undefined {
  let newest: { file: string; mtime: number } | undefined;
  let entries: string[];
  try {
    entries = readdirSync(cache);
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    const file = path.join(cache, entry, 'node_modules', name, 'package.json');
    try {
      const mtime = statSync(file).mtimeMs;
      if (newest === undefined || mtime > newest.mtime) newest = { file, mtime };
    } catch {
      // Not in this one.
    }
  }
  return newest?.file;
}

function exists(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
