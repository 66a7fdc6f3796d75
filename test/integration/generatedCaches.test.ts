/**
 * The code the build generated or bundled (validators, meta-schemas, ajv, yaml) is compiled from
 * the code cache the build wrote beside it, also once a serving gateway has changed V8's flags,
 * under which V8 would refuse a cache made under its own (lib/v8Flags.ts). And the bundled
 * packages (scripts/bundleVendor.mjs) are the packages as installed: ajv judges schemas and data
 * the same, yaml reads documents the same, and each bundle ships with its packages' licences.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Ajv, Options } from 'ajv';
import type { AjvBundle, AjvClass } from '../../src/lib/schema/dialectAjv.js';
import { afterEach, describe, expect, it } from 'vitest';
import { requireGenerated, type GeneratedLoad } from '../../src/lib/generatedCode.js';
import { connectHost, FAST_GATEWAY, fixture, tempDir, writeConfig, type HostSession } from './harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RECORDER = path.join(ROOT, 'test/fixtures/recordImports.mjs');
const VENDOR = path.join(ROOT, 'dist/chunks/vendor');
const BUNDLE = path.join(VENDOR, 'ajv.cjs');

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

/**
 * The generated modules a gateway loaded while the host called `tool` with `args`, and how;
 * `config` is written as it is given (text: YAML; an object: JSON).
 */
async function generatedLoadsOfCall(
  tool: string,
  args: Record<string, unknown>,
  config: string | object = { gateway: FAST_GATEWAY, servers: { up: fixture() } },
) {
  const dir = tempDir();
  const loads = path.join(dir, 'generated.jsonl');
  const file = writeConfig(config, dir);
  host = await connectHost(file, {
    env: { NODE_OPTIONS: `--import ${RECORDER}`, WARDEN_GENERATED_FILE: loads },
  });
  const result = await host.client.callTool({ name: tool, arguments: args });
  await host.close();
  host = undefined;
  const loaded = readFileSync(loads, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as GeneratedLoad)
    .map(({ file, fromCache }) => ({ file: path.relative(ROOT, file), fromCache }));
  return { result, loaded };
}

describe('the built gateway', () => {
  it('loads ajv from its bundle and the meta-schema check from generated code, each from its cache, after serving set its flags', async () => {
    // Arguments that do not match are worded by ajv (its first use in this gateway), whose
    // schema is checked against its dialect's meta-schema first.
    const { result, loaded } = await generatedLoadsOfCall('up__echo', { text: 5 });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/text must be string/);
    expect(loaded).toContainEqual({ file: 'dist/chunks/vendor/ajv.cjs', fromCache: true });
    expect(loaded).toContainEqual({ file: 'dist/chunks/generated/meta-2020-12.cjs', fromCache: true });
    // A JSON config is read without yaml.
    expect(loaded.map(({ file }) => file)).not.toContain('dist/chunks/vendor/yaml.cjs');
  });

  it('reads a YAML config with yaml from its bundle, from its cache', async () => {
    const [command, ...args] = fixture().args as string[];
    const yamlConfig = `# as users write it
gateway:
  startupTimeout: 5s
servers:
  up:
    command: ${JSON.stringify(process.execPath)}
    args: [${[command!, ...args].map((arg) => JSON.stringify(arg)).join(', ')}]
`;
    const { result, loaded } = await generatedLoadsOfCall('up__echo', { text: 'x' }, yamlConfig);
    expect(result.isError).not.toBe(true);
    expect(loaded).toContainEqual({ file: 'dist/chunks/vendor/yaml.cjs', fromCache: true });
  });
});

/** Schemas of the shapes tool schemas take, each with data it accepts and data it refuses. */
const CASES: readonly { schema: Record<string, unknown>; data: readonly unknown[] }[] = [
  {
    schema: {
      type: 'object',
      properties: { id: { $ref: '#/definitions/id' }, n: { type: 'integer', minimum: 1 } },
      required: ['id'],
      additionalProperties: false,
      definitions: { id: { type: 'string', not: { const: '' } } },
    },
    data: [{ id: 'a' }, { id: '' }, { id: 'a', n: 0 }, { id: 'a', extra: 1 }, {}],
  },
  {
    schema: { type: 'string', format: 'uri', pattern: '^https:' },
    data: ['https://example.com/x', 'http://example.com', 'https://', 'not a uri', 5],
  },
  {
    schema: {
      oneOf: [{ type: 'integer' }, { type: 'array', items: { type: 'number' }, uniqueItems: true }],
    },
    data: [1, [1, 2], [1, 1], 'x', 1.5],
  },
  {
    schema: {
      type: 'object',
      patternProperties: { '^x-': { type: 'boolean' } },
      if: { required: ['a'] },
      then: { required: ['b'] },
      dependentRequired: { c: ['d'] },
    },
    data: [{ 'x-y': true }, { 'x-y': 1 }, { a: 1 }, { a: 1, b: 2 }, { c: 1 }],
  },
];

