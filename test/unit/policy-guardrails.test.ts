/**
 * Guardrail actions set by policy files: how a `guardrails:` entry is read and checked, which
 * entries hold for a request, and how they combine with the config's settings.
 */
import { describe, expect, it } from 'vitest';
import { createPolicyEngine } from '../../src/features/policy/engine.js';
import { combinePolicyFiles, parsePolicyText } from '../../src/features/policy/loadPolicies.js';
import {
  configLevels,
  decideCategory,
  summarizeGuardrails,
  type GuardrailLevel,
} from '../../src/features/guardrails/feature.js';
import type { GuardrailsConfig } from '../../src/config/types.js';

const file = (name: string, ...lines: string[]) => parsePolicyText(`${lines.join('\n')}\n`, `/p/${name}`);

describe('guardrails entries in a policy file', () => {
  it('reads an entry with its id, match and settings', () => {
    const policy = file(
      'g.yaml',
      'guardrails:',
      '  - id: crm-exports',
      '    match: { server: crm, tool: "export_*" }',
      '    secrets: block',
      '    pii: redact',
      '    categories: { email: off }',
      '  - match: { kind: resource, resource: "notes://*" }',
      '    secrets: audit',
    );
    expect(policy.guardrails?.map((g) => [g.id, g.settings, g.source.line])).toEqual([
      ['crm-exports', { secrets: 'block', pii: 'redact', categories: { email: 'off' } }, 2],
      ['g.yaml#guardrails2', { secrets: 'audit', categories: {} }, 7],
    ]);
    expect(policy.rules).toEqual([]);
  });

  it('refuses an unknown category with a did-you-mean, a session condition, an entry that sets nothing', () => {
    expect(() =>
      file('g.yaml', 'guardrails:', '  - match: { server: crm }', '    categories: { aws-acess-key: off }'),
    ).toThrow(
      /g\.yaml:3:\d+: guardrails\[0\]\.categories\.aws-acess-key: unknown guardrail category "aws-acess-key" \(did you mean "aws-access-key"\?\)/,
    );
    expect(() =>
      file('g.yaml', 'guardrails:', '  - match: { session: { has: [private] } }', '    pii: block'),
    ).toThrow(
      /g\.yaml:2:\d+: guardrails\[0\]\.match\.session: a guardrails entry cannot have a session condition/,
    );
    expect(() => file('g.yaml', 'guardrails:', '  - match: { server: crm }')).toThrow(/guardrails\[0\]/);
    expect(() => file('g.yaml', 'guardrails:', '  - match: { server: crm }', '    secrets: hide')).toThrow(
      /guardrails\[0\]\.secrets/,
    );
  });
});

describe('which entries hold, and how they combine with the config', () => {
  const managed = file(
    'org.yaml',
    'guardrails:',
    '  - id: org-secrets',
    '    match: {}',
    '    secrets: redact',
  );
  const user = file(
    'mine.yaml',
    'guardrails:',
    '  - id: crm-pii',
    '    match: { server: crm }',
    '    pii: block',
    '    secrets: off',
    '  - id: reads',
    '    match: { server: crm, tool: read, arguments: { required: [id] } }',
    '    categories: { email: off }',
  );
  const set = { ...combinePolicyFiles([managed, user]), managedFiles: ['/p/org.yaml'] };
  const engine = createPolicyEngine(set);
  const call = (tool: string, args: Record<string, unknown> = {}) => ({
    server: 'crm',
    tool,
    annotations: undefined,
    trusted: false,
    arguments: args,
  });

  it('every entry whose match holds, managed first, with its layer', () => {
    expect(engine.guardrailsOf(call('read', { id: 1 })).map((f) => [f.rule.id, f.layer])).toEqual([
      ['org-secrets', 'managed'],
      ['crm-pii', 'user'],
      ['reads', 'user'],
    ]);
    expect(engine.guardrailsOf(call('read')).map((f) => f.rule.id)).toEqual(['org-secrets', 'crm-pii']);
    expect(engine.guarded).toBe(true);
    expect(createPolicyEngine(combinePolicyFiles([])).guarded).toBe(false);
  });

  const section: GuardrailsConfig = {
    secrets: 'block',
    pii: 'audit',
    categories: { 'private-key': 'block', email: 'redact' },
    patterns: [],
  };
  const levels = (found: ReturnType<typeof engine.guardrailsOf>): GuardrailLevel[] => [
    ...found.map((f) => ({ settings: f.rule.settings, from: f.rule.id })),
    ...configLevels(section, undefined, 'read'),
  ];

  it('a managed entry decides before a user entry and the config: a user policy cannot loosen it', () => {
    const read = levels(engine.guardrailsOf(call('read', { id: 1 })));
    expect(decideCategory(read, 'aws-access-key')).toEqual({ action: 'redact', from: 'org-secrets' });
    // The group setting of a more specific level beats a category setting of a later one.
    expect(decideCategory(read, 'private-key')).toEqual({ action: 'redact', from: 'org-secrets' });
  });

  it('policy entries decide before the config; what no entry names is the config’s', () => {
    const read = levels(engine.guardrailsOf(call('read', { id: 1 })));
    expect(decideCategory(read, 'phone')).toEqual({ action: 'block', from: 'crm-pii' });
    expect(decideCategory(read, 'email')).toEqual({ action: 'block', from: 'crm-pii' });
    const other = levels(engine.guardrailsOf({ ...call('x'), server: 'web' }));
    expect(decideCategory(other, 'phone')).toEqual({ action: 'audit', from: 'guardrails' });
    expect(decideCategory(other, 'email')).toEqual({ action: 'redact', from: 'guardrails' });
  });

  it('summarizes per group, with the categories decided elsewhere', () => {
    const other = levels(engine.guardrailsOf({ ...call('x'), server: 'web' }));
    expect(summarizeGuardrails(other)).toEqual({
      groups: [
        { group: 'secrets', action: 'redact', from: 'org-secrets' },
        { group: 'pii', action: 'audit', from: 'guardrails' },
      ],
      // private-key's own setting in the config is below the managed entry's `secrets`.
      categories: [{ category: 'email', action: 'redact', from: 'guardrails' }],
    });
  });
});
