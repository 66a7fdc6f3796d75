/**
 * Runs the built gateway (the CommonJS chunks scripts/bundle.mjs writes) with V8's code cache
 * of our own code, kept in the user's state folder, so that neither start-up nor the first call
 * of a session compiles our code again.
 *
 * Why: V8 compiles each function on its first run. A gateway's first tools/call ran our whole
 * call path for the first time, and compiling it was most of what that call cost beyond the
 * tenth (measured: 9.2 ms of CPU against 1.6 ms). Node 20's loader of ES modules takes no code
 * cache, so the bundle is CommonJS text that this module compiles itself, handing V8 the cache
 * of the last serving gateway; once that gateway had answered its first call, the cache holds
 * every function compiled so far, the call path included.
 *
 * The cache is code this process runs, so it is used only from a file and folder that belong to
 * the user and that nobody else may write; it is written with mode 0600. It is keyed by the
 * bundle's digest, Node's version, the machine's architecture and V8's flags, and names the
 * folder of the install that made it: a cache made for anything else is ignored (and replaced by
 * the next serving gateway). Each chunk's part carries
 * its SHA-256, so a damaged file is never handed to V8. Reading never fails a start: a missing,
 * unreadable or refused cache only means compiling as without one.
 *
 * Loading follows what ES modules did: packages from node_modules are loaded with `import()`
 * (their ESM builds, as before), and the chunks a chunk needs are loaded first. Chunks loaded
 * on use stay loaded on use. Every `import()` is made here, never by a chunk: a script compiled
 * from a code cache made in another process cannot make its own (Node 20 loses what ties it to
 * the loader), and this module sits beside the chunks, so names resolve as they would for them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
} from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachedDataVersionTag } from 'node:v8';
import { Script } from 'node:vm';
import { stateFolder } from './stateFolder.js';

/** What the chunks ask `require` for to reach this module (the bundle keeps it outside). */
export const CODE_CACHE_MODULE = '#code-cache';

/** The build's list of chunks, beside them: the digest of them all, and what each one needs. */
export const MANIFEST_FILE = 'manifest.json';

/** The format of the cache file; a file of another version is ignored. */
const CACHE_VERSION = 1;

/** Larger than any cache of our code (a few MB): such a file is not read. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024;

export interface ChunkNeeds {
  /** The chunks it requires as it runs (file names beside it). */
  readonly requires: readonly string[];
  /** The packages it requires as it runs; they are imported before it runs. */
  readonly packages: readonly string[];
}

export interface Manifest {
  readonly digest: string;
  readonly chunks: Readonly<Record<string, ChunkNeeds>>;
}

/** How this process used the cache: for the debug log, and for the tests through it. */
export interface CodeCacheUse {
  readonly file: string;
  /** Chunks compiled so far, and how many of them V8 took from the cache. */
  readonly chunks: number;
  readonly fromCache: number;
  /** Why no cache was used, when none was: missing, or why it was refused. */
  readonly refused?: string;
}

interface CacheEntry {
  readonly offset: number;
  readonly length: number;
  readonly sha256: string;
}

interface ReadCache {
  readonly key: string;
  readonly data: Buffer;
  readonly entries: Map<string, CacheEntry>;
}

/** A loaded chunk: its script (for the cache) and what it exports. */
interface Chunk {
  readonly script: Script;
  readonly module: { exports: unknown };
  /** Whether V8 took its code from the cache. */
  readonly cached: boolean;
  /** V8's flags when it was compiled (their tag): V8 takes a cache made under those only. */
  readonly flags: number;
}

type ChunkFunction = (
  exports: unknown,
  require: (specifier: string) => unknown,
  module: { exports: unknown },
  filename: string,
  dirname: string,
  importChunk: (specifier: string) => Promise<unknown>,
  importPackage: (specifier: string) => Promise<unknown>,
  importMetaResolve: (specifier: string) => string,
) => void;

/** Published as each chunk is loaded (its path): how a test sees which of our files a process ran. */
const loads = channel('mcp-warden:chunk-load');

/** The bundle this process runs; undefined when running from source (nothing to cache). */
let running: Bundle | undefined;

/** The cache file in the state folder `env` names (XDG_STATE_HOME, else ~/.local/state). */
export function codeCacheFile(env: NodeJS.ProcessEnv, home: string): string {
  return path.join(stateFolder(env, home), 'code-cache.bin');
}

/**
 * Runs the bundle's entry chunk `entry` (a file URL or path), compiled from the code cache when
 * there is one for it. Called once, by the binary.
 */
export async function runBundle(entry: string | URL): Promise<void> {
  const file = entry instanceof URL || entry.startsWith('file:') ? fileURLToPath(entry) : entry;
  const dir = path.dirname(file);
  const manifest = JSON.parse(readFileSync(path.join(dir, MANIFEST_FILE), 'utf8')) as Manifest;
  running = new Bundle(dir, manifest, codeCacheFile(process.env, homedir()));
  await running.importChunk(file);
}

