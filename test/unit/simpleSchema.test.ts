/**
 * The check that vouches for simple tool arguments without ajv must never accept what ajv (with
 * the gateway's own options) refuses. Each schema here is run on many values through both; for
 * the schemas it takes, the two must agree on every value, and the schemas it does not take
 * must get no check at all.
 */
import { describe, expect, it } from 'vitest';
import { createInputValidator } from '../../src/features/validate/inputValidator.js';
import { buildSimpleCheck } from '../../src/lib/schema/simpleSchema.js';
import {
  createUntrustedSchemaCompiler,
  DEFAULT_UNTRUSTED_SCHEMA_LIMITS,
} from '../../src/lib/schema/untrustedSchema.js';

/** The bounds the gateway's compiler gives the check (and ajv's guarded engine runs under). */
const OPTIONS = { patterns: { ...DEFAULT_UNTRUSTED_SCHEMA_LIMITS, workPerCheck: 50_000_000 } };

const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  1,
  1.5,
  -3,
  10,
  11,
  2 ** 53,
  '',
  'a',
  'abc',
  'abcdefghijk',
  '😀😀',
  '😀😀😀',
  'Text',
  'error',
  [],
  [1],
  [1, 'a'],
  ['a', 'b', 'c'],
  {},
  { message: 'hi' },
  { message: 3 },
  { message: 'hi', extra: 1 },
  { a: 1, b: 2 },
  { a: 1, b: '2' },
  { a: 1 },
  { nested: { x: 1 } },
  { nested: { x: 'no' } },
  { list: [1, 2, 3] },
  { list: [1, 'x'] },
  { constructor: 'x' },
  'https://example.com/a?b=c',
  'not a uri',
  'mailto:a@example.com',
  'a@example.com',
  '2026-11-30T05:00:00Z',
  '2026-02-30T05:00:00Z',
  '2026-11-30',
  '^(a+)+$',
  '(',
  '3fa85f64-5717-4562-b3fc-2c963f66afa6',
  'octo-cat',
  'Octo Cat',
  'é',
  '2026-11',
  'x'.repeat(5000),
  2 ** 31,
  { data: 'https://example.com/x', name: 'n' },
  { data: 'no uri', name: 'n' },
  [{ a: 1 }, { b: 2 }],
  { m: { a: 1 } },
  { m: { a: 'x' } },
  { m: {} },
  { x: 'a@example.com' },
  { x: 'nope' },
  [null, 1],
  [1.5],
  [{ a: 1, b: 2 }],
  JSON.parse('{"__proto__": {"x": 1}}') as unknown,
];

const SIMPLE: Record<string, unknown>[] = [
  { type: 'object', properties: { message: { type: 'string', description: 'm' } }, required: ['message'] },
  { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  { type: 'object', properties: { message: { type: 'string' } }, additionalProperties: false },
  { type: 'object', properties: {}, additionalProperties: { type: 'number' } },
  { type: 'object', properties: { nested: { type: 'object', properties: { x: { type: 'integer' } } } } },
  { type: 'object', properties: { list: { type: 'array', items: { type: 'number' }, maxItems: 3 } } },
  { type: ['string', 'null'], minLength: 2, maxLength: 2 },
  { type: 'string', enum: ['Text', 'error', 'Blob'] },
  { enum: [0, 'a', null, true] },
  { const: 10 },
  { type: 'number', minimum: 1, maximum: 10 },
  { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 11 },
  { minProperties: 1, maxProperties: 1 },
  { type: 'array', minItems: 1, items: true },
  { title: 't', default: 3, examples: [1], $comment: 'c', deprecated: false, readOnly: true },
  { type: 'object', required: [] },
  { type: 'string', format: 'uri' },
  { format: 'email' },
  { format: 'date-time' },
  { format: 'date' },
  { format: 'regex' },
  { format: 'uuid' },
  { format: 'int32' },
  { format: 'password' },
  { anyOf: [{ type: 'string' }] },
  { anyOf: [{ type: 'string', format: 'uri' }, { type: 'null' }, { type: 'integer', minimum: 10 }] },
  { allOf: [{ type: 'string' }, { minLength: 3 }] },
  { type: 'string', pattern: '^a' },
  { pattern: '^[a-z0-9-]+$' },
  { pattern: '\\d{4}-\\d{2}' },
  { pattern: '^\\p{L}$' },
  { type: 'object', properties: { message: { type: 'string', pattern: 'h' } }, required: ['message'] },
  {
    type: 'object',
    properties: { data: { type: 'string', format: 'uri' }, name: { type: 'string' } },
    required: ['data'],
  },
  {
    type: 'array',
    items: {
      anyOf: [
        {
          type: 'object',
          properties: { a: { type: 'number' } },
          required: ['a'],
          additionalProperties: false,
        },
        { type: 'object', properties: { b: { const: 2 } }, required: ['b'], additionalProperties: false },
      ],
    },
  },
  {
    type: 'object',
    properties: { m: { $ref: '#/$defs/M' } },
    $defs: { M: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] } },
  },
  {
    properties: { x: { $ref: '#/definitions/S', description: 'd' } },
    definitions: { S: { type: 'string', format: 'email' }, Unused: { type: 'integer' } },
  },
  {
    items: { $ref: '#/definitions/N' },
    definitions: { N: { anyOf: [{ type: 'null' }, { type: 'integer' }] } },
  },
];

