#!/usr/bin/env node
// The last step of `npm run build`, after tsc and scripts/generate-validators.mjs: bundles the
// gateway's own modules (tsc's output in dist/) into a few CommonJS chunks in dist/chunks/, and
// makes dist/cli.js the small launcher that runs them. That is what the `mcp-warden` binary
// runs, what the tests run and what the package ships. Node 20 resolves, reads and links every
// ES module on its own, and start-up to the first answer loaded about 145 of ours: bundled, a
// stdio gateway loads about 60 files.
//
// CommonJS, because Node 20 takes no V8 code cache for ES modules: the launcher compiles the
// chunks itself with the cache the last serving gateway left (src/lib/codeCache.ts). Packages
// from node_modules are not bundled and are still imported as ES modules, as before; the
// manifest written beside the chunks says which packages and chunks each chunk needs, so the
// launcher imports them before it runs it.
//
// Every dynamic import() stays a split point, so what a command or a feature loads only when
// it is used (the HTTP listener, telemetry, ajv, the SDK's schemas) is still loaded only then.
// Each chunk is named after the module it starts from and keeps a comment naming each of our
// files it holds, so a stack trace still leads to our files (no source maps are shipped: they
// would point at src/).
//
// Chunks sit two folders below the package root, as dist/config/ does, so the paths our modules
// compute from their own location (the schemas, the package root) are the same bundled or not;
// the generated validators are copied beside the chunks for the same reason.

import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';
import { CODE_CACHE_SUFFIX, wrapCommonJs } from '../dist/lib/generatedCode.js';
import { bundleVendor } from './bundleVendor.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
const ENTRY = path.join(DIST, 'cli.js');
const CHUNKS = path.join(DIST, 'chunks');
const MARK = '// Bundled by scripts/bundle.mjs';

// A second run would bundle the bundle: tsc must have written dist/cli.js afresh.
if (readFileSync(ENTRY, 'utf8').includes(MARK))
  throw new Error('dist/cli.js is already a bundle; run `npm run build` (tsc first)');

const CODE_CACHE = path.join(DIST, 'lib', 'codeCache.js');
// What the chunks require to reach the launcher's own instance of src/lib/codeCache.ts.
const CODE_CACHE_MODULE = '#code-cache';

/**
 * Our modules as tsc wrote them, made fit for CommonJS: the branches taken only when running
 * from source (which await an import at the top level) are cut, and `import.meta.resolve` is
 * answered by the launcher, as ES modules beside the chunks would resolve.
 */
