/**
 * Loading the CommonJS modules `npm run build` generates (the validators of our config and
 * policy documents, the dialects' meta-schemas, the bundled ajv) with V8's code cache.
 *
 * Why: the config's validator is one function of about 240 KB of code, and V8 compiles it on its
 * first call, at every start-up, before any upstream can be spawned (measured: about as long as
 * loading it). The build runs each generated module once and writes V8's cache of its compiled
 * code beside it (`<file>.v8cache`); loading with that cache skips the compilation. A cache that
 * this V8 cannot use (another Node version, other V8 flags) is rejected by V8 itself and the
 * code is compiled as without one; without a cache file the module is required as usual. It is
 * compiled under V8's own flags, as the build made the cache (lib/v8Flags.ts).
 */
import { channel } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { underV8Defaults } from './v8Flags.js';

/** Beside each generated module: V8's code cache of it, written by the build. */
export const CODE_CACHE_SUFFIX = '.v8cache';

/** How a generated module's text is run: as Node runs a CommonJS module, in a function. */
export function wrapCommonJs(source: string): string {
  return `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
}

/** What is published as a generated module is loaded: how a test sees that its cache was used. */
export interface GeneratedLoad {
  readonly file: string;
  /** V8 compiled it from the build's code cache. */
  readonly fromCache: boolean;
}

const loads = channel('mcp-warden:generated-load');

interface CommonJsModule {
  exports: unknown;
}

type ModuleFunction = (
  exports: unknown,
  require: NodeJS.Require,
  module: CommonJsModule,
  filename: string,
  dirname: string,
) => void;

/**
 * The exports of the generated CommonJS module at `file` (an absolute path), compiled from its
 * code cache when the build left one that this V8 accepts. Each call runs the module anew: the
 * callers keep what it returns.
 */
export function requireGenerated(file: string): unknown {
  let cachedData: Buffer;
  try {
    cachedData = readFileSync(`${file}${CODE_CACHE_SUFFIX}`);
  } catch {
    if (loads.hasSubscribers) loads.publish({ file, fromCache: false } satisfies GeneratedLoad);
    return createRequire(file)(file);
  }
  const source = wrapCommonJs(readFileSync(file, 'utf8'));
  // The build made the cache under V8's own flags, which a serving gateway has changed since.
  const script = underV8Defaults(() => new Script(source, { filename: file, cachedData }));
  if (loads.hasSubscribers)
    loads.publish({ file, fromCache: script.cachedDataRejected === false } satisfies GeneratedLoad);
  const module: CommonJsModule = { exports: {} };
  const run = script.runInThisContext() as ModuleFunction;
  run(module.exports, createRequire(file), module, file, path.dirname(file));
  return module.exports;
}
