import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { didYouMean, levenshtein } from '../../src/lib/didYouMean.js';
import { formatDuration, MAX_DURATION_MS, parseDuration } from '../../src/config/duration.js';
import { deepFreeze } from '../../src/lib/freeze.js';
import { expandString, interpolate } from '../../src/config/interpolate.js';
import { formatKeyPath } from '../../src/config/load.js';
import { checkDocumentShape, configSchema, SCHEMA_URL } from '../../src/config/schema.js';
import { createDocumentAjv } from '../../src/config/documentAjv.js';
import { translateErrors } from '../../src/config/schemaErrors.js';

const FORMS = 'expected a string like "500ms", "30s", "2m", "1h" or "1.5s"';

describe('parseDuration', () => {
  it.each<[string | number, number]>([
    [0, 0],
    [-0, 0],
    [250, 250],
    [1.5, 1.5],
    ['500ms', 500],
    ['30s', 30_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1.5s', 1_500],
    ['1.1s', 1_100], // exact, not 1100.0000000000002
    ['0.5ms', 0.5],
    ['0s', 0],
    [MAX_DURATION_MS, MAX_DURATION_MS],
  ])('%j → %d ms', (input, expected) => {
    expect(parseDuration(input)).toBe(expected);
  });

  it.each<[string | number, string]>([
    ['30', `invalid duration "30": ${FORMS}`],
    ['30 s', `invalid duration "30 s": ${FORMS}`],
    ['1h30m', `invalid duration "1h30m": ${FORMS}`],
    ['1d', `invalid duration "1d": ${FORMS}`],
    ['-1s', `invalid duration "-1s": ${FORMS}`],
    ['.5s', `invalid duration ".5s": ${FORMS}`],
    ['30S', `invalid duration "30S": ${FORMS}`],
    ['', `invalid duration "": ${FORMS}`],
    [-1, `invalid duration -1: ${FORMS}`],
    [Number.NaN, `invalid duration NaN: ${FORMS}`],
    [Infinity, `invalid duration Infinity: ${FORMS}`],
    ['600h', 'invalid duration "600h": at most 2147483647 ms (about 24.8 days) is supported'],
    [
      MAX_DURATION_MS + 1,
      'invalid duration 2147483648: at most 2147483647 ms (about 24.8 days) is supported',
    ],
  ])('%j is rejected', (input, message) => {
    expect(() => parseDuration(input)).toThrow(new Error(message));
  });

  it('rejects non-string, non-number input from untyped callers', () => {
    expect(() => parseDuration(true as unknown as string)).toThrow(
      `invalid duration of type boolean: ${FORMS}`,
    );
  });
});

describe('formatDuration', () => {
  it.each<[number, string]>([
    [0, '0ms'],
    [1.5, '1.5ms'],
    [500, '500ms'],
    [1_500, '1500ms'],
    [30_000, '30s'],
    [90_000, '90s'],
    [1_800_000, '30m'],
    [5_400_000, '90m'],
    [7_200_000, '2h'],
    [MAX_DURATION_MS, '2147483647ms'],
  ])('%d ms → %s, which parses back', (ms, expected) => {
    expect(formatDuration(ms)).toBe(expected);
    expect(parseDuration(expected)).toBe(ms);
  });
});

describe('didYouMean', () => {
  const serverKeys = [
    'type',
    'command',
    'args',
    'env',
    'cwd',
    'url',
    'headers',
    'namespace',
    'timeout',
    'tools',
  ];
  it.each<[string, readonly string[], string | undefined]>([
    ['comand', serverKeys, 'command'],
    ['commmand', serverKeys, 'command'],
    ['arg', serverKeys, 'args'],
    ['URL', serverKeys, 'url'], // case only
    ['timout', serverKeys, 'timeout'],
    ['header', serverKeys, 'headers'],
    ['warning', ['error', 'warn', 'info', 'debug'], 'warn'], // truncation
    ['mcp_servers', ['gateway', 'servers', 'mcpServers'], 'mcpServers'],
    ['server', ['gateway', 'servers', 'mcpServers'], 'servers'],
    ['concurrency', ['maxConcurrency', 'maxQueue'], 'maxConcurrency'],
    ['xyz', serverKeys, undefined],
    ['colour', serverKeys, undefined],
    ['environment', serverKeys, 'env'], // a longer spelling of the key
    ['e', serverKeys, undefined],
    ['command', serverKeys, undefined], // the key itself is not a suggestion
  ])('%j → %j', (input, candidates, expected) => {
    expect(didYouMean(input, candidates)).toBe(expected);
  });

  it.each<[string, string, number]>([
    ['', '', 0],
    ['', 'abc', 3],
    ['kitten', 'sitting', 3],
    ['flaw', 'lawn', 2],
    ['command', 'comand', 1],
  ])('levenshtein(%j, %j) = %d', (a, b, expected) => {
    expect(levenshtein(a, b)).toBe(expected);
    expect(levenshtein(b, a)).toBe(expected);
  });
});

describe('interpolation', () => {
  it('collects every problem in a string, and keeps going', () => {
    expect(expandString('${A}-${B}-${C:-c}', { env: { B: 'b' } })).toEqual({
      value: '-b-c',
      problems: [
        'environment variable "A" is not set (use ${A:-default} to give a default)',
        // B is set, C has a default: one problem only
      ],
    });
  });

  it('expands strings at any depth, reports key paths, and leaves the input untouched', () => {
    const input = {
      servers: { a: { args: ['x', '${MISSING}'], env: { K: '${K}' }, n: 3, b: true, z: null } },
    };
    const snapshot = structuredClone(input);
    const result = interpolate(input, { env: { K: 'k' } });
    expect(result.value).toEqual({
      servers: { a: { args: ['x', ''], env: { K: 'k' }, n: 3, b: true, z: null } },
    });
    expect(result.problems).toEqual([
      {
        path: ['servers', 'a', 'args', 1],
        message: 'environment variable "MISSING" is not set (use ${MISSING:-default} to give a default)',
      },
    ]);
    expect(input).toEqual(snapshot);
  });

  it('keeps a "__proto__" key as data', () => {
    const input = JSON.parse('{"__proto__": {"polluted": "${X}"}}') as unknown;
    const result = interpolate(input, { env: { X: 'yes' } });
    expect(Object.hasOwn(result.value as object, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('deepFreeze', () => {
  it('freezes nested objects and arrays and returns the same value', () => {
    const value = { a: { b: [{ c: 1 }] }, d: 'x' };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value.a.b[0])).toBe(true);
    expect(Object.isFrozen(value.a.b)).toBe(true);
  });

  it('survives cycles, walks into already-frozen parents, and skips typed arrays', () => {
    const inner = { n: 1 };
    const outer = Object.freeze({ inner });
    const cyclic: { self?: unknown; bytes: Uint8Array; outer: typeof outer } = {
      bytes: new Uint8Array(2),
      outer,
    };
    cyclic.self = cyclic;
    deepFreeze(cyclic);
    expect(Object.isFrozen(cyclic)).toBe(true);
    expect(Object.isFrozen(inner)).toBe(true);
    expect(Object.isFrozen(cyclic.bytes)).toBe(false);
  });

  it('leaves primitives alone', () => {
    expect(deepFreeze(3)).toBe(3);
    expect(deepFreeze(null)).toBe(null);
  });
});

describe('formatKeyPath', () => {
  it.each<[(string | number)[], string]>([
    [[], ''],
    [['servers', 'fs', 'command'], 'servers.fs.command'],
    [['servers', 'fs', 'args', 2], 'servers.fs.args[2]'],
    [['servers', 'my server'], 'servers["my server"]'],
    [['servers', 'a', 'tools', 'timeouts', 'fs.read_*'], 'servers.a.tools.timeouts["fs.read_*"]'],
    [['servers', 'a', 'tools', 'timeouts', ''], 'servers.a.tools.timeouts[""]'],
  ])('%j → %s', (keyPath, expected) => {
    expect(formatKeyPath(keyPath)).toBe(expected);
  });
});

describe('DEFAULTS', () => {
  it('is deeply frozen', () => {
    expect(Object.isFrozen(DEFAULTS)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.gateway.restart)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.server)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.confirmation.methods)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.audit.redact.patterns)).toBe(true);
  });
});

describe('schema/proxy.config.schema.json', () => {
  const root = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
  const schemaFile = path.join(root, 'schema', 'proxy.config.schema.json');

  it('is found from src/config/ and from dist/config/ alike', () => {
    expect(fileURLToPath(SCHEMA_URL)).toBe(schemaFile);
    // The same relative URL, as seen from the compiled module.
    const fromDist = new URL(
      '../../schema/proxy.config.schema.json',
      pathToFileURL(path.join(root, 'dist/config/schema.js')),
    );
    expect(fileURLToPath(fromDist)).toBe(schemaFile);
    expect(existsSync(schemaFile)).toBe(true);
  });

  it('declares draft-07, an $id, and the package ships it', () => {
    expect(configSchema['$schema']).toBe('http://json-schema.org/draft-07/schema#');
    expect(typeof configSchema['$id']).toBe('string');
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('schema');
  });

  it('gives every property a title and a description, for editor help', () => {
    const missing: string[] = [];
    const visit = (node: unknown, where: string): void => {
      if (typeof node !== 'object' || node === null) return;
      if (Array.isArray(node)) {
        node.forEach((item, index) => visit(item, `${where}/${index}`));
        return;
      }
      const record = node as Record<string, unknown>;
      for (const group of ['properties', 'definitions']) {
        const children = record[group];
        if (typeof children !== 'object' || children === null) continue;
        for (const [name, child] of Object.entries(children)) {
          const c = child as Record<string, unknown>;
          if (typeof c['title'] !== 'string' || typeof c['description'] !== 'string') {
            missing.push(`${where}/${group}/${name}`);
          }
        }
      }
      for (const [key, child] of Object.entries(record)) visit(child, `${where}/${key}`);
    };
    visit(configSchema, '#');
    expect(missing).toEqual([]);
  });

  const props = (node: unknown): Record<string, Record<string, unknown>> =>
    (node as { properties: Record<string, Record<string, unknown>> }).properties;

  it('states the same defaults as DEFAULTS', () => {
    const gateway = props(props(configSchema)['gateway']);
    const server = props((configSchema['definitions'] as Record<string, unknown>)['server']);
    const ms = (value: unknown) => parseDuration(value as string);
    const g = DEFAULTS.gateway;
    expect(props(gateway['naming'])['separator']?.['default']).toBe(g.naming.separator);
    expect(props(gateway['naming'])['pattern']?.['default']).toBe(g.naming.pattern);
    expect(props(gateway['naming'])['maxLength']?.['default']).toBe(g.naming.maxLength);
    expect(ms(gateway['startupTimeout']?.['default'])).toBe(g.startupTimeoutMs);
    expect(ms(gateway['connectTimeout']?.['default'])).toBe(g.connectTimeoutMs);
    expect(ms(gateway['timeout']?.['default'])).toBe(g.callTimeoutMs);
    expect(ms(gateway['maxTimeout']?.['default'])).toBe(g.maxCallTimeoutMs);
    expect(gateway['repair']?.['default']).toEqual(g.repair);
    expect(gateway['validateArguments']?.['default']).toBe(g.validateArguments);
    expect(gateway['maxMessageSize']?.['default']).toBe(`${g.maxMessageBytes / 1024 / 1024}MiB`);
    const restart = props(gateway['restart']);
    expect(ms(restart['initialDelay']?.['default'])).toBe(g.restart.initialDelayMs);
    expect(ms(restart['maxDelay']?.['default'])).toBe(g.restart.maxDelayMs);
    expect(restart['maxRestarts']?.['default']).toBe(g.restart.maxRestarts);
    expect(ms(restart['window']?.['default'])).toBe(g.restart.windowMs);
    expect(props(gateway['log'])['level']?.['default']).toBe(g.log.level);
    expect(server['maxConcurrency']?.['default']).toBe(DEFAULTS.server.maxConcurrency);
    expect(server['maxQueue']?.['default']).toBe(DEFAULTS.server.maxQueue);
    expect(server['disabled']?.['default']).toBe(DEFAULTS.server.disabled);
    expect(server['trusted']?.['default']).toBe(DEFAULTS.server.trusted);

    const top = props(configSchema);
    expect(top['policies']?.['default']).toEqual(DEFAULTS.policies);
    const confirmation = props(top['confirmation']);
    const c = DEFAULTS.confirmation;
    expect(confirmation['methods']?.['default']).toEqual(c.methods);
    expect(ms(confirmation['timeout']?.['default'])).toBe(c.timeoutMs);
    expect(confirmation['offerRemember']?.['default']).toBe(c.offerRemember);
    const audit = props(top['audit']);
    const a = DEFAULTS.audit;
    expect(audit['maxSize']?.['default']).toBe(`${a.maxBytes / 1024 / 1024}MiB`);
    expect(audit['maxFiles']?.['default']).toBe(a.maxFiles);
    expect(audit['onFailure']?.['default']).toBe(a.onFailure);
    expect(audit['fsync']?.['default']).toBe(a.fsync);
    expect(audit['logResults']?.['default']).toBe(a.logResults);
    const redact = props(audit['redact']);
    expect(redact['keys']?.['default']).toEqual(a.redact.keys);
    expect(redact['patterns']?.['default']).toEqual(a.redact.patterns);
    const pins = props(top['pins']);
    expect(pins['onChange']?.['default']).toBe(DEFAULTS.pins.onChange);
    expect(pins['onNew']?.['default']).toBe(DEFAULTS.pins.onNew);
  });

  it('checks the confirmation hook with the same rules as a stdio server', () => {
    const hook = props(props(props(configSchema)['confirmation'])['command']);
    for (const key of ['command', 'args', 'env', 'cwd']) {
      expect(hook[key]?.['$ref']).toBe(`#/definitions/server/properties/${key}`);
    }
    expect(Object.keys(hook)).toEqual(['command', 'args', 'env', 'cwd']);
  });

  it('offers the same repair keys and values as RepairConfig, for the gateway and servers alike', () => {
    const definitions = configSchema['definitions'] as Record<string, Record<string, unknown>>;
    const repair = (definitions['repair'] as { properties: Record<string, Record<string, unknown>> })
      .properties;
    expect(Object.keys(repair)).toEqual(Object.keys(DEFAULTS.gateway.repair));
    expect(repair['invalidStructured']?.['enum']).toEqual(['error', 'strip', 'off']);
    expect(repair['missingStructured']?.['enum']).toEqual(['error', 'off']);
    const refOf = (node: unknown) => (node as { $ref: string }).$ref;
    const gateway = (configSchema['properties'] as Record<string, { properties: Record<string, unknown> }>)[
      'gateway'
    ];
    const server = (definitions['server'] as { properties: Record<string, unknown> }).properties;
    expect(refOf(gateway?.properties['repair'])).toBe('#/definitions/repair');
    expect(refOf(server['repair'])).toBe('#/definitions/repair');
  });

  it('tells of repeated list items where they repeat, echoing only values the schema spells out', () => {
    const validate = createDocumentAjv().compile({
      type: 'object',
      properties: {
        colours: { type: 'array', uniqueItems: true, items: { type: 'string', enum: ['red', 'blue'] } },
        secrets: { type: 'array', uniqueItems: true, items: { type: 'string' } },
        shapes: { type: 'array', uniqueItems: true },
      },
    });
    const document = {
      colours: ['red', 'blue', 'red'],
      secrets: ['s3cr3t', 's3cr3t'],
      shapes: [{ a: 1 }, { b: 2 }, { a: 1 }],
    };
    expect(validate(document)).toBe(false);
    expect(translateErrors(validate.errors ?? [], document)).toEqual([
      {
        path: ['colours', 2],
        at: 'value',
        message: '"red" is already listed at colours[0]; list each value once',
      },
      {
        path: ['secrets', 1],
        at: 'value',
        message: 'this value is already listed at secrets[0]; list each value once',
      },
      // Mappings: the pair ajv found.
      {
        path: ['shapes', 2],
        at: 'value',
        message: 'this value is already listed at shapes[0]; list each value once',
      },
    ]);
  });

  it('compiles in strict mode and accepts a minimal document', () => {
    expect(() => createDocumentAjv().compile(configSchema)).not.toThrow();
    expect(checkDocumentShape({ servers: { a: { command: 'x' } } })).toEqual([]);
    expect(checkDocumentShape({ servers: { a: { command: 'x', url: 'http://x' } } })).not.toEqual([]);
  });
});