const forCommonJs = {
  name: 'for-commonjs',
  resolveId(source, importer) {
    if (
      importer !== undefined &&
      source.startsWith('.') &&
      path.resolve(path.dirname(importer), source) === CODE_CACHE
    )
      return { id: CODE_CACHE_MODULE, external: true };
    return null;
  },
  transform(code, id) {
    const out = code
      .replace(/import\.meta\.url\.endsWith\('\.ts'\)/g, 'false')
      .replace(/import\.meta\.resolve\(/g, '__importMetaResolve(');
    if (/import\.meta(?!\.url\b)/.test(out))
      throw new Error(`${id}: import.meta is only usable as import.meta.url here`);
    return out === code ? null : { code: out };
  },
  renderChunk(code, chunk) {
    // A chunk loaded on use: the launcher imports the packages it needs first.
    let out = code.replace(
      /Promise\.resolve\(\)\.then\(\(\) => require\(("\.\.?\/[^"]+\.cjs")\)\)/g,
      '__importChunk($1)',
    );
    if (
      /require\("\.\.?\/[^"]+\.cjs"\)/.test(
        out.replace(/^(?:(?:const|let) [\w$]+ = )?require\("[^"]+"\);$/gm, ''),
      )
    )
      throw new Error(
        `${chunk.fileName}: a chunk loaded on use is required in a way the launcher does not know: ${out.match(/.*require\("\.\.?\/[^"]+\.cjs"\).*/g)}`,
      );
    // A package loaded on use: imported by the launcher, beside the chunks, so resolved as from
    // them. V8's code cache does not keep what lets a compiled script's own import() work in
    // the next process, so the chunks never call import() themselves.
    out = out.replace(/(?<![\w$.])import\((?=")/g, '__importPackage(');
    const left = out
      .split('\n')
      .filter((line) => /(?<![\w$.])import\(/.test(line) && !/^\s*(?:\*|\/\/)/.test(line));
    if (left.length > 0)
      throw new Error(`${chunk.fileName}: an import() the launcher cannot make: ${left.join('\n')}`);
    // The entry's `#!` line: the launcher runs the chunk, in a function. Its line stays, empty.
    if (out.startsWith('#!')) out = out.replace(/^#![^\n]*/, '');
    return { code: out };
  },
  // After rendering: rolldown adds a chunk's exports once its renderChunk hooks have run.
  generateBundle(_options, bundle) {
    for (const item of Object.values(bundle)) if (item.type === 'chunk') item.code = plainExports(item.code);
  },
};

/** How rolldown exports a chunk's binding `local` as `name`: a getter, for a live binding. */
const EXPORT_GETTER =
  /^Object\.defineProperty\(exports, "([\w$]+)", \{\n\tenumerable: true,\n\tget: function\(\) \{\n\t\treturn ([\w$]+);\n\t\}\n\}\);$/gm;

/**
 * A chunk's exports as plain properties where no live binding is needed. Rolldown exports every
 * binding through a getter, and every use of it from another chunk (`require_x.name(...)`) then
 * calls that getter: on the call path, where most modules reach others across chunks, that was a
 * call per access in any code V8 had not optimized, and a load it could not fold in code it had.
 * A getter is kept only where the value could change after the chunk has run: a `let`, or a
 * `var` assigned again. Rolldown writes the exports after everything else in the chunk, so each
 * binding has its value by then; a chunk that reads another's export while that one is still
 * loading (a cycle) finds nothing either way, since the getters are not defined yet either.
 */
function plainExports(code) {
  return code.replace(EXPORT_GETTER, (getter, name, local) =>
    isFixedBinding(code, local) ? `exports.${name} = ${local};` : getter,
  );
}

/** Whether the chunk's top-level binding `local` keeps the value it was declared with. */
function isFixedBinding(code, local) {
  const id = local.replace(/\$/g, '\\$');
  if (new RegExp(`^(?:async function\\*? |function\\*? |class |const )${id}\\b`, 'm').test(code)) return true;
  if (!new RegExp(`^var ${id} = `, 'm').test(code)) return false;
  // Assigned, compound-assigned, incremented or decremented anywhere but in its declaration.
  const written = new RegExp(
    `(?<![\\w$.]|var )${id}\\s*(?:[-+*/%&|^]|\\*\\*|<<|>>>?|&&|\\|\\||\\?\\?)?=(?![=>])|(?:\\+\\+|--)\\s*${id}(?![\\w$])|(?<![\\w$.])${id}\\s*(?:\\+\\+|--)`,
  );
  return !written.test(code);
}

const bundle = await rolldown({
  input: { cli: ENTRY },
  platform: 'node',
  // Node's modules and every package stay imports: only our own files are bundled.
  external: [/^node:/, /^[^./]/],
  logLevel: 'warn',
  plugins: [forCommonJs],
});
rmSync(CHUNKS, { recursive: true, force: true });
const { output } = await bundle.write({
  dir: CHUNKS,
  format: 'cjs',
  entryFileNames: '[name].cjs',
  chunkFileNames: '[name]-[hash].cjs',
  // Packages loaded on use stay `import()`s (made by the launcher, see renderChunk); our chunks
  // loaded on use go through the launcher too.
  dynamicImportInCjs: true,
});
await bundle.close();

// What each chunk needs before it runs: the chunks it requires, and the packages, which the
// launcher imports (as ES modules) and hands to `require` by name.
const chunks = {};
const digest = createHash('sha256');
for (const chunk of output
  .filter((item) => item.type === 'chunk')
  .sort((a, b) => a.fileName.localeCompare(b.fileName))) {
  const packages = chunk.imports.filter(
    (name) => !name.startsWith('node:') && !name.endsWith('.cjs') && name !== CODE_CACHE_MODULE,
  );
  for (const name of packages)
    // A default import would take the whole namespace: Node's rule for CommonJS, not ours.
    if (chunk.code.includes(`__toESM(require(${JSON.stringify(name)}))`))
      throw new Error(
        `${chunk.fileName}: the default import of ${name} is not supported in the bundle; import names`,
      );
  chunks[chunk.fileName] = { requires: chunk.imports.filter((name) => name.endsWith('.cjs')), packages };
  digest.update(chunk.fileName).update('\0').update(chunk.code).update('\0');
}
writeFileSync(
  path.join(CHUNKS, 'manifest.json'),
  `${JSON.stringify({ digest: digest.digest('hex'), chunks })}\n`,
);

// The launcher's loader, which imports nothing of ours, as one ES module beside the chunks.
const loader = await rolldown({
  input: CODE_CACHE,
  platform: 'node',
  external: [/^node:/],
  logLevel: 'warn',
});
await loader.write({ dir: CHUNKS, format: 'esm', entryFileNames: 'codeCache.js', banner: MARK });
await loader.close();
writeFileSync(
  ENTRY,
  `#!/usr/bin/env node
${MARK}: runs the gateway's chunks with V8's code cache (src/lib/codeCache.ts).
import { runBundle } from './chunks/codeCache.js';

await runBundle(new URL('./chunks/cli.cjs', import.meta.url));
`,
);

// The validators generated from our schemas are loaded from beside the module that loads them.
const generated = path.join(CHUNKS, 'generated');
mkdirSync(generated, { recursive: true });
for (const from of ['config/generated', 'lib/schema/generated']) {
  const dir = path.join(DIST, from);
  if (!existsSync(dir)) throw new Error(`${dir} is missing: run scripts/generate-validators.mjs first`);
  cpSync(dir, generated, { recursive: true });
}

// ajv and yaml, each as one file with its code cache (scripts/bundleVendor.mjs says why).
await bundleVendor(path.join(CHUNKS, 'vendor'), { wrapCommonJs, codeCacheSuffix: CODE_CACHE_SUFFIX });

// The audit report inlines Chart.js's browser build into each page it writes: the file is
// copied here, beside the chunk that reads it, so the installed package carries it and chart.js
// stays a development dependency.
const chart = path.join(path.dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.min.js');
mkdirSync(path.join(CHUNKS, 'assets'), { recursive: true });
cpSync(chart, path.join(CHUNKS, 'assets', 'chart.umd.min.js'));
