import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { InvalidArgumentsError } from '../../src/core/errors.js';
import { errorToWire } from '../../src/core/rpc/errorsToWire.js';
import type { Logger } from '../../src/core/logger.js';
import type { Next, RoutedMessage } from '../../src/core/pipeline/types.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { createValidate } from '../../src/features/validate/feature.js';
import { createInputValidator } from '../../src/features/validate/inputValidator.js';
import { createValidateStage } from '../../src/features/validate/stage.js';

function recordingLogger() {
  const warnings: string[] = [];
  const logger: Logger = {
    error: () => {},
    warn: (m) => warnings.push(m),
    info: () => {},
    debug: () => {},
    child: () => logger,
  };
  return { logger, warnings };
}

/** server-everything's get-sum, as it lists it (zod, via the SDK). */
const GET_SUM: Tool = {
  name: 'get-sum',
  inputSchema: {
    type: 'object',
    properties: { a: { type: 'number' }, b: { type: 'number' } },
    required: ['a', 'b'],
    additionalProperties: false,
    $schema: 'http://json-schema.org/draft-07/schema#',
  },
};

function callOf(definition: Tool | undefined, args: Record<string, unknown> | undefined): RoutedMessage {
  return {
    kind: 'tools/call',
    direction: 'upstream',
    server: 'everything',
    target: definition?.name ?? 'x',
    exposedName: `everything__${definition?.name ?? 'x'}`,
    definition,
    arguments: args,
    params: undefined,
    meta: undefined,
    signal: new Cancellation(),
    onProgress: undefined,
    record: { repairs: [] },
  };
}

const ok = Outcome.of({ content: [{ type: 'text', text: 'ok' }] });

/** The upstream stand-in: records every message that reaches it. */
function upstream() {
  const reached: RoutedMessage[] = [];
  const next: Next = (message) => {
    reached.push(message);
    return Promise.resolve(ok);
  };
  return { next, reached };
}

function stage(options: { enabled?: boolean; maxCached?: number } = {}) {
  const { logger, warnings } = recordingLogger();
  const validator = createInputValidator({ ...(options.maxCached && { maxCached: options.maxCached }) });
  const run = createValidateStage({ enabledFor: () => options.enabled ?? true, validator, logger });
  return { run, validator, warnings };
}

async function refusal(promise: Promise<unknown>): Promise<InvalidArgumentsError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidArgumentsError);
  return error as InvalidArgumentsError;
}

