/**
 * The `paths` condition: arguments are judged as the server will act on them, so every spelling
 * of a path inside a folder matches, and a path that cannot be judged is unverifiable (denied).
 */
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ETC_SPELLINGS } from './pathTricks.js';
import { describe, expect, it } from 'vitest';
import { createPolicyEngine } from '../../src/features/policy/engine.js';
import { combinePolicyFiles, parsePolicyText } from '../../src/features/policy/loadPolicies.js';
import { compilePathCondition, normalisePath, PATH_LIMITS } from '../../src/features/policy/paths.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'warden-paths-'));
const home = path.join(tmp, 'home');
mkdirSync(path.join(home, '.ssh'), { recursive: true });
writeFileSync(path.join(home, '.ssh', 'id_rsa'), 'secret');
mkdirSync(path.join(home, 'notes'));
symlinkSync(path.join(home, '.ssh'), path.join(home, 'keys'));
symlinkSync('/etc', path.join(tmp, 'etc-link'));
symlinkSync(path.join(tmp, 'loop-b'), path.join(tmp, 'loop-a'));
symlinkSync(path.join(tmp, 'loop-a'), path.join(tmp, 'loop-b'));

const etc = compilePathCondition(
  { under: ['/etc'], includingAncestors: false, pathArguments: null, every: false },
  { homedir: home },
);
const ssh = compilePathCondition(
  { under: ['~/.ssh'], includingAncestors: false, pathArguments: null, every: false },
  { homedir: home },
);

describe('the paths condition on /etc', () => {
  const matches: [string, Record<string, unknown>][] = [
    ['repeated slashes', { path: '//etc/passwd' }],
    ['a dot', { path: '/./etc/passwd' }],
    ['a dot-dot', { path: '/tmp/../etc/passwd' }],
    ['the folder itself', { path: '/etc' }],
    ['the folder with a trailing slash', { path: '/etc/' }],
    ['a file URI', { path: 'file:///etc/passwd' }],
    ['a file URI with localhost', { path: 'file://localhost/etc/passwd' }],
    ['a percent-encoded file URI', { path: 'file:///%65tc/pass%77d' }],
    ['a string in an array', { path: ['/etc/passwd'] }],
    ['a path among others', { paths: ['/tmp/a', '/etc/shadow'] }],
    ['a nested object', { options: { targets: [{ where: '/etc/hosts' }] } }],
    ['a path-like value in any property', { q: '/etc/passwd' }],
    ['a symlink into /etc', { path: path.join(tmp, 'etc-link', 'passwd') }],
    [
      'a symlink into /etc, then a file that does not exist',
      { path: path.join(tmp, 'etc-link', 'no', 'such') },
    ],
  ];
  it.each(matches)('matches %s', (_what, args) => {
    expect(etc.test(args).kind).toBe('match');
  });

  const mismatches: [string, Record<string, unknown>][] = [
    ['a sibling with the same prefix', { path: '/etcetera/passwd' }],
    ['another folder', { path: '/tmp/etc/passwd' }],
    ['no path at all', { count: 3, name: 'etc' }],
    ['text with line breaks', { content: '/etc/passwd\nis a file' }],
  ];
  it.each(mismatches)('does not match %s', (_what, args) => {
    expect(etc.test(args).kind).toBe('mismatch');
  });

  it('names the path and the folder when it matches', () => {
    expect(etc.test({ path: '/tmp/../etc/passwd' })).toEqual({
      kind: 'match',
      why: 'path "/tmp/../etc/passwd" is in "/etc", under "/etc"',
    });
  });
});

