/**
 * The listings file: what each server listed when it last ran (its tools, prompts, resources,
 * templates, capabilities and instructions), so a server that starts lazily is listed without
 * being started, and the host's initialize answer need not wait for a slow server it has seen. It lives beside the pins file (`<pins>.listings.json`), or without `pins:` in
 * the user's state folder, named for the config file.
 *
 * Each listing is kept under a key made of the server entry (command, args, working folder, a
 * hash of its environment, url, a hash of its headers) and of the package it runs (the spec an
 * `npx` or `uvx` command names and, where it can be found on disk, the installed version): a
 * changed entry or package makes the listing unusable, and the server starts once to be listed
 * again. A listing is never trusted beyond what it lists: the pins check its tools like any
 * other, and the server's first real listing replaces it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { ServerConfig, WardenConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { ListingStore, ServerListing } from '../../core/upstreams/startPolicy.js';
import { canonicalJson } from '../../lib/canonicalJson.js';
import { describeError } from '../../lib/describeError.js';
import { sha256Hex } from '../../lib/hash.js';
import { writeAtomically } from './pinFile.js';

/** The format written; a file of another version is ignored (and replaced on the next write). */
const LISTINGS_VERSION = 1;

interface KeptListing {
  /** The entry's key when it was listed (see `listingKey`). */
  readonly key: string;
  readonly keptAt: string;
  readonly listing: ServerListing;
}

type Listings = Record<string, KeptListing>;

/** Where a config's listings are kept. */
export function listingsFile(config: Pick<WardenConfig, 'file' | 'pins'>, env = process.env): string {
  if (config.pins !== undefined) return config.pins.file.replace(/(\.json)?$/, '.listings.json');
  const state = env.XDG_STATE_HOME || path.join(env.HOME || homedir(), '.local', 'state');
  return path.join(state, 'mcp-warden', `listings-${sha256Hex(config.file).slice(0, 16)}.json`);
}

/**
 * The servers' listings, kept between runs: a lazy server is listed from its own, and any server
 * still starting when the host initializes gives its capabilities and instructions from its own.
 * A file that cannot be read or written is logged, never fatal: lazy servers then start to be
 * listed, as if they had never been.
 */
export function createListingCache(
  config: Pick<WardenConfig, 'file' | 'pins'>,
  deps: { readonly logger: Logger; readonly file?: string },
): ListingStore {
  const file = deps.file ?? listingsFile(config);
  const log = deps.logger;
  let listings: Listings | undefined;
  const load = (): Listings => (listings ??= readListings(file, (m) => log.warn(m)));
  return {
    read(server) {
      const kept = load()[server.name];
      if (kept === undefined) return undefined;
      if (kept.key !== listingKey(server)) {
        log.info(`server "${server.name}": its entry or package changed since it was last listed`);
        return undefined;
      }
      return kept.listing;
    },
    write(server, listing) {
      // Re-read first: another gateway (another host) may share the file.
      const next = readListings(file, () => {});
      next[server.name] = { key: listingKey(server), keptAt: new Date().toISOString(), listing };
      listings = next;
      try {
        writeAtomically(file, JSON.stringify({ version: LISTINGS_VERSION, servers: next }));
      } catch (error) {
        log.warn(`could not keep the listing of server "${server.name}" in ${file}: ${describeError(error)}`);
      }
    },
  };
}

function readListings(file: string, warn: (message: string) => void): Listings {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      warn(`cannot read the listings file ${file}: ${describeError(error)}; lazy servers start to be listed`);
    return {};
  }
  try {
    const data = JSON.parse(text) as { version?: unknown; servers?: unknown };
    if (data.version !== LISTINGS_VERSION || typeof data.servers !== 'object' || data.servers === null)
      return {};
    const listings: Listings = Object.create(null) as Listings;
    for (const [name, kept] of Object.entries(data.servers as Record<string, unknown>))
      if (isKept(kept)) listings[name] = kept;
    return listings;
  } catch (error) {
    warn(
      `the listings file ${file} is not valid JSON (${describeError(error)}); lazy servers start to be listed`,
    );
    return {};
  }
}

function isKept(value: unknown): value is KeptListing {
  if (typeof value !== 'object' || value === null) return false;
  const { key, listing } = value as Record<string, unknown>;
  if (typeof key !== 'string' || typeof listing !== 'object' || listing === null) return false;
  const { lists, capabilities } = listing as Record<string, unknown>;
  return (
    typeof capabilities === 'object' &&
    capabilities !== null &&
    typeof lists === 'object' &&
    lists !== null &&
    Object.values(lists).every(Array.isArray)
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
          installed: installedVersion(server.command, server.args, server.cwd),
        }
      : { url: server.url, headers: hashOf(server.headers) };
  return sha256Hex(canonicalJson({ transport: server.transport, ...entry }));
}

/**
 * The version of the package an `npx` command runs, as installed: in the working folder's
 * `node_modules` (or a parent's), else the newest copy in npx's own cache. Undefined for other
 * commands (a `uvx` spec is part of the args already) and when none is found.
 */
export function installedVersion(
  command: string,
  args: readonly string[],
  cwd: string,
  home = homedir(),
): string | undefined {
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
