/**
 * The code the build generated or bundled (validators, meta-schemas, ajv) is compiled from the
 * code cache the build wrote beside it, also once a serving gateway has changed V8's flags,
 * under which V8 would refuse a cache made under its own (lib/v8Flags.ts). And the bundled ajv
 * (scripts/bundleAjv.mjs) is ajv as installed: it judges schemas and data the same, and ships
 * with every bundled package's licence.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Ajv, Options } from 'ajv';
import type { AjvBundle, AjvClass } from '../../src/lib/schema/dialectAjv.js';
import { afterEach, describe, expect, it } from 'vitest';
import { requireGenerated } from '../../src/lib/generatedCode.js';
import { connectHost, FAST_GATEWAY, fixture, tempDir, writeConfig, type HostSession } from './harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RECORDER = path.join(ROOT, 'test/fixtures/recordImports.mjs');
const BUNDLE = path.join(ROOT, 'dist/chunks/vendor/ajv.cjs');

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

interface GeneratedLoad {
  readonly file: string;
  readonly fromCache: boolean;
}

/** The generated modules a gateway loaded while the host called `tool` with `args`, and how. */
async function generatedLoadsOfCall(tool: string, args: Record<string, unknown>) {
  const dir = tempDir();
  const loads = path.join(dir, 'generated.jsonl');
  const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }, dir);
  host = await connectHost(config, {
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

  it('ships with the licence of every package bundled in it', () => {
    const code = readFileSync(BUNDLE, 'utf8');
    const bundled = new Set(
      [...code.matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)].map((m) => m[1]),
    );
    expect([...bundled]).toContain('ajv');
    expect([...bundled]).toContain('ajv-formats');
    const licences = readFileSync(`${BUNDLE}.LICENSES.txt`, 'utf8');
    for (const name of bundled) {
      const version = (installed(`${name}/package.json`) as { version: string }).version;
      expect(licences).toContain(`${name}@${version} (`);
    }
  });
});
