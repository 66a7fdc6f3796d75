import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createOutputValidator,
  DEFAULT_OUTPUT_VALIDATOR_LIMITS,
  type SchemaVerdict,
} from '../../src/features/repair/outputSchemaValidator.js';

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';
const DRAFT_2019 = 'https://json-schema.org/draft/2019-09/schema';
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

function kind(verdict: SchemaVerdict): SchemaVerdict['kind'] {
  return verdict.kind;
}

/** `depth` levels of `properties.a`, built without recursion. */
function nestedSchema(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'object' };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { a: schema } };
  return schema;
}

describe('createOutputValidator: dialects', () => {
  const validator = createOutputValidator();

  it('runs draft-07 tuples (items array + additionalItems: false)', () => {
    const tool = {
      outputSchema: {
        $schema: DRAFT_07,
        type: 'object',
        properties: {
          pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false },
        },
      },
    };
    expect(validator.check(tool, { pair: ['a', 1] })).toEqual({ kind: 'valid' });
    expect(kind(validator.check(tool, { pair: ['a', 1, 2] }))).toBe('invalid');
    expect(kind(validator.check(tool, { pair: [1, 'a'] }))).toBe('invalid');
  });

  it.each([
    'http://json-schema.org/draft-07/schema#',
    'http://json-schema.org/draft-07/schema',
    'https://json-schema.org/draft-07/schema#',
    'https://json-schema.org/draft-07/schema',
  ])('recognises draft-07 spelled %s', ($schema) => {
    // A tuple `items` is only valid in draft-07: read as 2020-12 this schema would not compile.
    const tool = {
      outputSchema: { $schema, type: 'array', items: [{ type: 'string' }], additionalItems: false },
    };
    expect(validator.check(tool, ['a'])).toEqual({ kind: 'valid' });
    expect(kind(validator.check(tool, ['a', 'b']))).toBe('invalid');
  });

  it('runs 2020-12 prefixItems, declared or by default', () => {
    for (const $schema of [
      DRAFT_2020,
      `${DRAFT_2020}#`,
      'http://json-schema.org/draft/2020-12/schema',
      undefined,
    ]) {
      const tool = {
        outputSchema: {
          $schema,
          type: 'array',
          prefixItems: [{ type: 'string' }, { type: 'number' }],
          items: false,
        },
      };
      expect(validator.check(tool, ['a', 1])).toEqual({ kind: 'valid' });
      expect(kind(validator.check(tool, ['a', 'b']))).toBe('invalid');
      expect(kind(validator.check(tool, ['a', 1, 2]))).toBe('invalid');
    }
  });

  it('runs 2019-09 keywords', () => {
    const tool = {
      outputSchema: {
        $schema: DRAFT_2019,
        type: 'object',
        properties: { a: { type: 'string' } },
        dependentRequired: { a: ['b'] },
        unevaluatedProperties: false,
      },
    };
    expect(kind(validator.check(tool, { a: 'x' }))).toBe('invalid');
    expect(kind(validator.check(tool, { c: 1 }))).toBe('invalid');
    expect(validator.check(tool, {})).toEqual({ kind: 'valid' });
  });

  it.each([
    ['draft-04', 'http://json-schema.org/draft-04/schema#'],
    ['draft-06', 'http://json-schema.org/draft-06/schema#'],
    ['unknown', 'https://example.com/my-meta-schema'],
    ['not a string', 7],
  ])('calls a %s $schema unverifiable', (_name, $schema) => {
    const verdict = validator.check({ outputSchema: { $schema, type: 'object' } }, {});
    expect(verdict.kind).toBe('unverifiable');
    expect(verdict.kind === 'unverifiable' && verdict.reason).toMatch(/\$schema/);
  });
});