/** How this process used the cache so far; undefined when it does not run the bundle. */
export function codeCacheUse(): CodeCacheUse | undefined {
  return running?.use();
}

export interface WriteCodeCacheOptions {
  /**
   * Sets, in turn, each set of V8 flags this process compiled under, calling `take` under each,
   * and then the flags as they were. V8 takes a chunk's cache only under the flags it was made
   * under, and the next start compiles each chunk under the flags this one did.
   */
  readonly underEachFlagSet: (take: () => void) => void;
}

/**
 * Writes the cache of every chunk compiled so far, unless the file already holds one that V8
 * took for each: the code is taken at once (call it on an idle turn), the file is written
 * after. Resolves with what was written; undefined when nothing was (not the bundle, nothing
 * new, or a write that failed: the next start compiles as this one did).
 */
export function writeCodeCache(
  options: WriteCodeCacheOptions,
): Promise<{ readonly file: string; readonly bytes: number } | undefined> {
  return running?.write(options) ?? Promise.resolve(undefined);
}

class Bundle {
  private readonly chunks = new Map<string, Chunk>();
  private readonly packages = new Map<string, unknown>();
  private readonly key: string;
  private cache: ReadCache | undefined;
  private refused: string | undefined;
  /** A part of the cache was missing, damaged or rejected: the file is worth writing again. */
  private stale = false;
  /** The folder is not the user's alone: the cache is neither read nor written there. */
  private unsafeFolder = false;
  private written = false;

  constructor(
    private readonly dir: string,
    private readonly manifest: Manifest,
    private readonly file: string,
  ) {
    // Plain text, not a digest: a start without a cache file loads no hash function for it.
    this.key = `${manifest.digest} node ${process.version} ${process.arch} v8 flags ${cachedDataVersionTag()}`;
    this.cache = this.read();
  }

  use(): CodeCacheUse {
    let fromCache = 0;
    for (const chunk of this.chunks.values()) if (chunk.cached) fromCache += 1;
    return {
      file: this.file,
      chunks: this.chunks.size,
      fromCache,
      ...(this.refused !== undefined && { refused: this.refused }),
    };
  }

  /** Loads the packages `file` and the chunks it requires need, then runs it. */
  async importChunk(file: string): Promise<unknown> {
    const known = this.chunks.get(file);
    if (known !== undefined) return known.module.exports;
    const wanted = new Set<string>();
    const seen = new Set<string>();
    const visit = (name: string): void => {
      const needs = this.manifest.chunks[name];
      if (needs === undefined || seen.has(name) || this.chunks.has(path.join(this.dir, name))) return;
      seen.add(name);
      for (const pkg of needs.packages) if (!this.packages.has(pkg)) wanted.add(pkg);
      for (const next of needs.requires) visit(next);
    };
    visit(path.basename(file));
    await Promise.all(
      [...wanted].map(async (pkg) => {
        // Imported from here, beside the chunks: Node resolves it as it would for them.
        const namespace = (await import(pkg)) as unknown;
        this.packages.set(pkg, namespace);
      }),
    );
    return this.requireChunk(file);
  }

  private requireChunk(file: string): unknown {
    const known = this.chunks.get(file);
    if (known !== undefined) return known.module.exports;
    const name = path.basename(file);
    const cachedData = this.cachedData(name);
    const source = readFileSync(file, 'utf8');
    // On the chunk's first line, so that every line number in a stack trace is the file's own.
    const script = new Script(
      `(function (exports, require, module, __filename, __dirname, __importChunk, __importPackage, __importMetaResolve) {${source}\n})`,
      {
        filename: file,
        ...(cachedData !== undefined && { cachedData }),
      },
    );
    // Only V8 knows whether it took the cache: `false` is its word that it did.
    const cached = cachedData !== undefined && script.cachedDataRejected === false;
    if (cachedData !== undefined && !cached) this.stale = true;
    const module = { exports: {} as unknown };
    // Registered before it runs: chunks that require each other get what is exported so far.
    this.chunks.set(file, { script, module, cached, flags: cachedDataVersionTag() });
    if (loads.hasSubscribers) loads.publish(file);
    const nodeRequire = createRequire(file);
    const run = script.runInThisContext() as ChunkFunction;
    run(
      module.exports,
      (specifier) => this.require(specifier, file, nodeRequire),
      module,
      file,
      path.dirname(file),
      (specifier) => this.importChunk(path.resolve(path.dirname(file), specifier)),
      // From here, beside the chunks: Node resolves it as it would for them.
      (specifier) => import(specifier) as Promise<unknown>,
      (specifier) => import.meta.resolve(specifier),
    );
    return module.exports;
  }

  private require(specifier: string, from: string, nodeRequire: NodeJS.Require): unknown {
    if (specifier === CODE_CACHE_MODULE) return { codeCacheUse, writeCodeCache, codeCacheFile };
    if (specifier.startsWith('./') || specifier.startsWith('../'))
      return this.requireChunk(path.resolve(path.dirname(from), specifier));
    if (this.packages.has(specifier)) return this.packages.get(specifier);
    // Node's own modules.
    return nodeRequire(specifier);
  }

