/**
 * `guardrails:` and a server's `guardrails:`: defaults filled in, and what the schema cannot say
 * (category names, globs, regular expressions, a pattern named like a category) reported as
 * file:line errors.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { thrownIssues } from './configIssues.js';

const DIR = path.resolve('/srv/warden');
const FILE = path.join(DIR, 'proxy.config.yaml');
const parse = (text: string) => parseConfigText(text, { file: FILE, env: {} }).config;
const issuesOf = (text: string) => thrownIssues(() => parse(text));

describe('guardrails config', () => {
  it('is absent without the section, and fills the defaults with it', () => {
    expect(parse('servers:\n  a: { command: x }\n').guardrails).toBeUndefined();
    expect(parse('guardrails: {}\nservers:\n  a: { command: x }\n').guardrails).toEqual({
      secrets: 'redact',
      pii: 'audit',
      categories: {},
      patterns: [],
    });
  });

  it('reads categories, patterns and per-server and per-tool overrides', () => {
    const config = parse(
      [
        'guardrails:',
        '  pii: off',
        '  categories: { jwt: block, ticket-token: audit }',
        '  patterns:',
        "    - { name: ticket-token, regex: '/tkt_[a-z0-9]{24}/i' }",
        'servers:',
        '  crm:',
        '    command: x',
        '    guardrails:',
        '      pii: redact',
        "      tools: { 'export_*': { secrets: block, categories: { email: off } } }",
        '',
      ].join('\n'),
    );
    expect(config.guardrails).toEqual({
      secrets: 'redact',
      pii: 'off',
      categories: { jwt: 'block', 'ticket-token': 'audit' },
      patterns: [{ name: 'ticket-token', regex: 'tkt_[a-z0-9]{24}', flags: 'i' }],
    });
    expect(config.servers[0]?.guardrails).toEqual({
      pii: 'redact',
      categories: {},
      tools: [{ glob: 'export_*', settings: { secrets: 'block', categories: { email: 'off' } } }],
    });
  });

  it('names the file, line and key of what it cannot use', () => {
    const issues = issuesOf(
      [
        'guardrails:',
        '  secrets: hide',
        '  categories: { github-tokens: block }',
        '  patterns:',
        "    - { name: email, regex: 'x' }",
        "    - { name: mine, regex: '(unclosed' }",
        'servers:',
        '  a:',
        '    command: x',
        '    guardrails:',
        '      categories: { mine: block, emial: off }',
        "      tools: { 'a[': { secrets: off } }",
        '',
      ].join('\n'),
    );
    expect(issues.join('\n')).toMatch(/proxy\.config\.yaml:2:.*guardrails\.secrets/);
    expect(issues.join('\n')).toMatch(
      /proxy\.config\.yaml:3:.*unknown guardrail category "github-tokens" \(did you mean "github-token"\?\)/,
    );
    expect(issues.join('\n')).toMatch(/proxy\.config\.yaml:5:.*"email" is already a category/);
    expect(issues.join('\n')).toMatch(/proxy\.config\.yaml:6:.*not a valid JavaScript regular expression/);
    expect(issues.join('\n')).toMatch(/proxy\.config\.yaml:11:.*unknown guardrail category "emial"/);
    expect(issues.join('\n')).toMatch(/proxy\.config\.yaml:12:.*invalid glob/);
    // The user's own pattern name is a category a server may set (`mine` is not reported).
    expect(issues.join('\n')).not.toMatch(/"mine"/);
  });
});