describe('createOutputValidator: formats and messages', () => {
  const validator = createOutputValidator();

  it('enforces format: date', () => {
    const tool = { outputSchema: { type: 'object', properties: { d: { type: 'string', format: 'date' } } } };
    expect(validator.check(tool, { d: '2024-03-28' })).toEqual({ kind: 'valid' });
    expect(validator.check(tool, { d: '2024-02-30' })).toEqual({
      kind: 'invalid',
      message: 'structuredContent/d must match format "date"',
    });
  });

  it('enforces format: email (draft-07 too)', () => {
    const tool = {
      outputSchema: {
        $schema: DRAFT_07,
        type: 'object',
        properties: { e: { type: 'string', format: 'email' } },
      },
    };
    expect(validator.check(tool, { e: 'ada@example.com' })).toEqual({ kind: 'valid' });
    expect(kind(validator.check(tool, { e: 'not an address' }))).toBe('invalid');
  });

  it('ignores unknown formats, as the SDK host does', () => {
    const tool = {
      outputSchema: { type: 'object', properties: { x: { type: 'string', format: 'x-custom' } } },
    };
    expect(validator.check(tool, { x: 'anything' })).toEqual({ kind: 'valid' });
  });

  it('reports one error, with the path and, for extra properties, their name', () => {
    const tool = {
      outputSchema: {
        type: 'object',
        properties: { t: { type: 'number' } },
        required: ['t'],
        additionalProperties: false,
      },
    };
    expect(validator.check(tool, { t: 'hot' })).toEqual({
      kind: 'invalid',
      message: 'structuredContent/t must be number',
    });
    expect(validator.check(tool, {})).toEqual({
      kind: 'invalid',
      message: "structuredContent must have required property 't'",
    });
    expect(validator.check(tool, { t: 1, u: 2 })).toEqual({
      kind: 'invalid',
      message: 'structuredContent must NOT have additional properties ("u")',
    });
  });

  it('does not let Object.prototype satisfy required', () => {
    const tool = { outputSchema: { type: 'object', required: ['constructor'] } };
    expect(kind(validator.check(tool, {}))).toBe('invalid');
  });

  it('treats boolean and missing schemas as what they mean, and other values as unverifiable', () => {
    expect(validator.check({}, { a: 1 })).toEqual({ kind: 'valid' });
    expect(validator.check({ outputSchema: true }, 1)).toEqual({ kind: 'valid' });
    expect(kind(validator.check({ outputSchema: false }, 1))).toBe('invalid');
    for (const outputSchema of [null, [], 'object', 3]) {
      expect(kind(validator.check({ outputSchema }, {}))).toBe('unverifiable');
    }
  });
});