describe('the paths condition on ~/.ssh', () => {
  it('expands ~ and ~/', () => {
    expect(ssh.test({ path: '~/.ssh/id_rsa' }).kind).toBe('match');
    expect(ssh.test({ path: '~/.ssh' }).kind).toBe('match');
    expect(ssh.test({ path: '~/notes/a.md' }).kind).toBe('mismatch');
    expect(normalisePath('~', { homedir: home })).toEqual({ kind: 'ok', forms: [home] });
  });

  it('follows a symlink to the folder, whether or not the file exists', () => {
    expect(ssh.test({ path: path.join(home, 'keys', 'id_rsa') }).kind).toBe('match');
    expect(ssh.test({ path: '~/keys/not-yet' }).kind).toBe('match');
    expect(ssh.test({ path: '~/keys' }).kind).toBe('match');
  });

  it('matches a folder written as a symlink by its target too', () => {
    const byLink = compilePathCondition(
      { under: ['~/keys'], includingAncestors: false, pathArguments: null, every: false },
      { homedir: home },
    );
    expect(byLink.test({ path: '~/.ssh/id_rsa' }).kind).toBe('match');
  });

  it('resolves a relative path against every base it may be resolved against', () => {
    const relative = compilePathCondition(
      { under: ['~/.ssh'], includingAncestors: false, pathArguments: null, every: false },
      { homedir: home, relativeTo: [tmp, home] },
    );
    expect(relative.test({ path: '.ssh/id_rsa' }).kind).toBe('match');
    expect(relative.test({ path: 'notes/a.md' }).kind).toBe('mismatch');
  });

  it('with includingAncestors, also matches a folder that contains it', () => {
    const tree = compilePathCondition(
      { under: ['~/.ssh'], includingAncestors: true, pathArguments: null, every: false },
      { homedir: home },
    );
    expect(tree.test({ path: '~' }).kind).toBe('match');
    expect(tree.test({ path: '/' }).kind).toBe('match');
    expect(tree.test({ path: '~/notes' }).kind).toBe('mismatch');
    expect(ssh.test({ path: '~' }).kind).toBe('mismatch');
  });

  it('with pathArguments, looks only at the named properties, at any depth', () => {
    const named = compilePathCondition(
      { under: ['~/.ssh'], includingAncestors: false, pathArguments: ['source'], every: false },
      { homedir: home },
    );
    expect(named.test({ moves: [{ source: '/tmp/x' }] }).kind).toBe('mismatch');
    expect(named.test({ moves: [{ source: '~/.ssh/id_rsa' }] }).kind).toBe('match');
    expect(named.test({ other: '~/.ssh/id_rsa' }).kind).toBe('mismatch');
  });

  it('with every, matches only when each path lands in the folder by every reading of it', () => {
    const shared = path.join(tmp, 'shared');
    mkdirSync(path.join(shared, 'docs'), { recursive: true });
    symlinkSync('/etc', path.join(shared, 'out'));
    symlinkSync(path.join(shared, 'docs'), path.join(tmp, 'docs-link'));
    const inside = compilePathCondition(
      { under: [shared], includingAncestors: false, pathArguments: null, every: true },
      { homedir: home, relativeTo: [tmp, home] },
    );
    const kind = (args: Record<string, unknown>) => inside.test(args).kind;
    expect(kind({ path: path.join(shared, 'docs', 'plan.md') })).toBe('match');
    expect(kind({ path: `${shared}//docs/./new/../plan.md` })).toBe('match');
    expect(kind({ paths: [path.join(shared, 'a'), path.join(shared, 'b')] })).toBe('match');
    // A link from outside into the folder is not in it as written: it errs towards not granting.
    expect(kind({ path: path.join(tmp, 'docs-link', 'plan.md') })).toBe('mismatch');
    // Out by dot-dot, through a symlink in the folder, or with one path of two outside.
    expect(kind({ path: `${shared}/../../etc/cron.d/evil` })).toBe('mismatch');
    expect(kind({ path: path.join(shared, 'out', 'cron.d', 'evil') })).toBe('mismatch');
    expect(kind({ path: `${shared}/docs/../out/passwd` })).toBe('mismatch');
    expect(kind({ source: path.join(shared, 'a'), destination: '/tmp/a' })).toBe('mismatch');
    // A relative path is resolved against every base, and is not inside under all of them.
    expect(kind({ path: 'shared/a' })).toBe('mismatch');
    expect(kind({ count: 1 })).toBe('mismatch');
    expect(inside.test({ path: path.join(shared, 'out', 'x') })).toMatchObject({
      why: expect.stringContaining('(as "/etc/x")'),
    });
    // Without every, one reading in the folder is enough: right for a deny, wrong for a grant.
    const any = compilePathCondition(
      { under: [shared], includingAncestors: false, pathArguments: null, every: false },
      { homedir: home },
    );
    expect(any.test({ path: path.join(shared, 'out', 'cron.d', 'evil') }).kind).toBe('match');
  });

  it('compares without case when asked to (case-insensitive filesystems)', () => {
    const folded = compilePathCondition(
      { under: ['~/.ssh'], includingAncestors: false, pathArguments: null, every: false },
      { homedir: home, caseInsensitive: true },
    );
    expect(folded.test({ path: '~/.SSH/id_rsa' }).kind).toBe('match');
    expect(ssh.test({ path: '~/.SSH/id_rsa' }).kind).toBe('mismatch');
  });
});

