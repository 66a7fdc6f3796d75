import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadPolicies,
  parsePolicyText,
  policySchema,
  POLICY_SCHEMA_URL,
} from '../../src/features/policy/loadPolicies.js';
import { ConfigError } from '../../src/config/issues.js';
import { createDocumentAjv } from '../../src/config/documentAjv.js';
import { rejectedIssues, thrownIssues } from './configIssues.js';

const FILE = path.resolve('/etc/warden/policies/team.yaml');
const F = FILE; // keeps the expected messages below readable

function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

/** The messages exactly as the CLI prints them, one per issue. */
const issuesOf = (text: string): string[] => thrownIssues(() => parsePolicyText(text, FILE));

const loadIssues = (files: string[]): Promise<string[]> => rejectedIssues(() => loadPolicies(files));

describe('parsePolicyText: valid files', () => {
  it('reads rules with their ids, sources and conditions, and freezes the result', () => {
    const policy = parsePolicyText(
      yaml(
        '# a comment line',
        'default: confirm',
        'rules:',
        '  - id: no-deletes',
        '    match:',
        '      server: "fs*"',
        '      tool: [delete_*, "rm"]',
        '      trusted: false',
        '      annotations: { destructiveHint: true, readOnlyHint: false }',
        '    action: deny',
        '    reason: Deleting is not allowed here.',
        '  - match: {}',
        '    action: allow',
      ),
      FILE,
    );
    expect(policy).toEqual({
      file: FILE,
      default: { effect: 'confirm', source: { file: FILE, line: 2, column: 1 } },
      rules: [
        {
          id: 'no-deletes',
          idWritten: true,
          match: {
            server: ['fs*'],
            kind: null,
            tool: ['delete_*', 'rm'],
            prompt: null,
            resource: null,
            trusted: false,
            annotations: { readOnlyHint: false, destructiveHint: true },
            arguments: null,
            paths: null,
            principal: null,
          },
          action: 'deny',
          reason: 'Deleting is not allowed here.',
          source: { file: FILE, line: 4, column: 5 },
        },
        {
          id: 'team.yaml#2',
          idWritten: false,
          match: {
            server: null,
            kind: null,
            tool: null,
            prompt: null,
            resource: null,
            trusted: null,
            annotations: null,
            arguments: null,
            paths: null,
            principal: null,
          },
          action: 'allow',
          reason: null,
          source: { file: FILE, line: 12, column: 5 },
        },
      ],
      // The version parsed, for the log and the audit trail.
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(Object.isFrozen(policy.rules[0]?.match.tool)).toBe(true);
  });

  it('accepts JSON, a file with only a default, and one with only rules', () => {
    expect(parsePolicyText('{"default": "deny"}', FILE)).toMatchObject({
      default: { effect: 'deny' },
      rules: [],
    });
    expect(parsePolicyText('rules: []', FILE)).toMatchObject({ default: null, rules: [] });
  });

  it('keeps the argument schema as written and compiles it', () => {
    const policy = parsePolicyText(
      yaml(
        'rules:',
        '  - match:',
        '      arguments:',
        '        $schema: "https://json-schema.org/draft/2020-12/schema"',
        '        $id: "urn:x"',
        '        $defs: { p: { type: string, pattern: "^/tmp/" } }',
        '        properties: { path: { $ref: "#/$defs/p" } }',
        '        required: [path]',
        '    action: allow',
      ),
      FILE,
    );
    const condition = policy.rules[0]?.match.arguments;
    expect(condition?.schema).toMatchObject({ $id: 'urn:x', required: ['path'] });
    expect(condition?.test({ path: '/tmp/x' })).toEqual({ kind: 'match' });
    expect(condition?.test({ path: '/etc/x' })).toEqual({
      kind: 'mismatch',
      why: 'arguments/path must match pattern "^/tmp/"',
    });
  });
});

describe('parsePolicyText: argument schemas that are fine', () => {
  it('accepts keywords of every shape: schema lists, name maps, data, nested $defs', () => {
    const schemas = [
      '{ allOf: [{ required: [a] }, { not: { required: [b] } }], anyOf: [true, { type: [string, "null"] }] }',
      '{ dependentRequired: { a: [b, c] }, dependentSchemas: { a: { required: [d] } } }',
      '{ properties: { default: { const: { propertis: 1 } }, enum: { enum: [{ x: 1 }] } } }',
      '{ patternProperties: { "": { type: string }, "^x_": { minLength: 1 } }, propertyNames: { pattern: "^[a-z_]+$" } }',
      '{ $defs: { p: { examples: [{ anything: 1 }] } }, properties: { q: { $ref: "#/$defs/p" } } }',
      '{ if: { required: [a] }, then: { required: [b] }, else: { required: [c] }, $comment: "x", title: t }',
      '{ $schema: "http://json-schema.org/draft-07/schema#", items: [{ type: string }], dependencies: { a: [b] } }',
      '{ properties: { to: { format: email } } }',
    ];
    for (const schema of schemas) {
      expect(
        () => parsePolicyText(`rules:\n  - match: { arguments: ${schema} }\n    action: deny\n`, FILE),
        schema,
      ).not.toThrow();
    }
  });
});

describe('parsePolicyText: errors, every one located', () => {
  it('reports every schema problem at once, with did-you-mean and allowed values', () => {
    expect(
      issuesOf(
        yaml(
          'default: alow',
          'rules:',
          '  - id: has space',
          '    mach: {}',
          '    action: Deny',
          '  - match: { tool: "[a", server: [fs, 3], annotations: { destructive: true } }',
          '    action: deny',
          '    reason: ""',
          '  - match: { tool: [] , trusted: "yes", arguments: [] }',
          '    action: block',
        ),
      ),
    ).toEqual([
      `${F}:1:10: default: expected one of "allow", "deny", "confirm", got "alow" (did you mean "allow"?)`,
      `${F}:3:5: rules[0]: missing required key "match"`,
      `${F}:3:9: rules[0].id: a rule id must be non-empty, without spaces or "#" (ids with "#" are the ones made up for rules without an id)`,
      `${F}:4:5: rules[0].mach: unknown key "mach" (did you mean "match"?)`,
      `${F}:5:13: rules[0].action: expected one of "allow", "deny", "confirm", got "Deny" (did you mean "deny"?)`,
      `${F}:6:20: rules[1].match.tool: invalid glob "[a": unterminated "[" at character 1 (write "\\[" for a literal bracket)`,
      `${F}:6:39: rules[1].match.server[1]: expected a string, got a number (3); put it in quotes to make it a string`,
      `${F}:6:58: rules[1].match.annotations.destructive: unknown key "destructive" (did you mean "destructiveHint"?)`,
      `${F}:8:13: rules[1].reason: must not be empty`,
      `${F}:9:20: rules[2].match.tool: must not be an empty list`,
      `${F}:9:34: rules[2].match.trusted: expected true or false, got a string`,
      `${F}:9:52: rules[2].match.arguments: expected a mapping, got a list`,
      `${F}:10:13: rules[2].action: expected one of "allow", "deny", "confirm", got "block"`,
    ]);
  });

  it('reports argument schemas that would not work, at the keyword', () => {
    expect(
      issuesOf(
        yaml(
          'rules:',
          '  - match:',
          '      arguments:',
          '        propertis: { path: { type: string } }',
          '        properties:',
          '          path: { type: strng, pattern: "(", format: emial }',
          '          name: { pattern: "^(a+)+$", minLength: -1 }',
          '        patternProperties: { "[": {} }',
          '        $async: true',
          '    action: deny',
          '  - match: { arguments: { $ref: "https://example.com/schema.json" } }',
          '    action: deny',
          '  - match: { arguments: { $ref: "#/$defs/missing" } }',
          '    action: deny',
          '  - match: { arguments: { $schema: "http://json-schema.org/draft-04/schema#" } }',
          '    action: deny',
          '  - match: { arguments: { $schema: "http://json-schema.org/draft-07/schema#", prefixItems: [] } }',
          '    action: deny',
        ),
      ),
    ).toEqual([
      `${F}:4:9: rules[0].match.arguments.propertis: unknown JSON Schema keyword "propertis" (did you mean "properties"?)`,
      `${F}:6:25: rules[0].match.arguments.properties.path.type: expected one of "array", "boolean", "integer", "null", "number", "object", "string", got "strng" (did you mean "string"?)`,
      `${F}:6:41: rules[0].match.arguments.properties.path.pattern: not a valid regular expression (JavaScript, with the "u" flag): Unterminated group`,
      `${F}:6:54: rules[0].match.arguments.properties.path.format: unknown format "emial"; known formats are: date, time, date-time, iso-time, iso-date-time, duration, uri, uri-reference, uri-template, url, email, hostname, ipv4, ipv6, regex, uuid, json-pointer, json-pointer-uri-fragment, relative-json-pointer, byte, int32, int64, float, double, password, binary`,
      `${F}:7:28: rules[0].match.arguments.properties.name.pattern: pattern "^(a+)+$" is refused: it repeats a group that itself contains a quantifier or overlapping alternatives (catastrophic backtracking); the model controls the text it runs on`,
      `${F}:8:30: rules[0].match.arguments.patternProperties["["]: not a valid regular expression (JavaScript, with the "u" flag): Unterminated character class`,
      `${F}:9:9: rules[0].match.arguments.$async: "$async" is not supported in policy conditions`,
      `${F}:11:14: rules[1].match.arguments: the arguments schema cannot be used: it refers to "https://example.com/schema.json", outside the schema (only local "#..." references are followed)`,
      `${F}:13:14: rules[2].match.arguments: invalid JSON Schema: can't resolve reference #/$defs/missing from id #`,
      `${F}:15:36: rules[3].match.arguments.$schema: unsupported $schema: use "https://json-schema.org/draft/2020-12/schema" (the default), "https://json-schema.org/draft/2019-09/schema" or "http://json-schema.org/draft-07/schema#"`,
      `${F}:17:79: rules[4].match.arguments.prefixItems: unknown JSON Schema keyword "prefixItems"`,
    ]);
  });

  it('reports a meta-schema problem once the keywords are right', () => {
    expect(
      issuesOf(
        yaml(
          'rules:',
          '  - match: { arguments: { properties: { n: { minLength: -1 } } } }',
          '    action: deny',
        ),
      ),
    ).toEqual([`${F}:2:57: rules[0].match.arguments.properties.n.minLength: must be at least 0, got -1`]);
  });

  it('refuses rule ids used twice in one file', () => {
    expect(
      issuesOf(
        yaml(
          'rules:',
          '  - { id: a, match: {}, action: allow }',
          '  - { id: b, match: {}, action: allow }',
          '  - { id: a, match: {}, action: deny }',
        ),
      ),
    ).toEqual([
      `${F}:4:11: rules[2].id: rule id "a" is already used by the rule at line 2; rule ids must be unique`,
    ]);
  });

  it('refuses an empty file, a list, a scalar, and a mapping with neither key', () => {
    expect(issuesOf('')).toEqual([
      `${F}:1:1: policy file is empty; it needs "default", "rules", "labels" or "guardrails"`,
    ]);
    expect(issuesOf('# only a comment\n')).toEqual([
      `${F}:1:1: policy file is empty; it needs "default", "rules", "labels" or "guardrails"`,
    ]);
    expect(issuesOf('- deny\n')).toEqual([
      `${F}:1:1: expected a mapping at the top level (with "default" and "rules" keys), got a list`,
    ]);
    expect(issuesOf('deny\n')).toEqual([
      `${F}:1:1: expected a mapping at the top level (with "default" and "rules" keys), got a string`,
    ]);
    expect(issuesOf('$schema: ../schema/policy.schema.json\n')).toEqual([
      `${F}:1:1: a policy file needs "default", "rules", "labels" or "guardrails"`,
    ]);
  });

  it('stops at YAML syntax errors, duplicate keys and second documents', () => {
    expect(issuesOf('default: deny\ndefault: allow\n')).toEqual([
      `${F}:2:1: default: duplicate key "default"`,
    ]);
    expect(issuesOf('default: deny\n---\ndefault: allow\n')).toEqual([
      `${F}:2:1: invalid YAML: the file holds more than one YAML document (a second "---"); a policy file must hold exactly one`,
    ]);
    expect(issuesOf('rules: [\n')).toEqual([
      expect.stringMatching(new RegExp(`^${F.replaceAll('/', '\\/')}:2:1: invalid YAML: `)),
    ]);
  });

  it('never yields an allow-all: an invalid file throws, whatever else is in it', () => {
    expect(() => parsePolicyText('default: allow\nrules:\n  - { match: {}, action: nope }\n', FILE)).toThrow(
      ConfigError,
    );
  });
});

describe('loadPolicies', () => {
  let dir: string;
  const at = (name: string): string => path.join(dir, name);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'warden-policy-'));
    await writeFile(
      at('org.yaml'),
      yaml('default: deny', 'rules:', '  - id: shared', '    match: {}', '    action: deny'),
    );
    await writeFile(at('user.yaml'), yaml('rules:', '  - { match: { tool: a }, action: allow }'));
    await writeFile(at('clash.yaml'), yaml('rules:', '  - match: {}', '    id: shared', '    action: allow'));
    await writeFile(at('bad.yaml'), yaml('default: maybe'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads files in the order given, with absolute paths', async () => {
    const set = await loadPolicies([at('org.yaml'), path.relative(process.cwd(), at('user.yaml'))]);
    expect(set.files.map((file) => file.file)).toEqual([at('org.yaml'), at('user.yaml')]);
    expect(set.files[1]?.rules[0]?.id).toBe('user.yaml#1');
    expect(Object.isFrozen(set.files)).toBe(true);
  });

  it('loads nothing from no files', async () => {
    expect(await loadPolicies([])).toEqual({ files: [] });
  });

  it('reports a missing file by name, with the problems of the other files', async () => {
    expect(await loadIssues([at('missing.yaml'), at('bad.yaml'), at('org.yaml')])).toEqual([
      `${at('missing.yaml')}: cannot read policy file: ENOENT: no such file or directory`,
      `${at('bad.yaml')}:1:10: default: expected one of "allow", "deny", "confirm", got "maybe"`,
    ]);
  });

  it('refuses a rule id used in two files, naming the first', async () => {
    expect(await loadIssues([at('org.yaml'), at('clash.yaml')])).toEqual([
      `${at('clash.yaml')}:2:5: rules[0]: rule id "shared" is already used by the rule at ${at('org.yaml')}:3; rule ids must be unique across all policy files`,
    ]);
  });

  it('refuses a file listed twice', async () => {
    expect(await loadIssues([at('user.yaml'), at('org.yaml'), at('user.yaml')])).toEqual([
      `${at('user.yaml')}: policy file listed more than once`,
    ]);
  });
});

