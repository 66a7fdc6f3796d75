import { describe, expect, it } from 'vitest';
import { ToolSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  checkDefinitions,
  checkTool,
  definitionRevision,
  plainlyValid,
} from '../../src/core/catalog/definitionCheck.js';
import { exposedUiUri, originalUiUri, withExposedUi } from '../../src/core/catalog/appUi.js';

const tool = (fields: object) => ({ name: 't', inputSchema: { type: 'object' }, ...fields }) as Tool;

describe('checkTool', () => {
  it('leaves a definition the SDK accepts alone, boolean keywords the SDK does not check included', () => {
    expect(checkTool(tool({ inputSchema: { type: 'object', additionalProperties: false } }))).toBeUndefined();
    expect(
      checkTool(tool({ inputSchema: { type: 'object', properties: { a: { items: false } } } })),
    ).toBeUndefined();
  });

  it('repairs boolean subschemas the SDK rejects, and only those', () => {
    const checked = checkTool(
      tool({
        inputSchema: { type: 'object', properties: { a: true }, additionalProperties: false },
        outputSchema: { type: 'object', properties: { b: false } },
      }),
    );
    expect(checked).toEqual({
      tool: tool({
        inputSchema: { type: 'object', properties: { a: {} }, additionalProperties: false },
        outputSchema: { type: 'object', properties: { b: { not: {} } } },
      }),
      repairs: [
        'inputSchema.properties.a: true became {}',
        'outputSchema.properties.b: false became {"not":{}}',
      ],
    });
  });

  it('gives a schema without type "object", and refuses one of another type', () => {
    expect(checkTool(tool({ inputSchema: {} }))).toEqual({
      tool: tool({ inputSchema: { type: 'object' } }),
      repairs: ['inputSchema.type: missing, set to "object"'],
    });
    expect(checkTool(tool({ outputSchema: { type: 'array' } }))).toEqual({
      reason: expect.stringContaining('outputSchema.type') as string,
    });
  });

  it('one bad tool never takes its neighbours with it', () => {
    const checked = checkDefinitions([
      tool({ name: 'a' }),
      tool({ name: 'b', inputSchema: 5 }),
      tool({ name: 'c' }),
    ]);
    expect(checked.tools.map((t) => t.name)).toEqual(['a', 'c']);
    expect(checked.leftOut.map((l) => l.tool)).toEqual(['b']);
  });
});

describe('checkTool per protocol revision', () => {
  it('picks the revision by the negotiated version, the strictest before any host', () => {
    expect(
      ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28', undefined].map(
        definitionRevision,
      ),
    ).toEqual(['2025-06-18', '2025-06-18', '2025-06-18', '2025-11-25', '2026-07-28', '2025-11-25']);
  });

  it('2025-06-18 does not hold fields it does not have (icons, execution) against a tool', () => {
    const odd = tool({ execution: { taskSupport: 'sometimes' }, icons: 'none' });
    expect(checkTool(odd, '2025-06-18')).toBeUndefined();
    expect(checkTool(odd, '2025-11-25')).toEqual({
      reason: expect.stringMatching(/icons: .*; execution\.taskSupport: /) as string,
    });
    // What 2025-06-18 has, it checks as strictly as 2025-11-25.
    expect(
      checkTool(tool({ outputSchema: { type: 'object', properties: { v: true } } }), '2025-06-18'),
    ).toEqual({
      tool: tool({ outputSchema: { type: 'object', properties: { v: {} } } }),
      repairs: ['outputSchema.properties.v: true became {}'],
    });
  });

  it('2026-07-28 takes boolean subschemas and any outputSchema object, but not a non-object schema', () => {
    const booleans = tool({
      inputSchema: { type: 'object', properties: { a: true } },
      outputSchema: { properties: { b: false } },
    });
    expect(checkTool(booleans, '2026-07-28')).toBeUndefined();
    expect(checkTool(booleans, '2025-11-25')).toMatchObject({ repairs: expect.any(Array) as unknown });
    // inputSchema is still `type: "object"`, and repaired the same way.
    expect(checkTool(tool({ inputSchema: {} }), '2026-07-28')).toEqual({
      tool: tool({ inputSchema: { type: 'object' } }),
      repairs: ['inputSchema.type: missing, set to "object"'],
    });
    expect(checkTool(tool({ outputSchema: 'text' }), '2026-07-28')).toHaveProperty('reason');
    expect(checkTool(tool({ outputSchema: { $schema: 7 } }), '2026-07-28')).toEqual({
      reason: 'outputSchema.$schema: expected a string',
    });
  });
});

