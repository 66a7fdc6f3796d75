import { describe, expect, it } from 'vitest';
import {
  mirroredHeaders,
  paramHeaderMismatch,
  paramHeadersOf,
} from '../../src/core/protocol/paramHeaders.js';

const schema = (properties: Record<string, unknown>) => ({ type: 'object', properties });
const invalid = (s: unknown) => {
  const result = paramHeadersOf(s);
  return 'invalid' in result ? result.invalid : undefined;
};
const headersOf = (s: unknown) => {
  const result = paramHeadersOf(s);
  if (!('headers' in result)) throw new Error(result.invalid);
  return result.headers;
};

describe('x-mcp-header annotations', () => {
  it('finds annotated properties reached through properties alone, nested ones too', () => {
    expect(
      headersOf(
        schema({
          region: { type: 'string', 'x-mcp-header': 'Region' },
          where: {
            type: 'object',
            properties: { zone: { type: ['integer', 'null'], 'x-mcp-header': 'Zone' } },
          },
          plain: { type: 'string' },
        }),
      ),
    ).toEqual([
      { name: 'Region', path: ['region'], integer: false },
      { name: 'Zone', path: ['where', 'zone'], integer: true },
    ]);
    expect(headersOf(schema({ a: { type: 'string' } }))).toEqual([]);
    expect(headersOf(undefined)).toEqual([]);
  });

  it('refuses annotations the binding forbids, naming the reason', () => {
    expect(invalid(schema({ r: { type: 'number', 'x-mcp-header': 'R' } }))).toMatch(
      /only string, integer and boolean/,
    );
    expect(invalid(schema({ r: { 'x-mcp-header': 'R' } }))).toMatch(/whose type is null/);
    expect(invalid(schema({ r: { type: 'string', 'x-mcp-header': '' } }))).toMatch(/non-empty HTTP token/);
    expect(invalid(schema({ r: { type: 'string', 'x-mcp-header': 'Bad Name' } }))).toMatch(/HTTP token/);
    expect(
      invalid(
        schema({ a: { type: 'string', 'x-mcp-header': 'Id' }, b: { type: 'string', 'x-mcp-header': 'ID' } }),
      ),
    ).toMatch(/used twice/);
    expect(invalid({ type: 'object', 'x-mcp-header': 'Root' })).toMatch(/schema root/);
    expect(
      invalid(schema({ list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Item' } } })),
    ).toMatch(/not reached through properties alone/);
    expect(
      invalid({ type: 'object', anyOf: [schema({ a: { type: 'string', 'x-mcp-header': 'A' } })] }),
    ).toMatch(/not reached through properties alone/);
    expect(invalid({ type: 'object', $defs: { d: { type: 'string', 'x-mcp-header': 'D' } } })).toMatch(
      /not reached/,
    );
  });

  it('reads nothing into data keywords', () => {
    expect(headersOf(schema({ a: { type: 'object', default: { 'x-mcp-header': 'NotReal' } } }))).toEqual([]);
    // OpenAPI's singular `example` and `$vocabulary` hold data too (the shared keyword table).
    expect(headersOf(schema({ a: { type: 'object', example: { 'x-mcp-header': 'NotReal' } } }))).toEqual([]);
    expect(headersOf({ ...schema({}), $vocabulary: { 'x-mcp-header': true } })).toEqual([]);
  });

  it('reads the keys of a name map as names: a definition called `enum` is still a schema', () => {
    expect(invalid({ ...schema({}), $defs: { enum: { type: 'string', 'x-mcp-header': 'Hidden' } } })).toMatch(
      /not reached/,
    );
  });
});

describe('mirroring and checking', () => {
  const headers = headersOf(
    schema({
      region: { type: 'string', 'x-mcp-header': 'Region' },
      n: { type: 'integer', 'x-mcp-header': 'N' },
      flag: { type: 'boolean', 'x-mcp-header': 'Flag' },
    }),
  );

  it('mirrors each present value, encoded, and omits null or absent ones', () => {
    expect(mirroredHeaders(headers, { region: ' padded ', n: 42, flag: false })).toEqual([
      ['Mcp-Param-Region', `=?base64?${Buffer.from(' padded ').toString('base64')}?=`],
      ['Mcp-Param-N', '42'],
      ['Mcp-Param-Flag', 'false'],
    ]);
    expect(mirroredHeaders(headers, { region: null, n: 2 ** 60 })).toEqual([]);
  });

  it('accepts matching headers and names the first that does not match', () => {
    const read = (h: Record<string, string>) => (name: string) => h[name];
    const args = { region: 'eu', n: 5 };
    expect(
      paramHeaderMismatch(headers, args, read({ 'mcp-param-region': 'eu', 'mcp-param-n': '5.0' })),
    ).toBeUndefined();
    expect(paramHeaderMismatch(headers, args, read({ 'mcp-param-region': 'eu' }))).toMatch(
      /Mcp-Param-N header is missing/,
    );
    expect(
      paramHeaderMismatch(headers, args, read({ 'mcp-param-region': 'us', 'mcp-param-n': '5' })),
    ).toMatch(/says "us" but the body's arguments.region is "eu"/);
    expect(
      paramHeaderMismatch(
        headers,
        args,
        read({ 'mcp-param-region': 'eu', 'mcp-param-n': '5', 'mcp-param-flag': 'true' }),
      ),
    ).toMatch(/body has no arguments.flag/);
    expect(
      paramHeaderMismatch(headers, args, read({ 'mcp-param-region': 'e\u0001u', 'mcp-param-n': '5' })),
    ).toMatch(/characters a header value may not/);
  });
});