describe('validate stage', () => {
  it('refuses a string for a number, naming tool, server, property and value; the upstream never sees it', async () => {
    const { run } = stage();
    const { next, reached } = upstream();
    const call = callOf(GET_SUM, { a: '1000', b: 1 });
    const error = await refusal(run(call, next));
    expect(error.message).toBe(
      'Invalid arguments for tool "get-sum" on server "everything": /a must be number (got string "1000"). The call was not run.',
    );
    expect(error.code).toBe('INVALID_ARGUMENTS');
    expect(reached).toEqual([]);
    // Refused before the policy was asked, as the audit record will say.
    expect(call.record.decision).toEqual({ effect: 'deny', rule: null });
  });

  it('passes a valid call on as the very same message object, untouched', async () => {
    const { run } = stage();
    const { next, reached } = upstream();
    const args = { a: 1000, b: 1 };
    const call = callOf(GET_SUM, args);
    expect(await run(call, next)).toBe(ok);
    expect(reached).toHaveLength(1);
    expect(reached[0]).toBe(call);
    expect(reached[0]?.arguments).toBe(args);
    expect(args).toEqual({ a: 1000, b: 1 });
    expect(call.record.decision).toBeUndefined();
  });

  it.each<[string, Record<string, unknown> | undefined, string]>([
    ['a missing property', { a: 1 }, '/b is required but missing'],
    ['no arguments at all, checked as {}', undefined, '/a is required but missing'],
    [
      'a property the schema does not allow',
      { a: 1, b: 2, c: 3 },
      '/c is not a property the inputSchema allows',
    ],
    ['an array for a number', { a: [1000], b: 1 }, '/a must be number (got an array of 1)'],
    ['null for a number', { a: null, b: 1 }, '/a must be number (got null)'],
  ])('refuses %s', async (_what, args, problem) => {
    const { run } = stage();
    const { next, reached } = upstream();
    const error = await refusal(run(callOf(GET_SUM, args), next));
    expect(error.message).toBe(
      `Invalid arguments for tool "get-sum" on server "everything": ${problem}. The call was not run.`,
    );
    expect(reached).toEqual([]);
  });

  it('coerces nothing and fills in no default: the upstream gets exactly what the host sent', async () => {
    const { run } = stage();
    const { next, reached } = upstream();
    const tool: Tool = {
      name: 'opts',
      inputSchema: {
        type: 'object',
        properties: { n: { type: 'integer', default: 5 }, flag: { type: 'boolean' } },
      },
    };
    await refusal(run(callOf(tool, { flag: 'true' }), next));
    await refusal(run(callOf(tool, { n: '5' }), next));
    const args = {};
    await run(callOf(tool, args), next);
    expect(reached[0]?.arguments).toBe(args);
    expect(args).toEqual({});
  });

  it('names nested properties by their path, and quotes long values only in part', async () => {
    const { run } = stage();
    const { next } = upstream();
    const tool: Tool = {
      name: 'nested',
      inputSchema: {
        type: 'object',
        properties: {
          'a/b': {
            type: 'array',
            items: { type: 'object', properties: { limit: { type: 'integer', minimum: 100 } } },
          },
        },
      },
    };
    const error = await refusal(run(callOf(tool, { 'a/b': [{ limit: 100 }, { limit: 5 }] }), next));
    expect(error.message).toContain(': /a~1b/1/limit must be >= 100 (got number 5).');
    const long = 'x'.repeat(500);
    const typed: Tool = { name: 't', inputSchema: { type: 'object', properties: { n: { type: 'number' } } } };
    const second = await refusal(run(callOf(typed, { n: long }), next));
    expect(second.message).toContain(`/n must be number (got string "${'x'.repeat(60)}…")`);
  });

  it('leaves other kinds of request, and servers with validateArguments off, alone', async () => {
    const off = stage({ enabled: false });
    const { next, reached } = upstream();
    await off.run(callOf(GET_SUM, { a: '1000', b: 1 }), next);
    const on = stage();
    const prompt = { ...callOf(GET_SUM, { a: '1000' }), kind: 'prompts/get' as const, definition: undefined };
    await on.run(prompt, next);
    expect(reached).toHaveLength(2);
  });

  it('compiles each definition once, and again when the list replaces it', async () => {
    const { run, validator } = stage();
    const { next } = upstream();
    // Valid arguments of a schema this simple are recognised without ajv: nothing is compiled.
    for (let i = 0; i < 5; i++) await run(callOf(GET_SUM, { a: i, b: 1 }), next);
    expect(validator.stats.compiled).toBe(0);
    await refusal(run(callOf(GET_SUM, { a: 'x', b: 1 }), next));
    await refusal(run(callOf(GET_SUM, { a: 'y', b: 1 }), next));
    expect(validator.stats.compiled).toBe(1);
    const relisted = structuredClone(GET_SUM);
    await refusal(run(callOf(relisted, { a: 'x', b: 1 }), next));
    expect(validator.stats.compiled).toBe(2);
    await refusal(run(callOf(GET_SUM, { a: 'x', b: 1 }), next));
    expect(validator.stats.compiled).toBe(2);
  });

  it('bounds the cache: past its size it starts over, and calls still validate', async () => {
    const { run, validator } = stage({ maxCached: 3 });
    const { next, reached } = upstream();
    const tools = Array.from({ length: 4 }, () => structuredClone(GET_SUM));
    for (const tool of tools) await refusal(run(callOf(tool, { a: '1', b: 1 }), next));
    expect(validator.stats.compiled).toBe(4);
    // The first three were dropped when the fourth came; the fourth is still cached.
    await refusal(run(callOf(tools[3], { a: '1', b: 1 }), next));
    expect(validator.stats.compiled).toBe(4);
    await refusal(run(callOf(tools[0], { a: '1', b: 1 }), next));
    expect(validator.stats.compiled).toBe(5);
    for (const tool of tools) await run(callOf(tool, { a: 1, b: 1 }), next);
    expect(reached).toHaveLength(4);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a catastrophic pattern',
      { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } },
      /catastrophic backtracking/,
    ],
    [
      'a remote $ref',
      { type: 'object', properties: { s: { $ref: 'https://example.com/s.json' } } },
      /refers to "https:\/\/example.com\/s.json"/,
    ],
    [
      'an invalid schema',
      { type: 'object', properties: { s: { type: 'strnig' } } },
      // In ajv's words, whether the meta-schema was compiled by ajv or generated by the build.
      /could not be compiled: schema is invalid: data\/properties\/s\/type must be equal to one of the allowed values, data\/properties\/s\/type must be array, data\/properties\/s\/type must match a schema in anyOf\)/,
    ],
    [
      'an invalid draft-07 schema',
      { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', required: 'a' },
      /could not be compiled: schema is invalid: data\/required must be array\)/,
    ],
    [
      'a dialect we do not run',
      { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' },
      /draft-04/,
    ],
  ])(
    'lets calls to a tool with %s through unchecked, warning once per definition',
    async (_what, inputSchema, reason) => {
      const { run, warnings } = stage();
      const { next, reached } = upstream();
      const tool = { name: 'odd', inputSchema } as Tool;
      await run(callOf(tool, { s: 1 }), next);
      await run(callOf(tool, { s: 2 }), next);
      expect(reached).toHaveLength(2);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^tool "odd" on server "everything": its arguments are not validated \(/);
      expect(warnings[0]).toMatch(reason);
    },
  );

  it('refuses data it cannot check, since validation stopped before the rest was checked', async () => {
    const { run } = stage();
    const { next, reached } = upstream();
    const tool: Tool = {
      name: 'write',
      inputSchema: {
        type: 'object',
        properties: { note: { type: 'string', pattern: '^[a-z ]*$' }, count: { type: 'number' } },
      },
    };
    const error = await refusal(run(callOf(tool, { note: 'a'.repeat(5000), count: '1000' }), next));
    expect(error.message).toBe(
      'The arguments for tool "write" on server "everything" could not be checked against its inputSchema: ' +
        'a string of 5000 characters is longer than the 4096 that pattern "^[a-z ]*$" is run on. The call was not run.',
    );
    expect(reached).toEqual([]);
  });
});

