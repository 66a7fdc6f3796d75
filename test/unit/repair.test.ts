import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation/types.js';
import { describe, expect, it } from 'vitest';
import type { RepairConfig } from '../../src/config/types.js';
import { invalidStructuredNote, missingStructuredNote } from '../../src/features/repair/notes.js';
import { createOutputValidator } from '../../src/features/repair/outputSchemaValidator.js';
import { repairResult, type RepairChange } from '../../src/features/repair/repairResult.js';

const DEFAULTS: RepairConfig = {
  textForStructured: true,
  invalidStructured: 'error',
  structuredFromText: true,
  missingStructured: 'error',
};

type ToolDef = Pick<Tool, 'outputSchema'>;

/** server-everything's get-structured-content, as its server lists it (zod, via the SDK). */
const WEATHER: ToolDef = {
  outputSchema: {
    type: 'object',
    properties: {
      temperature: { type: 'number', description: 'Temperature in celsius' },
      conditions: { type: 'string', description: 'Weather conditions description' },
      humidity: { type: 'number', description: 'Humidity percentage' },
    },
    required: ['temperature', 'conditions', 'humidity'],
    $schema: 'http://json-schema.org/draft-07/schema#',
    additionalProperties: false,
  },
};
const NO_SCHEMA: ToolDef = {};
/** Declared in a dialect we do not run: every check is unverifiable. */
const DRAFT_04: ToolDef = {
  outputSchema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' },
};