const verdicts = (ajv: Ajv, schema: Record<string, unknown>, data: readonly unknown[]) => {
  const validate = ajv.compile(schema);
  return data.map((value) => [
    validate(value),
    (validate.errors ?? []).map(({ instancePath, keyword, message }) => ({ instancePath, keyword, message })),
  ]);
};

describe('the bundled ajv', () => {
  const bundle = requireGenerated(BUNDLE) as AjvBundle;
  const installed = createRequire(import.meta.url);
  const options: Options = { strict: false, allErrors: true, logger: false };
  const pairs: [string, AjvClass, AjvClass][] = [
    ['draft-07', bundle.Ajv, (installed('ajv') as typeof import('ajv')).Ajv],
    ['2019-09', bundle.Ajv2019, (installed('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js')).Ajv2019],
    ['2020-12', bundle.Ajv2020, (installed('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')).Ajv2020],
  ];

  it.each(pairs)('judges %s schemas and data as the installed ajv does', (_dialect, Bundled, Installed) => {
    const ours = new Bundled(options);
    bundle.addFormats(ours);
    const theirs = new Installed(options);
    (installed('ajv-formats') as (ajv: Ajv) => unknown)(theirs);
    for (const { schema, data } of CASES) {
      const found = verdicts(ours, schema, data);
      expect(found).toEqual(verdicts(theirs, schema, data));
      // Each case has data on both sides, so agreeing means something.
      expect(found.map(([valid]) => valid)).toContain(true);
      expect(found.map(([valid]) => valid)).toContain(false);
    }
  });
});

describe('the bundled yaml', () => {
  const bundle = requireGenerated(path.join(VENDOR, 'yaml.cjs')) as typeof import('yaml');
  const installed = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  const read = (yaml: typeof import('yaml'), text: string) => {
    const lineCounter = new yaml.LineCounter();
    const doc = yaml.parseDocument(text, {
      lineCounter,
      prettyErrors: false,
      uniqueKeys: true,
      logLevel: 'error',
    });
    const problems = [...doc.errors, ...doc.warnings].map((e) => [
      e.code,
      e.message,
      lineCounter.linePos(e.pos[0]),
    ]);
    return { problems, data: problems.length === 0 ? doc.toJS({ maxAliasCount: 100 }) : undefined };
  };

  it.each([
    ['the shipped config', readFileSync(path.join(ROOT, 'proxy.config.yaml'), 'utf8')],
    [
      'a config with anchors, block text and a flow list',
      'a: &x {b: 1}\nc: *x\nd: |\n  two\n  lines\ne: [1, "2", null]\n',
    ],
    ['a duplicate key', 'a: 1\na: 2\n'],
    ['an unknown tag', 'a: !env X\n'],
    ['a broken flow map', 'a: {b: 1\n'],
  ])('reads %s as the installed yaml does', (_what, text) => {
    expect(read(bundle, text)).toEqual(read(installed, text));
  });
});

describe('each bundle', () => {
  const installed = createRequire(import.meta.url);
  it.each([
    ['ajv.cjs', ['ajv', 'ajv-formats']],
    ['yaml.cjs', ['yaml']],
  ])('%s ships with the licence of every package bundled in it', (file, expected) => {
    const code = readFileSync(path.join(VENDOR, file), 'utf8');
    const bundled = new Set(
      [...code.matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)].map((m) => m[1]),
    );
    for (const name of expected) expect([...bundled]).toContain(name);
    const licences = readFileSync(path.join(VENDOR, `${file}.LICENSES.txt`), 'utf8');
    for (const name of bundled) {
      const version = (installed(`${name}/package.json`) as { version: string }).version;
      expect(licences).toContain(`${name}@${version} (`);
    }
  });
});