  /** The cache of chunk `name`, when the file holds an intact one for this bundle. */
  private cachedData(name: string): Buffer | undefined {
    const cache = this.cache;
    if (cache === undefined) return undefined;
    const entry = cache.entries.get(name);
    if (entry === undefined) {
      this.stale = true;
      return undefined;
    }
    const data = cache.data.subarray(entry.offset, entry.offset + entry.length);
    if (data.length !== entry.length || createHash('sha256').update(data).digest('hex') !== entry.sha256) {
      this.stale = true;
      return undefined;
    }
    return data;
  }

  /** The cache file, when it is ours, safe and for this bundle; else undefined and why. */
  private read(): ReadCache | undefined {
    const refuse = (why: string): undefined => {
      this.refused = why;
      this.stale = true;
      return undefined;
    };
    let data: Buffer;
    try {
      const folder = statSync(path.dirname(this.file));
      if (!ownedSafely(folder)) {
        this.unsafeFolder = true;
        return refuse('its folder is writable by others or not the user’s');
      }
      const fd = openSync(this.file, fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0));
      try {
        const stat = fstatSync(fd);
        if (!stat.isFile() || !ownedSafely(stat)) return refuse('it is writable by others or not the user’s');
        if (stat.size > MAX_CACHE_BYTES) return refuse('it is too large');
        data = Buffer.allocUnsafe(stat.size);
        let at = 0;
        while (at < data.length) {
          const n = readSync(fd, data, at, data.length - at, at);
          if (n === 0) break;
          at += n;
        }
        data = data.subarray(0, at);
      } finally {
        closeSync(fd);
      }
    } catch {
      return refuse('there is none');
    }
    try {
      const headerLength = data.readUInt32LE(0);
      const header = JSON.parse(data.toString('utf8', 4, 4 + headerLength)) as {
        version?: unknown;
        key?: unknown;
        dir?: unknown;
        entries?: unknown;
      };
      if (header.version !== CACHE_VERSION || header.key !== this.key)
        return refuse('it was made for another build, Node or V8 flags');
      // V8 keeps the file names a cache was made with: compiled from another install's cache, our
      // code would name that install's files in every stack trace it logs.
      if (header.dir !== this.dir)
        return refuse(`it was made by mcp-warden installed in ${String(header.dir)}`);
      const entries = new Map<string, CacheEntry>();
      for (const [name, entry] of Object.entries(header.entries as Record<string, CacheEntry>))
        entries.set(name, entry);
      return { key: this.key, data: data.subarray(4 + headerLength), entries };
    } catch {
      return refuse('it is damaged');
    }
  }

  write(
    options: WriteCodeCacheOptions,
  ): Promise<{ readonly file: string; readonly bytes: number } | undefined> {
    if (this.written || !this.stale || this.unsafeFolder) return Promise.resolve(undefined);
    this.written = true;
    const parts = new Map<string, Buffer>();
    options.underEachFlagSet(() => {
      const flags = cachedDataVersionTag();
      for (const [file, chunk] of this.chunks)
        if (chunk.flags === flags && !parts.has(path.basename(file)))
          parts.set(path.basename(file), chunk.script.createCachedData());
    });
    if (parts.size === 0) return Promise.resolve(undefined);
    // Chunks this process did not load keep their part of the file, when it was for this bundle.
    if (this.cache !== undefined)
      for (const name of this.cache.entries.keys())
        if (!parts.has(name)) {
          const data = this.cachedData(name);
          if (data !== undefined) parts.set(name, data);
        }
    const entries: Record<string, CacheEntry> = {};
    let offset = 0;
    for (const [name, data] of parts) {
      entries[name] = {
        offset,
        length: data.length,
        sha256: createHash('sha256').update(data).digest('hex'),
      };
      offset += data.length;
    }
    const header = Buffer.from(
      JSON.stringify({ version: CACHE_VERSION, key: this.key, dir: this.dir, entries }),
    );
    const length = Buffer.alloc(4);
    length.writeUInt32LE(header.length);
    const bytes = Buffer.concat([length, header, ...parts.values()]);
    return replaceFile(this.file, bytes).then(
      () => ({ file: this.file, bytes: bytes.length }),
      // A cache: without it the next start compiles, as this one did.
      () => undefined,
    );
  }
}

/** Owned by this user and writable by nobody else. */
function ownedSafely(stat: { readonly mode: number; readonly uid: number }): boolean {
  return (stat.mode & 0o022) === 0 && (process.getuid === undefined || stat.uid === process.getuid());
}

/** Writes `file` whole or not at all: a reader never sees half of it. */
async function replaceFile(file: string, bytes: Buffer): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(temp, bytes, { mode: 0o600, flag: 'wx' });
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