const CHICAGO = { temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 };
const CHICAGO_JSON = JSON.stringify(CHICAGO);
const text = (t: string) => ({ type: 'text' as const, text: t });
const IMAGE = { type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' };
const BAD = { temperature: 'hot', conditions: 'Sunny', humidity: 48 };
const BAD_MESSAGE = 'structuredContent/temperature must be number';

interface Row {
  name: string;
  input: Record<string, unknown>;
  tool: ToolDef;
  config?: Partial<RepairConfig>;
  /** The repaired result, or 'same' when the very input object must come back. */
  expected: Record<string, unknown> | 'same';
  changes: RepairChange[];
  /** Rows whose output a strict host still rejects, and why that is intended. */
  strictHostRejects?: string;
}

const rows: Row[] = [
  // Nothing to repair: the very same object comes back.
  {
    name: 'server-everything get-structured-content passes unchanged',
    input: { content: [text(CHICAGO_JSON)], structuredContent: CHICAGO },
    tool: WEATHER,
    expected: 'same',
    changes: [],
  },
  {
    name: 'plain text, no schema',
    input: { content: [text('hello')] },
    tool: NO_SCHEMA,
    expected: 'same',
    changes: [],
  },
  {
    name: 'structured object with text, no schema',
    input: { content: [text('see data')], structuredContent: { a: 1 } },
    tool: NO_SCHEMA,
    expected: 'same',
    changes: [],
  },
  {
    name: 'empty result, no schema: no content key is added',
    input: {},
    tool: NO_SCHEMA,
    expected: 'same',
    changes: [],
  },
  {
    name: 'error result without structuredContent, tool with schema: not required',
    input: { content: [text('upstream failed')], isError: true },
    tool: WEATHER,
    expected: 'same',
    changes: [],
  },
  {
    name: 'error result with valid structuredContent',
    input: { content: [text('partial')], structuredContent: CHICAGO, isError: true },
    tool: WEATHER,
    expected: 'same',
    changes: [],
  },

  // Rule 5: text for structuredContent.
  {
    name: 'structured only, no content key: text added',
    input: { structuredContent: CHICAGO },
    tool: WEATHER,
    expected: { structuredContent: CHICAGO, content: [text(CHICAGO_JSON)] },
    changes: ['text-added'],
  },
  {
    name: 'structured, empty content: text added in place',
    input: { content: [], structuredContent: { a: 1 }, _meta: { k: 'v' } },
    tool: NO_SCHEMA,
    expected: { content: [text('{"a":1}')], structuredContent: { a: 1 }, _meta: { k: 'v' } },
    changes: ['text-added'],
  },
  {
    name: 'structured with only an image: text appended',
    input: { content: [IMAGE], structuredContent: { a: 1 } },
    tool: NO_SCHEMA,
    expected: { content: [IMAGE, text('{"a":1}')], structuredContent: { a: 1 } },
    changes: ['text-added'],
  },
  {
    name: 'textForStructured off',
    input: { content: [], structuredContent: { a: 1 } },
    tool: NO_SCHEMA,
    config: { textForStructured: false },
    expected: 'same',
    changes: [],
  },
  {
    name: 'structured with a text block that is not its JSON: no second text',
    input: { content: [text('It is 36 degrees in Chicago.')], structuredContent: CHICAGO },
    tool: WEATHER,
    expected: 'same',
    changes: [],
  },
  {
    name: 'structured already embedded as a resource with the same JSON: no duplicate',
    input: {
      content: [{ type: 'resource', resource: { uri: 'mem://w', text: '{"b":2, "a":1}' } }],
      structuredContent: { a: 1, b: 2 },
    },
    tool: NO_SCHEMA,
    expected: 'same',
    changes: [],
  },
  {
    name: 'error result with structured and no text: text added',
    input: { structuredContent: { reason: 'quota' }, isError: true },
    tool: NO_SCHEMA,
    expected: {
      structuredContent: { reason: 'quota' },
      isError: true,
      content: [text('{"reason":"quota"}')],
    },
    changes: ['text-added'],
  },

  // Rule 2: structuredContent that is not an object.
  {
    name: 'array, no schema: removed, kept as text, no isError',
    input: { content: [], structuredContent: [1, 2] },
    tool: NO_SCHEMA,
    expected: { content: [text('[1,2]')] },
    changes: ['structured-not-object'],
  },
  {
    name: 'string with existing text: removed only',
    input: { content: [text('hi')], structuredContent: 'hi' },
    tool: NO_SCHEMA,
    expected: { content: [text('hi')] },
    changes: ['structured-not-object'],
  },
  {
    name: 'null, no content key: removed, its JSON added',
    input: { structuredContent: null },
    tool: NO_SCHEMA,
    expected: { content: [text('null')] },
    changes: ['structured-not-object'],
  },
  {
    name: 'number, strip mode',
    input: { content: [], structuredContent: 42 },
    tool: NO_SCHEMA,
    config: { invalidStructured: 'strip' },
    expected: { content: [text('42')] },
    changes: ['structured-not-object'],
  },
  {
    name: 'array, invalidStructured off, with text: left',
    input: { content: [text('[1,2]')], structuredContent: [1, 2] },
    tool: NO_SCHEMA,
    config: { invalidStructured: 'off' },
    expected: 'same',
    changes: [],
    strictHostRejects: 'off passes a non-object through by design',
  },
  {
    name: 'array, invalidStructured off, no text: left, and rule 5 still gives it text',
    input: { structuredContent: [1, 2] },
    tool: NO_SCHEMA,
    config: { invalidStructured: 'off' },
    expected: { structuredContent: [1, 2], content: [text('[1,2]')] },
    changes: ['text-added'],
    strictHostRejects: 'off passes a non-object through by design',
  },
  {
    name: 'array, schema, error mode: removed, then found in the text',
    input: { content: [text(CHICAGO_JSON)], structuredContent: [CHICAGO] },
    tool: WEATHER,
    expected: { content: [text(CHICAGO_JSON)], structuredContent: CHICAGO },
    changes: ['structured-not-object', 'structured-from-text'],
  },
  {
    name: 'array, schema, error mode, nothing in the text: removed, then missing',
    input: { content: [], structuredContent: [CHICAGO] },
    tool: WEATHER,
    expected: {
      content: [text(`[${CHICAGO_JSON}]`), text(missingStructuredNote({ hasOtherContent: true }))],
      isError: true,
    },
    changes: ['structured-not-object', 'structured-missing'],
  },
  {
    name: 'array, schema, strip mode: removed only (strip never sets isError)',
    input: { content: [], structuredContent: [CHICAGO] },
    tool: WEATHER,
    config: { invalidStructured: 'strip' },
    expected: { content: [text(`[${CHICAGO_JSON}]`)] },
    changes: ['structured-not-object'],
    strictHostRejects: 'strip leaves a schema tool without structuredContent and without isError',
  },
  {
    name: 'array on an error result: removed',
    input: { content: [text('failed')], structuredContent: ['x'], isError: true },
    tool: WEATHER,
    expected: { content: [text('failed')], isError: true },
    changes: ['structured-not-object'],
  },

  // Rule 3: structuredContent that fails the schema.
  {
    name: 'invalid, error mode, with text: removed, note, isError; key order kept',
    input: { content: [text('{"temperature":"hot"}')], structuredContent: BAD, _meta: { k: 1 } },
    tool: WEATHER,
    expected: {
      content: [
        text('{"temperature":"hot"}'),
        text(
          "[mcp-warden] The tool's structuredContent did not match its declared outputSchema (structuredContent/temperature must be number), so it was removed and this result is marked as an error. The call itself may have succeeded; the tool's own text output above is unchanged.",
        ),
      ],
      _meta: { k: 1 },
      isError: true,
    },
    changes: ['structured-invalid'],
  },
  {
    name: 'invalid, error mode, no content: data kept as text, then the note',
    input: { structuredContent: BAD },
    tool: WEATHER,
    expected: {
      content: [
        text(JSON.stringify(BAD)),
        text(
          "[mcp-warden] The tool's structuredContent did not match its declared outputSchema (structuredContent/temperature must be number), so it was removed and this result is marked as an error. The call itself may have succeeded; the data is in the text above, exactly as the tool returned it.",
        ),
      ],
      isError: true,
    },
    changes: ['structured-invalid'],
  },
  {
    name: 'invalid, strip mode, only an image: data as text, note, no isError',
    input: { content: [IMAGE], structuredContent: BAD },
    tool: WEATHER,
    config: { invalidStructured: 'strip' },
    expected: {
      content: [
        IMAGE,
        text(JSON.stringify(BAD)),
        text(
          "[mcp-warden] The tool's structuredContent did not match its declared outputSchema (structuredContent/temperature must be number), so it was removed; the data is in the text above, exactly as the tool returned it.",
        ),
      ],
    },
    changes: ['structured-invalid'],
    strictHostRejects: 'strip leaves a schema tool without structuredContent and without isError',
  },
  {
    name: 'invalid, strip mode: text in the result is not re-derived (strip never sets isError)',
    input: { content: [text(CHICAGO_JSON)], structuredContent: BAD },
    tool: WEATHER,
    config: { invalidStructured: 'strip' },
    expected: {
      content: [
        text(CHICAGO_JSON),
        text(invalidStructuredNote(BAD_MESSAGE, { markedError: false, dataAddedAbove: false })),
      ],
    },
    changes: ['structured-invalid'],
    strictHostRejects: 'strip leaves a schema tool without structuredContent and without isError',
  },
  {
    name: 'invalid, off: left as is',
    input: { content: [text('x')], structuredContent: BAD },
    tool: WEATHER,
    config: { invalidStructured: 'off' },
    expected: 'same',
    changes: [],
    strictHostRejects: 'off passes invalid data through by design',
  },
  {
    name: 'invalid on an error result: removed; the note does not claim the error',
    input: { content: [text('failed')], structuredContent: BAD, isError: true },
    tool: WEATHER,
    expected: {
      content: [
        text('failed'),
        text(invalidStructuredNote(BAD_MESSAGE, { markedError: false, dataAddedAbove: false })),
      ],
      isError: true,
    },
    changes: ['structured-invalid'],
  },
  {
    name: 'extra property under additionalProperties: false is named in the note',
    input: { content: [text('x')], structuredContent: { ...CHICAGO, wind: 3 } },
    tool: WEATHER,
    expected: {
      content: [
        text('x'),
        text(
          invalidStructuredNote('structuredContent must NOT have additional properties ("wind")', {
            markedError: true,
            dataAddedAbove: false,
          }),
        ),
      ],
      isError: true,
    },
    changes: ['structured-invalid'],
  },
  {
    name: 'schema unverifiable: left, and recorded',
    input: { content: [text('x')], structuredContent: { a: 1 } },
    tool: DRAFT_04,
    expected: 'same',
    changes: ['schema-unverifiable'],
  },
  {
    name: 'schema unverifiable, no text: left, text still added',
    input: { structuredContent: { a: 1 } },
    tool: DRAFT_04,
    expected: { structuredContent: { a: 1 }, content: [text('{"a":1}')] },
    changes: ['schema-unverifiable', 'text-added'],
  },

  // Rule 4: structuredContent missing.
  {
    name: 'missing, JSON text validates: taken as structuredContent',
    input: { content: [text(`\n  ${CHICAGO_JSON}  \n`)] },
    tool: WEATHER,
    expected: { content: [text(`\n  ${CHICAGO_JSON}  \n`)], structuredContent: CHICAGO },
    changes: ['structured-from-text'],
  },
  {
    name: 'missing, explicit undefined key: filled in place',
    input: { structuredContent: undefined, content: [text(CHICAGO_JSON)] },
    tool: WEATHER,
    expected: { structuredContent: CHICAGO, content: [text(CHICAGO_JSON)] },
    changes: ['structured-from-text'],
  },
  {
    name: 'missing, the same object twice (keys reordered): one distinct value, taken',
    input: {
      content: [
        text(CHICAGO_JSON),
        text('{"humidity":82,"conditions":"Light rain / drizzle","temperature":36}'),
      ],
    },
    tool: WEATHER,
    expected: {
      content: [
        text(CHICAGO_JSON),
        text('{"humidity":82,"conditions":"Light rain / drizzle","temperature":36}'),
      ],
      structuredContent: CHICAGO,
    },
    changes: ['structured-from-text'],
  },
  {
    name: 'missing, two different valid objects: ambiguous, so missing',
    input: { content: [text(CHICAGO_JSON), text('{"temperature":1,"conditions":"x","humidity":2}')] },
    tool: WEATHER,
    expected: {
      content: [
        text(CHICAGO_JSON),
        text('{"temperature":1,"conditions":"x","humidity":2}'),
        text(missingStructuredNote({ hasOtherContent: true })),
      ],
      isError: true,
    },
    changes: ['structured-missing'],
  },
  {
    name: 'missing, JSON text does not validate: missing',
    input: { content: [text(JSON.stringify(BAD))] },
    tool: WEATHER,
    expected: {
      content: [
        text(JSON.stringify(BAD)),
        text(
          '[mcp-warden] This result is marked as an error because the tool declares an outputSchema but returned no structuredContent object that matches it. The call itself may have succeeded; its output is in the content above.',
        ),
      ],
      isError: true,
    },
    changes: ['structured-missing'],
  },
  {
    name: 'missing, structuredFromText off: missing even though the text would do',
    input: { content: [text(CHICAGO_JSON)] },
    tool: WEATHER,
    config: { structuredFromText: false },
    expected: {
      content: [text(CHICAGO_JSON), text(missingStructuredNote({ hasOtherContent: true }))],
      isError: true,
    },
    changes: ['structured-missing'],
  },
  {
    name: 'missing, no content key at all',
    input: {},
    tool: WEATHER,
    expected: {
      content: [
        text(
          '[mcp-warden] This result is marked as an error because the tool declares an outputSchema but returned no structuredContent object that matches it. The call itself may have succeeded; it returned no other content.',
        ),
      ],
      isError: true,
    },
    changes: ['structured-missing'],
  },
  {
    name: 'missing, missingStructured off: left',
    input: { content: [text('36 degrees')] },
    tool: WEATHER,
    config: { missingStructured: 'off' },
    expected: 'same',
    changes: [],
    strictHostRejects: 'off passes a missing structuredContent through by design',
  },
  {
    name: 'missing, missingStructured off, but the text has it: still derived',
    input: { content: [text(CHICAGO_JSON)] },
    tool: WEATHER,
    config: { missingStructured: 'off' },
    expected: { content: [text(CHICAGO_JSON)], structuredContent: CHICAGO },
    changes: ['structured-from-text'],
  },
  {
    name: 'missing, both off: left',
    input: { content: [text(CHICAGO_JSON)] },
    tool: WEATHER,
    config: { missingStructured: 'off', structuredFromText: false },
    expected: 'same',
    changes: [],
    strictHostRejects: 'off passes a missing structuredContent through by design',
  },
  {
    name: 'missing, schema unverifiable: not derived, but flagged (the SDK rejects it whatever the schema)',
    input: { content: [text('{"a":1}')] },
    tool: DRAFT_04,
    expected: {
      content: [text('{"a":1}'), text(missingStructuredNote({ hasOtherContent: true }))],
      isError: true,
    },
    changes: ['schema-unverifiable', 'structured-missing'],
  },
  {
    name: 'missing, schema unverifiable, structuredFromText off: flagged',
    input: { content: [text('plain')] },
    tool: DRAFT_04,
    config: { structuredFromText: false },
    expected: {
      content: [text('plain'), text(missingStructuredNote({ hasOtherContent: true }))],
      isError: true,
    },
    changes: ['structured-missing'],
  },
  {
    name: 'missing, text is JSON but not an object: not a candidate',
    input: { content: [text('[1,2]'), text('"str"')] },
    tool: { outputSchema: { type: 'object' } },
    expected: {
      content: [text('[1,2]'), text('"str"'), text(missingStructuredNote({ hasOtherContent: true }))],
      isError: true,
    },
    changes: ['structured-missing'],
  },
];

/** Freezes a value and everything in it, so any mutation by the code under test throws. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/**
 * What the SDK's `Client.callTool` (1.32.2, client/index.js) does with a result: parse it with
 * `CallToolResultSchema`, then, for a tool with an outputSchema, require structuredContent unless
 * isError and validate any structuredContent present with its draft-07 ajv. Throws like it does.
 */
function strictHostCheck(result: unknown, tool: ToolDef): void {
  const parsed = CallToolResultSchema.parse(result);
  if (tool.outputSchema === undefined) return;
  const validate = new AjvJsonSchemaValidator().getValidator(tool.outputSchema as JsonSchemaType);
  if (!parsed.structuredContent && !parsed.isError) {
    throw new Error('has an output schema but did not return structured content');
  }
  if (parsed.structuredContent) {
    const verdict = validate(parsed.structuredContent);
    if (!verdict.valid) throw new Error(`Structured content does not match: ${verdict.errorMessage}`);
  }
}

describe('repairResult', () => {
  const validator = createOutputValidator();

  it.each(rows)('$name', (row) => {
    const input = deepFreeze(structuredClone(row.input)) as CallToolResult;
    const snapshot = structuredClone(row.input);
    const outcome = repairResult(input, row.tool, { ...DEFAULTS, ...row.config }, validator);

    if (row.expected === 'same') expect(outcome.result).toBe(input);
    else {
      expect(outcome.result).not.toBe(input);
      expect(outcome.result).toStrictEqual(row.expected);
      // Key order is part of the contract: unchanged keys stay where they were.
      expect(Object.keys(outcome.result)).toEqual(Object.keys(row.expected));
    }
    expect(outcome.changes).toEqual(row.changes);
    expect(input).toStrictEqual(snapshot);
  });

  const strictRows = rows.filter(
    (row) =>
      (row.config?.invalidStructured ?? 'error') === 'error' &&
      (row.config?.missingStructured ?? 'error') === 'error',
  );
  it.each(strictRows)('a strict SDK host accepts: $name', (row) => {
    const outcome = repairResult(
      structuredClone(row.input) as CallToolResult,
      row.tool,
      { ...DEFAULTS, ...row.config },
      validator,
    );
    if (row.strictHostRejects === undefined)
      expect(() => strictHostCheck(outcome.result, row.tool)).not.toThrow();
    else expect(() => strictHostCheck(outcome.result, row.tool)).toThrow();
  });

  it('the rows the strict host rejects without repair are ones repair fixes', () => {
    // Guards the helper above: it must actually reject what callTool rejects.
    expect(() => strictHostCheck({ content: [] }, WEATHER)).toThrow(/did not return structured content/);
    expect(() => strictHostCheck({ content: [], structuredContent: BAD }, WEATHER)).toThrow(/does not match/);
    expect(() => strictHostCheck({ content: [], structuredContent: BAD, isError: true }, WEATHER)).toThrow(
      /does not match/,
    );
    expect(() => strictHostCheck({ content: [], structuredContent: [1] }, NO_SCHEMA)).toThrow();
  });

  it('gives notes for the log, including for what it leaves alone', () => {
    const off = repairResult(
      { content: [text('x')], structuredContent: BAD },
      WEATHER,
      { ...DEFAULTS, invalidStructured: 'off' },
      validator,
    );
    expect(off.changes).toEqual([]);
    expect(off.notes).toEqual([
      `structuredContent does not match the outputSchema (${BAD_MESSAGE}); left as is (invalidStructured: off)`,
    ]);
    const unverifiable = repairResult(
      { content: [text('x')], structuredContent: {} },
      DRAFT_04,
      DEFAULTS,
      validator,
    );
    expect(unverifiable.notes[0]).toMatch(/^structuredContent not checked: .*draft-04/);
  });

  it('never throws, whatever the upstream sent', () => {
    const odd: unknown[] = [
      { content: 'not an array', structuredContent: [1] },
      { content: [null, 3, { type: 'text' }], structuredContent: { a: 1 } },
      { content: [{ type: 'text', text: '{"broken": ' }] },
    ];
    for (const result of odd) {
      for (const tool of [WEATHER, NO_SCHEMA, DRAFT_04]) {
        expect(() => repairResult(result as CallToolResult, tool, DEFAULTS, validator)).not.toThrow();
      }
    }
  });

  it('passes a real server-everything get-structured-content result through as the same object', async () => {
    // The tool module ships without type declarations; load it by a path the compiler does not resolve.
    const modulePath: string = '@modelcontextprotocol/server-everything/dist/tools/get-structured-content.js';
    const { registerGetStructuredContentTool } = (await import(modulePath)) as {
      registerGetStructuredContentTool: (server: McpServer) => void;
    };
    const server = new McpServer({ name: 'everything', version: '1.0.0' });
    registerGetStructuredContentTool(server);
    const client = new Client({ name: 'test', version: '1.0.0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    try {
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.name === 'get-structured-content');
      expect(tool?.outputSchema).toEqual(WEATHER.outputSchema);
      for (const location of ['New York', 'Chicago', 'Los Angeles']) {
        const result = await client.request(
          { method: 'tools/call', params: { name: 'get-structured-content', arguments: { location } } },
          CallToolResultSchema,
        );
        const outcome = repairResult(result, tool as Tool, DEFAULTS, validator);
        expect(outcome.result).toBe(result);
        expect(outcome.changes).toEqual([]);
      }
    } finally {
      await client.close();
      await server.close();
    }
  });
});