describe('schema/policy.schema.json', () => {
  it('is found from src/features/policy/ and dist/features/policy/ alike, and the package ships it', async () => {
    expect(POLICY_SCHEMA_URL.pathname.endsWith('/schema/policy.schema.json')).toBe(true);
    expect(
      new URL(
        '../../../schema/policy.schema.json',
        new URL('dist/features/policy/x.js', `file://${process.cwd()}/`),
      ).pathname,
    ).toBe(path.join(process.cwd(), 'schema/policy.schema.json'));
    const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as {
      files: string[];
    };
    expect(pkg.files).toEqual(expect.arrayContaining(['schema', 'policies']));
  });

  it('declares draft-07 and an $id, and compiles in strict mode', () => {
    expect(policySchema['$schema']).toBe('http://json-schema.org/draft-07/schema#');
    expect(policySchema['$id']).toBe('urn:mcp-warden:schema:policy');
    expect(() => createDocumentAjv().compile(policySchema)).not.toThrow();
  });

  it('gives every property and definition a title and a description, for editor help', () => {
    const missing: string[] = [];
    const visit = (node: unknown, where: string, named: boolean): void => {
      if (Array.isArray(node)) {
        node.forEach((item, index) => visit(item, `${where}/${index}`, false));
        return;
      }
      if (typeof node !== 'object' || node === null) return;
      const record = node as Record<string, unknown>;
      if (named && (typeof record['title'] !== 'string' || typeof record['description'] !== 'string')) {
        missing.push(where);
      }
      for (const [key, child] of Object.entries(record)) {
        if (key === 'properties' || key === 'definitions') {
          for (const [name, schema] of Object.entries(child as Record<string, unknown>)) {
            visit(schema, `${where}/${key}/${name}`, true);
          }
        } else if (key !== 'enum') {
          visit(child, `${where}/${key}`, key === 'items');
        }
      }
    };
    visit(policySchema, '#', true);
    expect(missing).toEqual([]);
  });
});
