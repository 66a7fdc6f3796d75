#!/usr/bin/env node
// The last step of `npm run build`, after tsc and scripts/generate-validators.mjs: bundles the
// gateway's own modules (tsc's output in dist/) into dist/cli.js and a few chunks in
// dist/chunks/, which is what the `mcp-warden` binary runs, what the tests run and what the
// package ships. Node 20 resolves, reads and links every ES module on its own, and start-up to
// the first answer loaded about 145 of ours: bundled, a stdio gateway loads about 60 files.
//
// Every dynamic import() stays a split point, so what a command or a feature loads only when
// it is used (the HTTP listener, telemetry, ajv, the SDK's schemas) is still loaded only then;
// packages from node_modules are not bundled and load as before. Each chunk is named after the
// module it starts from and keeps a comment naming each of our files it holds, so a stack trace
// still leads to our files (no source maps are shipped: they would point at src/).
//
// Chunks sit two folders below the package root, as dist/config/ does, so the paths our modules
// compute from their own location (the schemas, the package root) are the same bundled or not;
// the generated validators are copied beside the chunks for the same reason.

import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
const ENTRY = path.join(DIST, 'cli.js');
const CHUNKS = path.join(DIST, 'chunks');
const MARK = '// Bundled by scripts/bundle.mjs';

// A second run would bundle the bundle: tsc must have written dist/cli.js afresh.
if (readFileSync(ENTRY, 'utf8').includes(MARK))
  throw new Error('dist/cli.js is already a bundle; run `npm run build` (tsc first)');

const bundle = await rolldown({
  input: ENTRY,
  platform: 'node',
  // Node's modules and every package stay imports: only our own files are bundled.
  external: [/^node:/, /^[^./]/],
  logLevel: 'warn',
});
rmSync(CHUNKS, { recursive: true, force: true });
await bundle.write({
  dir: DIST,
  format: 'esm',
  entryFileNames: '[name].js',
  chunkFileNames: 'chunks/[name]-[hash].js',
  // Rolldown keeps the entry's `#!` line first.
  banner: MARK,
});
await bundle.close();

// The validators generated from our schemas are loaded from beside the module that loads them.
const generated = path.join(CHUNKS, 'generated');
mkdirSync(generated, { recursive: true });
for (const from of ['config/generated', 'features/policy/generated']) {
  const dir = path.join(DIST, from);
  if (!existsSync(dir)) throw new Error(`${dir} is missing: run scripts/generate-validators.mjs first`);
  cpSync(dir, generated, { recursive: true });
}

// The audit report inlines Chart.js's browser build into each page it writes: the file is
// copied here, beside the chunk that reads it, so the installed package carries it and chart.js
// stays a development dependency.
const chart = path.join(path.dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.min.js');
mkdirSync(path.join(CHUNKS, 'assets'), { recursive: true });
cpSync(chart, path.join(CHUNKS, 'assets', 'chart.umd.min.js'));