describe('createOutputValidator: untrusted schemas', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('refuses a catastrophic pattern quickly', () => {
    const validator = createOutputValidator();
    const tool = {
      outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } },
    };
    // Create the ajv instance outside the timing (a schema with `format` is compiled by ajv).
    validator.check({ outputSchema: { type: 'string', format: 'date' } }, '2024-01-01');
    const started = performance.now();
    const verdict = validator.check(tool, { s: `${'a'.repeat(30)}!` });
    const elapsed = performance.now() - started;
    expect(verdict.kind).toBe('unverifiable');
    expect(verdict.kind === 'unverifiable' && verdict.reason).toMatch(/catastrophic/);
    expect(elapsed).toBeLessThan(200);
  });

  it('refuses catastrophic patterns in patternProperties too', () => {
    const validator = createOutputValidator();
    const tool = {
      outputSchema: { type: 'object', patternProperties: { '^(\\w+\\s?)*$': { type: 'string' } } },
    };
    expect(kind(validator.check(tool, { a: 'b' }))).toBe('unverifiable');
  });

  it('keeps each pattern apart (ajv tells them apart by their printed form)', () => {
    const validator = createOutputValidator();
    const a = { outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^a+$' } } } };
    const b = { outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^b+$' } } } };
    expect(validator.check(a, { s: 'aaa' })).toEqual({ kind: 'valid' });
    expect(validator.check(b, { s: 'bbb' })).toEqual({ kind: 'valid' });
    expect(kind(validator.check(b, { s: 'aaa' }))).toBe('invalid');
  });

  it('does not run patterns on strings over the limit, nor beyond the work budget', () => {
    const validator = createOutputValidator({ limits: { maxStringLengthForPattern: 100 } });
    const tool = { outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^a+$' } } } };
    expect(validator.check(tool, { s: 'a'.repeat(100) })).toEqual({ kind: 'valid' });
    const verdict = validator.check(tool, { s: 'a'.repeat(101) });
    expect(verdict.kind === 'unverifiable' && verdict.reason).toMatch(/longer than the 100/);
    // Quadratic (unanchored) pattern, many long strings: the per-check budget runs out.
    const many = createOutputValidator();
    const list = { outputSchema: { type: 'array', items: { type: 'string', pattern: '[a-z]+' } } };
    expect(
      kind(
        many.check(
          list,
          Array.from({ length: 10 }, () => 'a'.repeat(4000)),
        ),
      ),
    ).toBe('unverifiable');
    expect(
      many.check(
        list,
        Array.from({ length: 10 }, () => 'a'.repeat(100)),
      ),
    ).toEqual({ kind: 'valid' });
  });

  it('refuses patterns longer than maxPatternLength', () => {
    const validator = createOutputValidator({ limits: { maxPatternLength: 10 } });
    const tool = { outputSchema: { type: 'string', pattern: '^abcdefghijk$' } };
    expect(kind(validator.check(tool, 'abcdefghijk'))).toBe('unverifiable');
  });

  it('refuses a 5000-deep schema without a RangeError', () => {
    const validator = createOutputValidator();
    const verdict = validator.check({ outputSchema: nestedSchema(5000) }, {});
    expect(verdict.kind).toBe('unverifiable');
    expect(verdict.kind === 'unverifiable' && verdict.reason).toMatch(/nests deeper than 128/);
  });

  it('accepts nesting within the depth limit', () => {
    const validator = createOutputValidator();
    expect(validator.check({ outputSchema: nestedSchema(60) }, { a: { a: {} } })).toEqual({ kind: 'valid' });
  });

  it('refuses schemas over the node and byte limits, and cyclic objects', () => {
    const few = createOutputValidator({ limits: { maxSchemaNodes: 50 } });
    const wide = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`p${i}`, {}])),
    };
    expect(few.check({ outputSchema: wide }, {})).toMatchObject({
      reason: expect.stringMatching(/more than 50 nodes/),
    });
    const small = createOutputValidator({ limits: { maxSchemaBytes: 400 } });
    const long = { type: 'object', description: 'x'.repeat(500) };
    expect(small.check({ outputSchema: long }, {})).toMatchObject({
      reason: expect.stringMatching(/larger than 400 bytes/),
    });
    expect(small.check({ outputSchema: { type: 'object', description: 'x'.repeat(300) } }, {})).toEqual({
      kind: 'valid',
    });
    const shallow = createOutputValidator({ limits: { maxSchemaDepth: 5 } });
    expect(kind(shallow.check({ outputSchema: nestedSchema(3) }, {}))).toBe('unverifiable');
    expect(kind(shallow.check({ outputSchema: nestedSchema(1) }, {}))).toBe('valid');
    const cyclic: Record<string, unknown> = { type: 'object' };
    cyclic.properties = { self: cyclic };
    expect(kind(createOutputValidator().check({ outputSchema: cyclic }, {}))).toBe('unverifiable');
  });

  it('refuses remote $refs without fetching anything', () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const validator = createOutputValidator();
    for (const outputSchema of [
      { $ref: 'https://example.com/s.json' },
      { type: 'object', properties: { a: { $ref: 'https://example.com/s.json#/definitions/a' } } },
      { type: 'object', properties: { a: { $ref: 'other.json' } } },
    ]) {
      const verdict = validator.check({ outputSchema }, {});
      expect(verdict.kind).toBe('unverifiable');
      expect(verdict.kind === 'unverifiable' && verdict.reason).toMatch(/outside the schema/);
    }
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it('follows local $refs, and does not mistake data for a $ref', () => {
    const validator = createOutputValidator();
    const tool = {
      outputSchema: {
        type: 'object',
        properties: {
          a: { $ref: '#/$defs/n' },
          link: { type: 'object', default: { $ref: 'https://example.com/x' } },
          // a property named like a keyword is still a schema
          default: { type: 'string' },
        },
        $defs: { n: { type: 'number' } },
      },
    };
    expect(validator.check(tool, { a: 1, default: 'x' })).toEqual({ kind: 'valid' });
    expect(kind(validator.check(tool, { a: 'x' }))).toBe('invalid');
  });

  it('calls schemas that do not compile unverifiable', () => {
    const validator = createOutputValidator();
    const typo = validator.check(
      { outputSchema: { type: 'object', properties: { a: { type: 'strnig' } } } },
      {},
    );
    expect(typo).toMatchObject({
      kind: 'unverifiable',
      reason: expect.stringMatching(/could not be compiled/),
    });
    const dangling = validator.check(
      { outputSchema: { type: 'object', properties: { a: { $ref: '#/$defs/x' } } } },
      {},
    );
    expect(dangling.kind).toBe('unverifiable');
  });

  it('calls data too deep for a recursive schema unverifiable, without throwing', () => {
    const validator = createOutputValidator();
    const tool = {
      outputSchema: {
        $ref: '#/$defs/node',
        $defs: { node: { type: 'object', properties: { c: { $ref: '#/$defs/node' } } } },
      },
    };
    let data: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) data = { c: data };
    expect(validator.check(tool, { c: { c: {} } })).toEqual({ kind: 'valid' });
    expect(kind(validator.check(tool, data))).toBe('unverifiable');
  });
});