const NOT_SIMPLE: Record<string, unknown>[] = [
  { type: 'string', format: 'no-such-format' },
  { format: 3 },
  { format: 'toString' },
  { pattern: '^(a+)+$' },
  { pattern: '(' },
  { pattern: 3 },
  { pattern: 'x'.repeat(1001) },
  { anyOf: [] },
  { anyOf: { type: 'string' } },
  { $ref: '#' },
  { $ref: 'https://example.com/schema' },
  {
    properties: { a: { $ref: '#/definitions/A' } },
    definitions: { A: { properties: { b: { $ref: '#/definitions/A' } } } },
  },
  { properties: { a: { $ref: '#/definitions/A', type: 'string' } }, definitions: { A: {} } },
  { properties: { a: { $ref: '#/definitions/missing' } }, definitions: {} },
  { properties: { a: { $ref: '#/definitions/a~1b' } }, definitions: { 'a/b': {} } },
  { properties: { a: { definitions: {} } } },
  { definitions: { A: { type: 'nonsense' } } },
  { oneOf: [{ type: 'string' }] },
  { anyOf: [{ type: 'string', patternProperties: { a: {} } }] },
  { $ref: '#/definitions/x', definitions: { x: {} } },
  { type: 'object', properties: { constructor: { type: 'string' } } },
  { type: 'number', multipleOf: 0.1 },
  { enum: [{ a: 1 }] },
  { enum: [] },
  { type: 'nonsense' },
  { type: ['string', 'string'] },
  { required: ['a', 'a'] },
  { minLength: -1 },
  { title: 3 },
  { items: [{ type: 'string' }] },
  { properties: { a: { type: 'string', unknownKeyword: 1 } } },
];

describe('the simple check, against ajv', () => {
  const compiler = createUntrustedSchemaCompiler({ what: 'inputSchema' });
  const ajvAccepts = (schema: Record<string, unknown>, value: unknown): boolean => {
    const compiled = compiler.compiled(schema);
    if (compiled.kind !== 'ready') throw new Error(`ajv did not compile ${JSON.stringify(schema)}`);
    compiler.beginValidation();
    try {
      return compiled.validate(value) === true;
    } catch {
      // Its guarded engine refused to run a pattern on the value: no acceptance either.
      return false;
    }
  };

  it.each(SIMPLE.map((s) => [JSON.stringify(s), s] as const))(
    'agrees with ajv on every value: %s',
    (_, schema) => {
      const check = buildSimpleCheck(schema, OPTIONS);
      expect(check).toBeDefined();
      for (const value of VALUES)
        expect([JSON.stringify(value), check!(value)]).toEqual([
          JSON.stringify(value),
          ajvAccepts(schema, value),
        ]);
    },
  );

  it.each(NOT_SIMPLE.map((s) => [JSON.stringify(s), s] as const))('leaves %s to ajv', (_, schema) => {
    expect(buildSimpleCheck(schema, OPTIONS)).toBeUndefined();
  });

  it('takes a pattern only with the bounds it runs under, and leaves a string past them to ajv', () => {
    expect(buildSimpleCheck({ pattern: '^a' })).toBeUndefined();
    const validator = createInputValidator();
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^a' } } };
    expect(validator.check(schema, { s: 'abc' })).toEqual({ kind: 'valid' });
    expect(validator.stats.compiled).toBe(0);
    // Longer than a pattern is run on: not vouched for, and ajv's engine refuses it as before.
    expect(validator.check(schema, { s: 'a'.repeat(5000) }).kind).toBe('unchecked');
    // Past the work one check may do: many long strings against a quadratic pattern.
    const quadratic = { type: 'array', items: { type: 'string', pattern: '^\\s*\\s*x$' } };
    const many = Array.from({ length: 20 }, () => ' '.repeat(4000));
    expect(buildSimpleCheck(quadratic, OPTIONS)!(many)).toBe(false);
  });

  it('is used for the schemas of a dialect ajv runs, and not for the others', () => {
    const validator = createInputValidator();
    const body = { type: 'object', properties: { a: { type: 'number' } } };
    expect(validator.checkedWithoutAjv({ $schema: 'http://json-schema.org/draft-07/schema#', ...body })).toBe(
      true,
    );
    expect(validator.checkedWithoutAjv(body)).toBe(true);
    expect(validator.checkedWithoutAjv({ $schema: 'http://json-schema.org/draft-04/schema#', ...body })).toBe(
      false,
    );
    // Beyond the configured bounds a schema is unverifiable, never vouched for.
    const tight = createInputValidator({ limits: { maxSchemaNodes: 3 } });
    expect(tight.checkedWithoutAjv(body)).toBe(false);
    expect(tight.check(body, { a: 1 }).kind).toBe('unverifiable');
  });

  it('answers a valid call without compiling, and words an invalid one through ajv', () => {
    const validator = createInputValidator();
    const schema = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] };
    expect(validator.check(schema, { a: 1 })).toEqual({ kind: 'valid' });
    expect(validator.stats.compiled).toBe(0);
    expect(validator.check(schema, { a: 'x' })).toEqual({
      kind: 'invalid',
      problem: '/a must be number (got string "x")',
    });
    expect(validator.stats.compiled).toBe(1);
  });
});
