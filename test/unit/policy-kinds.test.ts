/**
 * Rules about every kind of request: tool calls, prompts, resources, completions, and the
 * requests servers make of the host. A rule that names only a server matches all of them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createPolicyEngine,
  type PolicyCallInput,
  type PolicyEngine,
} from '../../src/features/policy/engine.js';
import { combinePolicyFiles, parsePolicyText } from '../../src/features/policy/loadPolicies.js';
import { normalizeResourceUri } from '../../src/features/policy/resourceUri.js';

function engineOf(text: string, name = 'kinds.yaml'): PolicyEngine {
  return createPolicyEngine(combinePolicyFiles([parsePolicyText(text, `/p/${name}`)]));
}

const base = { trusted: false, arguments: undefined } as const;
const tool = (server: string, name: string): PolicyCallInput => ({
  ...base,
  server,
  tool: name,
  annotations: undefined,
});
const prompt = (server: string, name: string): PolicyCallInput => ({
  ...base,
  kind: 'prompt',
  server,
  prompt: name,
});
const resource = (server: string, uri: string): PolicyCallInput => ({
  ...base,
  kind: 'resource',
  server,
  resource: normalizeResourceUri(uri),
});
const other = (kind: 'sampling' | 'elicitation' | 'roots', server: string): PolicyCallInput => ({
  ...base,
  kind,
  server,
});

const decide = (engine: PolicyEngine, input: PolicyCallInput) => {
  const d = engine.decide(input);
  return [d.effect, d.ruleId];
};

describe('rules for every kind of request', () => {
  const engine = engineOf(`
default: allow
rules:
  - id: no-ssh-resources
    match: { resource: 'file:///home/*/.ssh/*' }
    action: deny
  - id: no-secret-prompts
    match: { server: vault, prompt: 'secret*' }
    action: deny
  - id: confirm-sampling
    match: { kind: sampling }
    action: confirm
  - id: shut-out
    match: { server: banned }
    action: deny
`);

  it('a rule that names only a server matches every kind of its requests', () => {
    expect(decide(engine, tool('banned', 'x'))).toEqual(['deny', 'shut-out']);
    expect(decide(engine, prompt('banned', 'p'))).toEqual(['deny', 'shut-out']);
    expect(decide(engine, resource('banned', 'mem://a'))).toEqual(['deny', 'shut-out']);
    expect(decide(engine, other('elicitation', 'banned'))).toEqual(['deny', 'shut-out']);
    expect(decide(engine, other('roots', 'banned'))).toEqual(['deny', 'shut-out']);
  });

  it('a rule that names a kind, a prompt or a resource matches only those requests', () => {
    expect(decide(engine, other('sampling', 'any'))).toEqual(['confirm', 'confirm-sampling']);
    expect(decide(engine, other('elicitation', 'any'))).toEqual(['allow', null]);
    expect(decide(engine, prompt('vault', 'secret-keys'))).toEqual(['deny', 'no-secret-prompts']);
    expect(decide(engine, tool('vault', 'secret-keys'))).toEqual(['allow', null]);
    expect(decide(engine, prompt('other', 'secret-keys'))).toEqual(['allow', null]);
  });

  it.each([
    'file:///home/ada/.ssh/id_rsa',
    'FILE:///home/ada/.ssh/id_rsa',
    'file://localhost/home/ada/.ssh/id_rsa',
    'file:///home/ada//.ssh/./id_rsa',
    'file:///home/ada/notes/../.ssh/id_rsa',
    'file:///home/ada/%2Essh/id_rsa',
    'file:///tmp/../home/ada/.ssh/id_rsa',
    'file:/home/ada/.ssh/id_rsa',
    'file:home/ada/.ssh/id_rsa',
    'file:/home/ada/notes/../.ssh/id_rsa',
    'file:////home/ada/.ssh/id_rsa',
    'file://LOCALHOST/home/ada/.ssh/id_rsa',
    'file://localhost./home/ada/.ssh/id_rsa',
    'file://%6Cocalhost/home/ada/.ssh/id_rsa',
    'File:/home/ada/%2e%2e/ada/.ssh/id%5Frsa',
    'file:///home/ada/.ssh/./keys/../id_rsa',
  ])('matches resource URIs after normalising them: %s', (uri) => {
    expect(decide(engine, resource('fs', uri))).toEqual(['deny', 'no-ssh-resources']);
  });

  it('writes every spelling of one file as the same URI', () => {
    const one = normalizeResourceUri('file:///etc/passwd');
    for (const spelling of [
      'file:/etc/passwd',
      'file:etc/passwd',
      'file://localhost/etc/passwd',
      'FILE://LocalHost./etc/passwd',
      'file:///etc/./passwd',
      'file:///tmp/../etc/passwd',
      'file:/etc//%70asswd',
    ])
      expect(normalizeResourceUri(spelling), spelling).toBe(one);
    // A rule written in a short form means the same file as well.
    expect(normalizeResourceUri('file:/etc/*')).toBe('file:///etc/*');
    // A file on another host stays another host's.
    expect(normalizeResourceUri('file://fileserver./etc/passwd')).toBe('file://fileserver/etc/passwd');
  });

  it('explains a kind that does not match', () => {
    const trace = engine.explain(other('elicitation', 'any')).trace;
    expect(trace.find((t) => t.ruleId === 'confirm-sampling')?.why).toBe(
      'a elicitation request; the rule is about sampling',
    );
  });
});

describe('lists leave out what is denied whatever the request', () => {
  const engine = engineOf(`
default: allow
rules:
  - id: no-admin-prompts
    match: { prompt: 'admin-*' }
    action: deny
  - id: no-private
    match: { resource: 'mem://private/*' }
    action: deny
  - id: nothing-of-x
    match: { server: x }
    action: deny
`);

  it('hides prompts and resources a rule always denies, and every item of a denied server', () => {
    expect(
      engine.isHiddenFromList({ kind: 'prompt', server: 'a', prompt: 'admin-reset', trusted: false }),
    ).toBe(true);
    expect(engine.isHiddenFromList({ kind: 'prompt', server: 'a', prompt: 'help', trusted: false })).toBe(
      false,
    );
    expect(
      engine.isHiddenFromList({ kind: 'resource', server: 'a', resource: 'mem://private/k', trusted: false }),
    ).toBe(true);
    expect(
      engine.isHiddenFromList({ kind: 'resource', server: 'a', resource: 'mem://public', trusted: false }),
    ).toBe(false);
    expect(engine.isHiddenFromList({ kind: 'resource', server: 'x', trusted: false })).toBe(true);
  });

  it('never hides a template for a resource glob, which names only some of its URIs', () => {
    expect(engine.isHiddenFromList({ kind: 'resource', server: 'a', trusted: false })).toBe(false);
  });
});

describe('policies/locked-down-org.yaml, beyond tool calls', () => {
  const file = path.resolve(import.meta.dirname, '../../policies/locked-down-org.yaml');
  const engine = createPolicyEngine(combinePolicyFiles([parsePolicyText(readFileSync(file, 'utf8'), file)]));

  it("allows the approved servers' prompts, resources and roots, and nothing of any other server", () => {
    expect(decide(engine, resource('fs', 'file:///srv/shared/a.md'))).toEqual([
      'allow',
      'approved-server-reads',
    ]);
    expect(decide(engine, prompt('memory', 'p'))).toEqual(['allow', 'approved-server-reads']);
    expect(decide(engine, other('roots', 'fs'))).toEqual(['allow', 'approved-server-reads']);
    expect(decide(engine, resource('everything', 'demo://resource/static/document/a'))).toEqual([
      'deny',
      'not-approved',
    ]);
    expect(decide(engine, prompt('everything', 'simple-prompt'))).toEqual(['deny', 'not-approved']);
    expect(decide(engine, other('sampling', 'fs'))).toEqual(['deny', 'not-approved']);
    expect(decide(engine, other('elicitation', 'everything'))).toEqual(['deny', 'not-approved']);
  });
});

describe('kind: authorize', () => {
  const authorize = (server: string): PolicyCallInput => ({ ...base, kind: 'authorize', server });

  it('is a sign-in to a server: a rule of that kind decides it and no tool call', () => {
    const engine = engineOf(
      'default: allow\nrules:\n  - id: no-sign-in\n    match: { server: linear, kind: authorize }\n    action: deny\n',
    );
    expect(decide(engine, authorize('linear'))).toEqual(['deny', 'no-sign-in']);
    expect(decide(engine, authorize('github'))).toEqual(['allow', null]);
    expect(decide(engine, tool('linear', 'authorize'))).toEqual(['allow', null]);
  });

  it('is matched by a rule that names only the server, as every kind is', () => {
    const engine = engineOf('rules:\n  - id: shut\n    match: { server: linear }\n    action: deny\n');
    expect(decide(engine, authorize('linear'))).toEqual(['deny', 'shut']);
  });
});