describe('createOutputValidator: isolation between tools', () => {
  it('validates two tools whose schemas share an $id, each by its own schema', () => {
    const validator = createOutputValidator();
    const a = { outputSchema: { $id: 'https://example.com/out', type: 'object', required: ['a'] } };
    const b = { outputSchema: { $id: 'https://example.com/out', type: 'object', required: ['b'] } };
    expect(validator.check(a, { a: 1 })).toEqual({ kind: 'valid' });
    expect(validator.check(b, { b: 1 })).toEqual({ kind: 'valid' });
    expect(kind(validator.check(b, { a: 1 }))).toBe('invalid');
  });

  it('validates two tools whose nested subschemas share an $id', () => {
    const validator = createOutputValidator({});
    const a = {
      outputSchema: {
        $schema: DRAFT_07,
        type: 'object',
        properties: { p: { $id: 'http://example.com/p', type: 'string' } },
      },
    };
    const b = {
      outputSchema: {
        $schema: DRAFT_07,
        type: 'object',
        properties: { p: { $id: 'http://example.com/p', type: 'number' } },
      },
    };
    expect(validator.check(a, { p: 'x' })).toEqual({ kind: 'valid' });
    expect(validator.check(b, { p: 1 })).toEqual({ kind: 'valid' });
    expect(kind(validator.check(b, { p: 'x' }))).toBe('invalid');
  });

  it("does not resolve a schema's references with ids and anchors another tool declared", () => {
    const validator = createOutputValidator();
    const a = {
      outputSchema: {
        type: 'object',
        properties: { p: { $id: 'http://example.com/p', $anchor: 'num', type: 'number' } },
      },
    };
    expect(validator.check(a, { p: 1 })).toEqual({ kind: 'valid' });
    // `#num` under the same base names nothing in this schema: it must not compile against a's anchor.
    const b = {
      outputSchema: {
        type: 'object',
        properties: {
          p: { $id: 'http://example.com/p', type: 'object', properties: { q: { $ref: '#num' } } },
        },
      },
    };
    expect(kind(validator.check(b, { p: { q: 1 } }))).toBe('unverifiable');
  });

  it("does not let a schema reach another tool's schema by its $id", () => {
    const validator = createOutputValidator();
    const secret = {
      outputSchema: {
        $schema: DRAFT_07,
        $id: 'http://example.com/secret',
        type: 'object',
        definitions: { n: { type: 'number' } },
        properties: { inner: { $id: 'http://example.com/inner', definitions: { m: { type: 'number' } } } },
      },
    };
    expect(validator.check(secret, {})).toEqual({ kind: 'valid' });
    const byUri = { outputSchema: { $schema: DRAFT_07, $ref: 'http://example.com/secret#/definitions/n' } };
    expect(kind(validator.check(byUri, 1))).toBe('unverifiable');
    // A local ref under a borrowed base id resolves within this schema or not at all.
    const byBase = {
      outputSchema: {
        $schema: DRAFT_07,
        type: 'object',
        properties: { x: { $id: 'http://example.com/inner', $ref: '#/definitions/m' } },
      },
    };
    expect(kind(validator.check(byBase, { x: 1 }))).toBe('unverifiable');
  });
});

