import { afterEach, describe, expect, it, vi } from 'vitest';

// Counts the ajv instances made for conditions: one is made when a condition is compiled.
const created = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/lib/schema/dialectAjv.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/lib/schema/dialectAjv.js')>();
  return {
    ...original,
    createDialectAjv: (...args: Parameters<typeof original.createDialectAjv>) => {
      created.count++;
      return original.createDialectAjv(...args);
    },
  };
});

const { COMPILE_LATER_KEYWORDS, createArgumentSchemaCompiler } =
  await import('../../src/features/policy/argumentSchema.js');
const { createConditionAjv } = await import('../../src/features/policy/conditionAjv.js');

afterEach(() => {
  created.count = 0;
});

/** Instances made so far, not counting those the source-mode dialect checks make (once per dialect). */
function compilerInstances(run: () => void): number {
  const before = created.count;
  run();
  return created.count - before;
}

describe('when argument conditions are compiled', () => {
  it('compiles a condition of plain keywords when a call first needs it, once', () => {
    const compiler = createArgumentSchemaCompiler();
    const schema = {
      type: 'object',
      required: ['path'],
      properties: { path: { type: 'string', pattern: '^/etc/' } },
    };
    // Warm the dialect's load-time checks, which come from ajv too when running from source.
    compiler.compile({ type: 'object' });
    let compiled: ReturnType<typeof compiler.compile> | undefined;
    expect(compilerInstances(() => (compiled = compiler.compile(schema)))).toBe(0);
    if (compiled?.kind !== 'ready') throw new Error('expected a ready condition');
    let verdict: unknown;
    expect(
      compilerInstances(
        () => (verdict = compiled?.kind === 'ready' && compiled.condition.test({ path: '/etc/passwd' })),
      ),
    ).toBe(1);
    expect(verdict).toEqual({ kind: 'match' });
    expect(
      compilerInstances(
        () => (verdict = compiled?.kind === 'ready' && compiled.condition.test({ path: '/tmp/x' })),
      ),
    ).toBe(0);
    expect(verdict).toEqual({ kind: 'mismatch', why: 'arguments/path must match pattern "^/etc/"' });
  });

  it('compiles a condition that could fail to compile when the file loads, and reports the failure there', () => {
    const compiler = createArgumentSchemaCompiler();
    compiler.compile({ type: 'object' });
    let compiled: ReturnType<typeof compiler.compile> | undefined;
    expect(
      compilerInstances(() => (compiled = compiler.compile({ properties: { a: { $ref: '#/$defs/p' } } }))),
    ).toBe(1);
    expect(compiled).toEqual({
      kind: 'invalid',
      problems: [
        { path: [], at: 'key', message: "invalid JSON Schema: can't resolve reference #/$defs/p from id #" },
      ],
    });
    // ajv refuses an empty enum, which two of the meta-schemas allow: said at its place, not later
    expect(compiler.compile({ properties: { a: { enum: [] } } })).toEqual({
      kind: 'invalid',
      problems: [
        { path: ['properties', 'a', 'enum'], at: 'value', message: 'an enum must list at least one value' },
      ],
    });
    // strict mode's "ignored keyword" complaints come from the compile too
    expect(compiler.compile({ then: { required: ['a'] } })).toMatchObject({
      kind: 'invalid',
      problems: [{ message: 'invalid JSON Schema: strict mode: "then" without "if" is ignored' }],
    });
  });
});

/** A small deterministic generator (mulberry32), so a failure names a reproducible case. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Conditions made only of COMPILE_LATER_KEYWORDS, with values both valid and not (wrong types,
 * negative bounds, bad patterns and formats, duplicate entries), nested a few levels.
 */