describe('fail closed: a path that cannot be judged is unverifiable, never a mismatch', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['a symlink loop', { path: path.join(tmp, 'loop-a', 'x') }],
    ['a path of 5000 characters', { path: `/tmp/${'a'.repeat(5000)}` }],
    ['a file URI naming another host', { path: 'file://elsewhere/etc/passwd' }],
    [
      'too many paths',
      { paths: Array.from({ length: PATH_LIMITS.maxPathArguments + 1 }, (_, i) => `/tmp/${i}`) },
    ],
    [
      'too deep nesting',
      {
        path: Array.from({ length: PATH_LIMITS.maxDepth + 1 }).reduce<unknown>((inner) => [inner], '/tmp/x'),
      },
    ],
  ];
  it.each(cases)('%s', (_what, args) => {
    expect(ssh.test(args).kind).toBe('unverifiable');
    expect(etc.test(args).kind).toBe('unverifiable');
  });

  it.skipIf(process.getuid?.() === 0)('a folder that may not be read', () => {
    const locked = path.join(tmp, 'locked');
    mkdirSync(path.join(locked, 'inner'), { recursive: true });
    symlinkSync('/etc', path.join(locked, 'inner', 'link'));
    chmodSync(locked, 0o000);
    try {
      expect(etc.test({ path: path.join(locked, 'inner', 'link', 'passwd') }).kind).toBe('unverifiable');
    } finally {
      chmodSync(locked, 0o700);
    }
  });
});

describe('paths in a policy file', () => {
  it('denies through the engine, naming the rule, and never hides the tool', () => {
    const file = parsePolicyText(
      [
        'rules:',
        '  - id: no-etc',
        '    match: { server: fs, paths: { under: [/etc] } }',
        '    action: deny',
        '  - match: {}',
        '    action: allow',
      ].join('\n'),
      'p.yaml',
    );
    const engine = createPolicyEngine(combinePolicyFiles([file]));
    const call = (args: Record<string, unknown>) => ({
      server: 'fs',
      tool: 'read_text_file',
      annotations: undefined,
      trusted: false,
      arguments: args,
    });
    for (const trick of ETC_SPELLINGS) {
      expect(engine.decide(call({ path: trick })).ruleId).toBe('no-etc');
      expect(engine.explain(call({ path: trick })).decision.effect).toBe('deny');
    }
    expect(engine.decide(call({ path: path.join(tmp, 'etc-link', 'passwd') })).effect).toBe('deny');
    expect(engine.decide(call({ path: '/tmp/x' })).effect).toBe('allow');
    const loop = engine.decide(call({ path: path.join(tmp, 'loop-a') }));
    expect([loop.effect, loop.ruleId]).toEqual(['deny', 'no-etc']);
    expect(loop.reason).toContain('ELOOP');
    expect(engine.isHiddenFromList(call({}))).toBe(false);
    const trace = engine.explain(call({ path: '/etc/passwd' })).trace;
    expect(trace[0]?.why).toContain('path "/etc/passwd" is in "/etc"');
  });

  it('reports a relative folder and unknown keys with their place', () => {
    const text = [
      'rules:',
      '  - match:',
      '      paths:',
      '        under: [.ssh, /ok]',
      '        includingParents: true',
      '    action: deny',
    ].join('\n');
    expect(() => parsePolicyText(text, 'p.yaml')).toThrowError(
      /p\.yaml:4:17: rules\[0\]\.match\.paths\.under\[0\]: folder ".ssh" is relative/,
    );
    expect(() => parsePolicyText(text, 'p.yaml')).toThrowError(/includingParents/);
  });
});