describe('the check without the SDK schema', () => {
  // Every field of the schema with a value it takes and values it refuses, each tried alone.
  const good: Record<string, unknown> = {
    title: 'T',
    description: 'd',
    icons: [{ src: 'a.png', mimeType: 'image/png', sizes: ['48x48'], theme: 'dark' }],
    outputSchema: { type: 'object', properties: { o: { type: 'string' } }, required: ['o'] },
    annotations: {
      title: 'a',
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    execution: { taskSupport: 'optional' },
    _meta: { x: 1 },
  };
  const bad: Record<string, readonly unknown[]> = {
    name: [undefined, 1, null],
    title: [1, null],
    description: [false],
    icons: ['none', [{}], [{ src: 1 }], [{ src: 'a', sizes: 'x' }], [{ src: 'a', theme: 'blue' }], [null]],
    inputSchema: [
      undefined,
      5,
      [],
      {},
      { type: 'array' },
      { type: 'object', properties: { a: true } },
      { type: 'object', properties: { a: null } },
      { type: 'object', properties: [] },
      { type: 'object', properties: { [Symbol('s')]: {} } },
      { type: 'object', required: 'a' },
      { type: 'object', required: [1] },
    ],
    outputSchema: [null, { type: 'object', properties: { b: false } }, { properties: {} }],
    annotations: [null, { readOnlyHint: 'yes' }, { title: 2 }],
    execution: [{ taskSupport: 'sometimes' }, 'x'],
    _meta: [[], 'm', { [Symbol('s')]: 1 }],
  };
  const variants = (): unknown[] => {
    const base = { name: 't', inputSchema: { type: 'object', properties: { a: { type: 'string' } } } };
    const all: unknown[] = [base, { ...base, ...good }, ['t'], null, 'tool'];
    for (const [field, value] of Object.entries(good)) all.push({ ...base, [field]: value });
    for (const [field, values] of Object.entries(bad))
      for (const value of values) all.push({ ...base, ...good, [field]: value }, { ...base, [field]: value });
    return all;
  };

  it('accepts only what the SDK schema accepts', () => {
    for (const definition of variants())
      if (plainlyValid(definition))
        expect(ToolSchema.safeParse(definition).success, JSON.stringify(definition)).toBe(true);
  });

  it('accepts the definitions servers usually send, so the SDK schema is not needed for them', () => {
    const accepted = variants().filter((definition) => ToolSchema.safeParse(definition).success);
    expect(accepted.length).toBeGreaterThan(8);
    for (const definition of accepted)
      expect(plainlyValid(definition), JSON.stringify(definition)).toBe(true);
  });
});

describe('App resource URIs', () => {
  it('namespace by server and read back, whatever the server is called', () => {
    for (const server of ['vanilla', 'my server/1', 'ü']) {
      const exposed = exposedUiUri(server, 'ui://get-time/mcp-app.html');
      expect(originalUiUri(exposed, (s) => s === server)).toEqual({
        server,
        uri: 'ui://get-time/mcp-app.html',
      });
    }
    expect(originalUiUri('ui://nobody/x.html', () => false)).toBeUndefined();
    expect(originalUiUri('file:///x', () => true)).toBeUndefined();
  });

  it('rewrites both meta keys of a tool and nothing else', () => {
    const t = tool({
      _meta: {
        ui: { resourceUri: 'ui://a/b.html', visibility: ['app'] },
        'ui/resourceUri': 'ui://a/b.html',
        x: 1,
      },
    });
    expect(withExposedUi('s', t)._meta).toEqual({
      ui: { resourceUri: 'ui://s/a/b.html', visibility: ['app'] },
      'ui/resourceUri': 'ui://s/a/b.html',
      x: 1,
    });
    const plain = tool({});
    expect(withExposedUi('s', plain)).toBe(plain);
  });
});