function generateSchema(next: () => number, depth: number): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  if (depth > 2 || next() < 0.15) return pick([true, false, {}]);
  const sub = () => generateSchema(next, depth + 1);
  const count = () => pick([0, 1, 3, -1, 1.5, 'x']);
  const values: Record<string, () => unknown> = {
    type: () =>
      pick([
        'string',
        'number',
        'integer',
        'object',
        'array',
        'boolean',
        'null',
        'strng',
        ['string', 'null'],
        ['string', 'string'],
        3,
      ]),
    enum: () => pick([[1, 'a'], [], [1, 1], 'x', [{ a: 1 }]]),
    const: () => pick([1, 'a', null, { b: [1] }]),
    properties: () =>
      pick<unknown>([
        { a: sub() },
        { a: sub(), b: sub() },
        {},
        'x',
        { constructor: sub(), ['__proto__']: sub() },
      ]),
    required: () => pick([['a'], [], ['a', 'a'], 'a', [1], ['constructor', '__proto__']]),
    additionalProperties: sub,
    propertyNames: sub,
    minProperties: count,
    maxProperties: count,
    dependentRequired: () => pick([{ a: ['b'] }, { a: 'b' }, { a: [] }, 3]),
    pattern: () => pick(['^a', '(', 'x+', '\\p{L}', 3]),
    minLength: count,
    maxLength: count,
    format: () => pick(['email', 'date', 'emial', 'uuid', 3]),
    minimum: () => pick([0, -5, 1.5, 'x']),
    maximum: () => pick([0, 10, 'x']),
    exclusiveMinimum: () => pick([0, true, 'x']),
    exclusiveMaximum: () => pick([10, false]),
    multipleOf: () => pick([2, 0.5, 0, -1]),
    items: () => pick([sub(), [sub()], [], 'x']),
    prefixItems: () => pick([[sub()], [], {}]),
    minItems: count,
    maxItems: count,
    uniqueItems: () => pick([true, false, 'x']),
    not: sub,
    allOf: () => pick([[sub()], [sub(), sub()], [], sub()]),
    anyOf: () => pick([[sub()], [], 'x']),
    oneOf: () => pick([[sub(), sub()], [true]]),
    title: () => pick(['t', 3]),
    description: () => pick(['d', null]),
    $comment: () => pick(['c', 1]),
    examples: () => pick([[1], 1]),
    default: () => pick([1, { a: 1 }]),
    deprecated: () => pick([true, 'x']),
    readOnly: () => pick([false, 1]),
    writeOnly: () => pick([true]),
  };
  expect(Object.keys(values).sort()).toEqual([...COMPILE_LATER_KEYWORDS].sort());
  const schema: Record<string, unknown> = {};
  const keywords = Object.keys(values);
  const many = 1 + Math.floor(next() * 3);
  for (let i = 0; i < many; i++) {
    const keyword = pick(keywords);
    schema[keyword] = values[keyword]!();
  }
  return schema;
}

describe('COMPILE_LATER_KEYWORDS', () => {
  const DIALECTS = [
    ['2020-12', undefined],
    ['2019-09', 'https://json-schema.org/draft/2019-09/schema'],
    ['draft-07', 'http://json-schema.org/draft-07/schema#'],
  ] as const;

  it.each(DIALECTS)(
    'keeps its promise in %s: a condition of them the load accepts compiles, and one ajv refuses is refused at load',
    (dialect, uri) => {
      const next = random(7);
      const strict = createConditionAjv(dialect);
      let accepted = 0;
      const broken: string[] = [];
      for (let i = 0; i < 400; i++) {
        const generated = generateSchema(next, 0);
        if (typeof generated !== 'object' || generated === null) continue;
        const body = generated as Record<string, unknown>;
        const compiler = createArgumentSchemaCompiler();
        const result = compiler.compile(uri === undefined ? body : { $schema: uri, ...body });
        if (result.kind === 'invalid') continue; // stricter than ajv is allowed (patterns, formats)
        accepted++;
        try {
          strict.compile(body);
        } catch (error) {
          broken.push(
            `ajv refuses ${JSON.stringify(body)}, which the load accepted: ${(error as Error).message}`,
          );
        } finally {
          strict.removeSchema(body);
        }
        const verdict = result.condition.test({ a: 'x', b: [1] });
        if (verdict.kind === 'unverifiable' && verdict.why.includes('could not be compiled'))
          broken.push(`${JSON.stringify(body)}: ${verdict.why}`);
      }
      expect(broken).toEqual([]);
      // The generator must reach both sides for the test to mean anything.
      expect(accepted).toBeGreaterThan(40);
      expect(accepted).toBeLessThan(360);
    },
  );
});