describe('InvalidArgumentsError on the wire', () => {
  it('is an isError tool result marked as the gateway’s', () => {
    const error = new InvalidArgumentsError({
      server: 's',
      tool: 't',
      problem: '/a must be number',
      kind: 'invalid',
    });
    expect(errorToWire(error, recordingLogger().logger)).toEqual({
      kind: 'result',
      result: {
        content: [
          {
            type: 'text',
            text: '[mcp-warden] Invalid arguments for tool "t" on server "s": /a must be number. The call was not run.',
          },
        ],
        isError: true,
        _meta: { 'mcp-warden/error': 'INVALID_ARGUMENTS' },
      },
    });
  });
});

describe('createValidate', () => {
  const configOf = (text: string) =>
    parseConfigText(text, { file: '/srv/proxy.config.yaml', env: {} }).config;

  it('has a stage by default, and none when every server has validateArguments off', () => {
    const { logger } = recordingLogger();
    expect(createValidate(configOf('servers:\n  a: { command: x }\n'), { logger }).stage?.name).toBe(
      'validate',
    );
    expect(
      createValidate(configOf('gateway: { validateArguments: false }\nservers:\n  a: { command: x }\n'), {
        logger,
      }).stage,
    ).toBeUndefined();
  });

  it('checks only the servers that have it on', async () => {
    const { logger } = recordingLogger();
    const config = configOf(
      'gateway: { validateArguments: false }\nservers:\n  everything: { command: x, validateArguments: true }\n  other: { command: y }\n',
    );
    const run = createValidate(config, { logger }).stage!.run;
    const { next, reached } = upstream();
    await refusal(run(callOf(GET_SUM, { a: '1000', b: 1 }), next));
    await run({ ...callOf(GET_SUM, { a: '1000', b: 1 }), server: 'other' }, next);
    expect(reached.map((m) => m.server)).toEqual(['other']);
  });
});
