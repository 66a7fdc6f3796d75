// Part of scripts/bundle.mjs: the packages the built gateway loads synchronously on a path a user
// waits on, each set bundled into one CommonJS file beside the chunks (dist/chunks/vendor/), with
// V8's code cache of it, which the gateway loads in their place (src/lib/vendored.ts):
//
// - ajv.cjs: ajv and ajv-formats, when a tool's schema first needs ajv (its first call, or the
//   first call whose arguments do not match, which ajv words);
// - yaml.cjs: yaml, at every start of a gateway whose config is YAML, as most are.
//
// Why: from node_modules each is dozens of CommonJS files that Node resolves, reads and compiles
// one by one, with no code cache, and its first use compiles its functions as they first run.
// Measured on a fresh process (2 cores): ajv loaded in 55 to 72 ms and compiled its first schema
// in 11 to 13 ms more; yaml loaded in 47 to 55 ms and parsed the shipped config in 15 to 18 ms.
// One file compiled from a cache made after the package has done that work once loads in about
// 10 ms, and the first use finds its code compiled.
//
// The packages are bundled as they are installed, unchanged, and their licences are written
// beside each file. The gateway still depends on them: the generated validators require ajv's
// runtime helpers, the commands that edit a config use yaml, and tsc's unbundled output (which
// the build's own scripts and the tests run) loads them from node_modules.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { rolldown } from 'rolldown';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

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

/** The YAML files shipped with the gateway: a config and policies, as users write them. */
function sampleYamlFiles() {
  const policies = path.join(ROOT, 'policies');
  return [
    path.join(ROOT, 'proxy.config.yaml'),
    ...readdirSync(policies)
      .filter((name) => name.endsWith('.yaml'))
      .map((name) => path.join(policies, name)),
  ];
}

/** Each bundle: what it exports, and the work its cache is made after. */
const BUNDLES = {
  ajv: {
    entry: `exports.Ajv = require('ajv').Ajv;
exports.Ajv2019 = require('ajv/dist/2019.js').Ajv2019;
exports.Ajv2020 = require('ajv/dist/2020.js').Ajv2020;
exports.addFormats = require('ajv-formats');
`,
    exercise({ Ajv, Ajv2019, Ajv2020, addFormats }) {
      for (const Dialect of [Ajv, Ajv2019, Ajv2020]) {
        const ajv = new Dialect({ strict: false, allErrors: false, ownProperties: true, logger: false });
        addFormats(ajv);
        const validate = ajv.compile(SAMPLE_SCHEMA);
        validate({ uri: 'https://example.com', id: 'a', flags: { 'x-y': true }, tags: ['a'] });
        validate({ uri: '', choice: 'no' });
      }
    },
  },
  yaml: {
    entry: `module.exports = require('yaml');\n`,
    // What src/config/yamlSource.ts does with a file: parse it with positions, visit its
    // scalars, turn it into data.
    exercise({ LineCounter, parseDocument, visit, isMap }) {
      for (const file of sampleYamlFiles()) {
        const lineCounter = new LineCounter();
        const doc = parseDocument(readFileSync(file, 'utf8'), {
          lineCounter,
          prettyErrors: false,
          uniqueKeys: true,
          logLevel: 'error',
        });
        if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0].message}`);
        visit(doc, { Scalar: (_key, node) => void lineCounter.linePos(node.range?.[0] ?? 0) });
        if (!isMap(doc.contents)) throw new Error(`${file}: not a mapping`);
        doc.toJS({ maxAliasCount: 100 });
      }
    },
  },
};

/** Bundles each package set into `folder`/NAME.cjs, with its code cache and licences beside it. */
export async function bundleVendor(folder, { wrapCommonJs, codeCacheSuffix }) {
  for (const [name, { entry, exercise }] of Object.entries(BUNDLES)) {
    const file = path.join(folder, `${name}.cjs`);
    const entryId = `\0vendor-${name}`;
    const bundle = await rolldown({
      input: entryId,
      cwd: ROOT,
      platform: 'node',
      external: [/^node:/],
      logLevel: 'warn',
      plugins: [
        {
          name: 'vendor-entry',
          resolveId: (id) => (id === entryId ? id : null),
          load: (id) => (id === entryId ? entry : null),
        },
      ],
    });
    const { output } = await bundle.write({
      file,
      format: 'cjs',
      banner: `// Packages bundled by scripts/bundleVendor.mjs, unchanged; licences in ${name}.cjs.LICENSES.txt.`,
    });
    await bundle.close();
    writeLicences(`${file}.LICENSES.txt`, output[0].moduleIds);

    const script = new Script(wrapCommonJs(readFileSync(file, 'utf8')), { filename: file });
    const module = { exports: {} };
    script.runInThisContext()(module.exports, createRequire(file), module, file, path.dirname(file));
    exercise(module.exports);
    writeFileSync(`${file}${codeCacheSuffix}`, script.createCachedData());
  }
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