describe('createOutputValidator: caching', () => {
  it('compiles a tool definition once however often it is checked', () => {
    const validator = createOutputValidator();
    // `multipleOf` is left to ajv (a simple schema is checked without compiling anything).
    const tool = { outputSchema: { type: 'object', properties: { n: { type: 'number', multipleOf: 1 } } } };
    for (let i = 0; i < 100; i++) validator.check(tool, { n: i });
    expect(validator.stats.compiled).toBe(1);
    // Keyed by identity: an equal but new definition (a relisted tool) is compiled again.
    validator.check({ outputSchema: structuredClone(tool.outputSchema) }, { n: 1 });
    expect(validator.stats.compiled).toBe(2);
  });

  it('caches refusals too', () => {
    const validator = createOutputValidator();
    const tool = { outputSchema: { type: 'string', pattern: '(a+)+' } };
    for (let i = 0; i < 10; i++) expect(kind(validator.check(tool, 'a'))).toBe('unverifiable');
    expect(validator.stats.compiled).toBe(1);
  });

  it('replaces an ajv instance after many compiles; earlier validators keep working', () => {
    const validator = createOutputValidator();
    const first = {
      outputSchema: { type: 'object', properties: { n: { type: 'number', not: { const: 'x' } } } },
    };
    expect(validator.check(first, { n: 1 })).toEqual({ kind: 'valid' });
    for (let i = 0; i < 500; i++) {
      validator.check(
        {
          outputSchema: { type: 'object', properties: { n: { type: 'number', maximum: i, multipleOf: 1 } } },
        },
        {},
      );
    }
    expect(validator.stats.ajvInstances).toBe(2);
    expect(kind(validator.check(first, { n: 'one' }))).toBe('invalid');
    expect(validator.stats.compiled).toBe(501);
  });

  it('creates ajv instances lazily, one per dialect in use', () => {
    const validator = createOutputValidator();
    expect(validator.stats.ajvInstances).toBe(0);
    // Simple schemas are checked without ajv: no instance yet.
    validator.check({ outputSchema: { type: 'object' } }, {});
    expect(validator.stats.ajvInstances).toBe(0);
    validator.check({ outputSchema: { type: 'object', propertyNames: { maxLength: 9 } } }, {});
    validator.check({ outputSchema: { type: 'object', propertyNames: { maxLength: 8 } } }, {});
    expect(validator.stats.ajvInstances).toBe(1);
    validator.check(
      { outputSchema: { $schema: DRAFT_07, type: 'object', propertyNames: { maxLength: 9 } } },
      {},
    );
    expect(validator.stats.ajvInstances).toBe(2);
  });

  it('exposes frozen defaults', () => {
    expect(Object.isFrozen(DEFAULT_OUTPUT_VALIDATOR_LIMITS)).toBe(true);
    expect(DEFAULT_OUTPUT_VALIDATOR_LIMITS).toEqual({
      maxSchemaBytes: 262_144,
      maxSchemaDepth: 128,
      maxSchemaNodes: 20_000,
      maxPatternLength: 1000,
      maxStringLengthForPattern: 4096,
    });
  });
});
