// Part of scripts/bundle.mjs: ajv and ajv-formats as one CommonJS file beside the chunks
// (dist/chunks/vendor/ajv.cjs), with V8's code cache of it, which the built gateway loads when a
// tool's schema first needs ajv (src/lib/schema/dialectAjv.ts).
//
// Why: from node_modules, ajv is about a hundred CommonJS files that Node resolves, reads and
// compiles one by one, with no code cache: loading it took 55 to 72 ms of a fresh process, and
// its first compile 11 to 13 ms more (measured, 2 cores). One file compiled from a cache made
// after ajv has compiled a few schemas loads in 8 to 11 ms and compiles the first schema in
// about 6. That cost fell on the first call of any tool whose arguments ajv checks, and on the
// first call whose arguments do not match, since ajv words that message.
//
// The packages are bundled as they are installed, unchanged, and their licences are written
// beside the file. The gateway still depends on them: the generated validators require ajv's
// runtime helpers, and tsc's unbundled output (which the build's own scripts and the tests run)
// loads them from node_modules.

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { rolldown } from 'rolldown';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** What the bundle exports: the three dialects' classes and the formats plugin. */
const ENTRY = `exports.Ajv = require('ajv').Ajv;
exports.Ajv2019 = require('ajv/dist/2019.js').Ajv2019;
exports.Ajv2020 = require('ajv/dist/2020.js').Ajv2020;
exports.addFormats = require('ajv-formats');
`;
const ENTRY_ID = '\0ajv-bundle-entry';

/**
 * A schema of the shapes tool schemas take (references, formats, patterns, combinators), which
 * each dialect compiles once before the cache is written: the cache then holds the compiler's
 * code as well as the loading's, since V8 compiles a function only when it first runs.
 */
const SAMPLE_SCHEMA = {
  type: 'object',
  properties: {
    uri: { type: 'string', format: 'uri', pattern: '^h', minLength: 1 },
    id: { $ref: '#/definitions/id' },
    choice: {
      oneOf: [
        { type: 'integer', minimum: 0 },
        { type: 'array', items: { type: 'number' } },
      ],
    },
    flags: { type: 'object', patternProperties: { '^x-': { type: 'boolean' } }, additionalProperties: false },
    tags: { type: 'array', uniqueItems: true, items: { enum: ['a', 'b'] } },
  },
  required: ['uri'],
  if: { required: ['id'] },
  then: { not: { required: ['choice'] } },
  definitions: { id: { type: 'string', not: { const: '' } } },
};

/** Bundles ajv into `file`, writes its code cache and licences beside it. */
export async function bundleAjv(file, { wrapCommonJs, codeCacheSuffix }) {
  const bundle = await rolldown({
    input: ENTRY_ID,
    cwd: ROOT,
    platform: 'node',
    external: [/^node:/],
    logLevel: 'warn',
    plugins: [
      {
        name: 'ajv-bundle-entry',
        resolveId: (id) => (id === ENTRY_ID ? id : null),
        load: (id) => (id === ENTRY_ID ? ENTRY : null),
      },
    ],
  });
  const { output } = await bundle.write({
    file,
    format: 'cjs',
    banner: '// ajv and ajv-formats, bundled by scripts/bundleAjv.mjs; licences beside this file.',
  });
  await bundle.close();
  writeLicences(`${file}.LICENSES.txt`, output[0].moduleIds);

  const script = new Script(wrapCommonJs(readFileSync(file, 'utf8')), { filename: file });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, path.dirname(file));
  const { Ajv, Ajv2019, Ajv2020, addFormats } = module.exports;
  for (const Dialect of [Ajv, Ajv2019, Ajv2020]) {
    const ajv = new Dialect({ strict: false, allErrors: false, ownProperties: true, logger: false });
    addFormats(ajv);
    const validate = ajv.compile(SAMPLE_SCHEMA);
    validate({ uri: 'https://example.com', id: 'a', flags: { 'x-y': true }, tags: ['a'] });
    validate({ uri: '', choice: 'no' });
  }
  writeFileSync(`${file}${codeCacheSuffix}`, script.createCachedData());
}

/** Each bundled package's name, version, licence and licence text, in one file. */
function writeLicences(file, moduleIds) {
  const roots = new Set();
  for (const id of moduleIds) {
    const match = /^(.*[\\/]node_modules[\\/](?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(id);
    if (match !== null) roots.add(match[1]);
  }
  const parts = [...roots].sort().map((root) => {
    const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
    const licence = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license']
      .map((name) => path.join(root, name))
      .map((candidate) => {
        try {
          return readFileSync(candidate, 'utf8');
        } catch {
          return undefined;
        }
      })
      .find((text) => text !== undefined);
    if (licence === undefined)
      throw new Error(`${manifest.name}: no licence file to ship with its bundled code`);
    return `${manifest.name}@${manifest.version} (${manifest.license})\n\n${licence.trim()}\n`;
  });
  writeFileSync(file, `${parts.join('\n---\n\n')}`);
}
