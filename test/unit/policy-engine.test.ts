import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { readAnnotations } from '../../src/features/policy/annotations.js';
import {
  createPolicyEngine,
  type PolicyCallInput,
  type PolicyEngine,
} from '../../src/features/policy/engine.js';
import { combinePolicyFiles, parsePolicyText } from '../../src/features/policy/loadPolicies.js';
import type { Decision, Effect } from '../../src/features/policy/types.js';

/** An engine over policy files given as [name, text], in that order. */
function engineOf(...files: [string, string][]): PolicyEngine {
  return createPolicyEngine(
    combinePolicyFiles(files.map(([name, text]) => parsePolicyText(text, `/p/${name}`))),
  );
}

function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

function call(partial: Partial<PolicyCallInput> & { server: string; tool: string }): PolicyCallInput {
  return { annotations: undefined, trusted: false, arguments: undefined, ...partial };
}

/** [effect, ruleId] of a decision: the part the tables below check. */
function brief(decision: Decision): [Effect, string | null] {
  return [decision.effect, decision.ruleId];
}

const READ_ONLY: ToolAnnotations = { readOnlyHint: true };
const SAFE_WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false };

describe('decide: rule matching, as a decision table', () => {
  const engine = engineOf([
    'table.yaml',
    yaml(
      'default: confirm',
      'rules:',
      '  - id: fs-deletes',
      '    match: { server: "fs*", tool: "delete_*" }',
      '    action: deny',
      '    reason: No deleting.',
      '  - id: git-or-gh',
      '    match: { server: [git, "gh?"], tool: [status, "log*"] }',
      '    action: allow',
      '  - id: bracket',
      '    match: { tool: "[!a-m]*_x" }',
      '    action: allow',
      '  - id: trusted-read-only',
      '    match: { annotations: { readOnlyHint: true } }',
      '    action: allow',
      '  - id: trusted-safe-writes',
      '    match: { trusted: true, annotations: { readOnlyHint: false, destructiveHint: false } }',
      '    action: allow',
      '  - id: untrusted-open-world',
      '    match: { trusted: false, annotations: { openWorldHint: true } }',
      '    action: deny',
      '  - id: etc-writes',
      '    match:',
      '      tool: write_file',
      '      arguments: { required: [path], properties: { path: { pattern: "^/etc/" } } }',
      '    action: deny',
    ),
  ]);

  const table: [string, PolicyCallInput, Effect, string | null][] = [
    // Globs are anchored, on the server's config name and the tool's own name.
    ['glob on server and tool', call({ server: 'fs', tool: 'delete_file' }), 'deny', 'fs-deletes'],
    ['server glob with *', call({ server: 'fs-home', tool: 'delete_dir' }), 'deny', 'fs-deletes'],
    [
      'anchored: prefix does not match',
      call({ server: 'fs', tool: 'bulk_delete_x', trusted: true }),
      'confirm',
      null,
    ],
    [
      'anchored: server "xfs" is not "fs*"',
      call({ server: 'xfs', tool: 'delete_file', trusted: true }),
      'confirm',
      null,
    ],
    ['list of globs, first', call({ server: 'git', tool: 'status' }), 'allow', 'git-or-gh'],
    ['list of globs, ?', call({ server: 'gh2', tool: 'log_all' }), 'allow', 'git-or-gh'],
    [
      'list: server matches, tool does not',
      call({ server: 'gh2', tool: 'push', trusted: true }),
      'confirm',
      null,
    ],
    ['? is one character', call({ server: 'gh22', tool: 'status', trusted: true }), 'confirm', null],
    ['negated class', call({ server: 'x', tool: 'zz_x' }), 'allow', 'bracket'],
    ['negated class, excluded', call({ server: 'x', tool: 'aa_x', trusted: true }), 'confirm', null],
    // Annotations: believed from trusted servers only.
    [
      'trusted read-only',
      call({ server: 'x', tool: 't', trusted: true, annotations: READ_ONLY }),
      'allow',
      'trusted-read-only',
    ],
    [
      'untrusted read-only claim ignored',
      call({ server: 'x', tool: 't', trusted: false, annotations: READ_ONLY }),
      'deny',
      'untrusted-open-world',
    ],
    [
      'untrusted: even openWorldHint false is ignored',
      call({ server: 'x', tool: 't', annotations: { readOnlyHint: true, openWorldHint: false } }),
      'deny',
      'untrusted-open-world',
    ],
    [
      'trusted, additive write',
      call({ server: 'x', tool: 't', trusted: true, annotations: SAFE_WRITE }),
      'allow',
      'trusted-safe-writes',
    ],
    [
      'trusted, no annotations: spec defaults (destructive)',
      call({ server: 'x', tool: 't', trusted: true }),
      'confirm',
      null,
    ],
    [
      'trusted, destructive stated',
      call({ server: 'x', tool: 't', trusted: true, annotations: { destructiveHint: true } }),
      'confirm',
      null,
    ],
    [
      'trusted, non-boolean hint counts as absent',
      call({
        server: 'x',
        tool: 't',
        trusted: true,
        annotations: { readOnlyHint: 'yes' } as unknown as ToolAnnotations,
      }),
      'confirm',
      null,
    ],
    // Arguments: JSON Schema against the call's arguments, missing ones as {}.
    [
      'arguments match',
      call({ server: 'x', tool: 'write_file', trusted: true, arguments: { path: '/etc/passwd' } }),
      'deny',
      'etc-writes',
    ],
    [
      'arguments do not match',
      call({ server: 'x', tool: 'write_file', trusted: true, arguments: { path: '/home/me/x' } }),
      'confirm',
      null,
    ],
    [
      'required property missing',
      call({ server: 'x', tool: 'write_file', trusted: true, arguments: {} }),
      'confirm',
      null,
    ],
    [
      'no arguments at all: checked as {}',
      call({ server: 'x', tool: 'write_file', trusted: true }),
      'confirm',
      null,
    ],
  ];

  it.each(table)('%s', (_name, input, effect, ruleId) => {
    expect(brief(engine.decide(input))).toEqual([effect, ruleId]);
  });

  it("uses the rule's reason and source, or makes one up naming the rule", () => {
    expect(engine.decide(call({ server: 'fs', tool: 'delete_file' }))).toEqual({
      effect: 'deny',
      ruleId: 'fs-deletes',
      reason: 'No deleting.',
      source: { file: '/p/table.yaml', line: 3 },
    });
    expect(engine.decide(call({ server: 'git', tool: 'status' })).reason).toBe(
      'Allowed by policy rule "git-or-gh".',
    );
    // Shared between calls, so nobody may change them.
    expect(Object.isFrozen(engine.decide(call({ server: 'git', tool: 'status' })))).toBe(true);
    expect(Object.isFrozen(engine.decide(call({ server: 'x', tool: 't', trusted: true })))).toBe(true);
    expect(engine.decide(call({ server: 'x', tool: 'a' })).reason).toBe(
      'Denied by policy rule "untrusted-open-world".',
    );
  });

  it('names the file that set the default', () => {
    expect(engine.decide(call({ server: 'x', tool: 't', trusted: true }))).toEqual({
      effect: 'confirm',
      ruleId: null,
      reason:
        "No policy rule matches this call; the default set in table.yaml is to ask for the user's confirmation.",
      source: { file: '/p/table.yaml', line: 1 },
    });
  });
});

describe('decide: first match, defaults and several files', () => {
  const org = yaml(
    'default: deny',
    'rules:',
    '  - id: org-no-shell',
    '    match: { tool: "*shell*" }',
    '    action: deny',
    '  - match: { server: approved }',
    '    action: allow',
  );
  const user = yaml(
    'default: allow # ignored: the org file states a default first',
    'rules:',
    '  - id: user-shell',
    '    match: { tool: run_shell }',
    '    action: allow',
    '  - match: { server: mine }',
    '    action: confirm',
  );

  it('tries the files in the order listed, as one list: the first matching rule decides', () => {
    const engine = engineOf(['org.yaml', org], ['user.yaml', user]);
    // The user's allow comes after the org's deny.
    expect(brief(engine.decide(call({ server: 'mine', tool: 'run_shell' })))).toEqual([
      'deny',
      'org-no-shell',
    ]);
    expect(brief(engine.decide(call({ server: 'approved', tool: 'x' })))).toEqual(['allow', 'org.yaml#2']);
    expect(brief(engine.decide(call({ server: 'mine', tool: 'x' })))).toEqual(['confirm', 'user.yaml#2']);
    // The first file that states a default sets it.
    expect(engine.decide(call({ server: 'other', tool: 'x' }))).toMatchObject({
      effect: 'deny',
      ruleId: null,
      source: { file: '/p/org.yaml', line: 1 },
    });
  });

  it('in the other order, the user file decides first and sets the default', () => {
    const engine = engineOf(['user.yaml', user], ['org.yaml', org]);
    expect(brief(engine.decide(call({ server: 'mine', tool: 'run_shell' })))).toEqual([
      'allow',
      'user-shell',
    ]);
    expect(brief(engine.decide(call({ server: 'other', tool: 'x' })))).toEqual(['allow', null]);
  });

  it('takes the default from a later file when earlier ones state none', () => {
    const engine = engineOf(
      ['rules.yaml', yaml('rules:', '  - { match: { tool: a }, action: allow }')],
      ['d.yaml', 'default: deny\n'],
    );
    expect(engine.decide(call({ server: 's', tool: 'b' }))).toMatchObject({
      effect: 'deny',
      source: { file: '/p/d.yaml', line: 1 },
    });
  });

  it('allows when no file states a default, and says so', () => {
    const engine = engineOf(['r.yaml', yaml('rules:', '  - { match: { tool: a }, action: deny }')]);
    expect(engine.decide(call({ server: 's', tool: 'b' }))).toEqual({
      effect: 'allow',
      ruleId: null,
      reason: 'No policy rule matches this call and no policy file sets a default: allowed.',
      source: null,
    });
  });

  it('allows everything with no policy files at all', () => {
    const engine = createPolicyEngine({ files: [] });
    expect(engine.decide(call({ server: 's', tool: 'rm_rf' }))).toEqual({
      effect: 'allow',
      ruleId: null,
      reason: 'No policy files are configured: calls are allowed.',
      source: null,
    });
    expect(engine.isHiddenFromList(call({ server: 's', tool: 'rm_rf' }))).toBe(false);
  });

  it('requires every condition of a match to hold; an empty match holds for every call', () => {
    const engine = engineOf([
      'all.yaml',
      yaml(
        'default: allow',
        'rules:',
        '  - id: all-four',
        '    match:',
        '      server: fs',
        '      tool: write_*',
        '      trusted: true',
        '      annotations: { destructiveHint: true }',
        '      arguments: { required: [force] }',
        '    action: deny',
        '  - id: everything',
        '    match: {}',
        '    action: confirm',
      ),
    ]);
    const base = call({ server: 'fs', tool: 'write_file', trusted: true, arguments: { force: true } });
    expect(brief(engine.decide(base))).toEqual(['deny', 'all-four']);
    for (const changed of [
      { server: 'fs2' },
      { tool: 'read_file' },
      { trusted: false },
      { annotations: SAFE_WRITE },
      { arguments: { path: 'x' } },
    ]) {
      expect(brief(engine.decide({ ...base, ...changed })), JSON.stringify(changed)).toEqual([
        'confirm',
        'everything',
      ]);
    }
  });
});

describe('decide: argument conditions', () => {
  const engine = engineOf([
    'args.yaml',
    yaml(
      'rules:',
      '  - id: big-count',
      '    match:',
      '      arguments:',
      '        type: object',
      '        properties: { count: { type: integer, minimum: 100 }, mode: { enum: [fast, unsafe] } }',
      '        required: [count]',
      '    action: deny',
      '  - id: draft7-email',
      '    match:',
      '      arguments:',
      '        $schema: "http://json-schema.org/draft-07/schema#"',
      '        required: [to]',
      '        properties: { to: { format: email, pattern: "@example\\\\.com$" } }',
      '    action: confirm',
      '  - id: own-constructor',
      '    match:',
      '      arguments: { required: [constructor] }',
      '    action: deny',
      '  - id: content-secret',
      '    match:',
      '      tool: save',
      '      arguments: { required: [content], properties: { content: { pattern: "AKIA[0-9A-Z]{16}" } } }',
      '    action: deny',
    ),
  ]);
  const withArgs = (args: Record<string, unknown>, tool = 't'): [Effect, string | null] =>
    brief(engine.decide(call({ server: 's', tool, arguments: args })));

  it('validates the arguments as JSON Schema', () => {
    expect(withArgs({ count: 100 })).toEqual(['deny', 'big-count']);
    expect(withArgs({ count: 99 })).toEqual(['allow', null]);
    expect(withArgs({ count: 100.5 })).toEqual(['allow', null]);
    expect(withArgs({ count: 500, mode: 'slow' })).toEqual(['allow', null]);
    expect(withArgs({ count: 500, mode: 'unsafe' })).toEqual(['deny', 'big-count']);
    expect(withArgs({ to: 'a@example.com' })).toEqual(['confirm', 'draft7-email']);
    expect(withArgs({ to: 'not an email@example.com' })).toEqual(['allow', null]);
    expect(withArgs({ to: 'a@example.org' })).toEqual(['allow', null]);
  });

  it('does not let inherited properties satisfy "required"', () => {
    expect(withArgs({})).toEqual(['allow', null]);
    expect(withArgs({ constructor: 1 })).toEqual(['deny', 'own-constructor']);
  });

  it('runs patterns on long strings', () => {
    const content = `${'x'.repeat(5000)} AKIAABCDEFGHIJKLMNOP`;
    expect(withArgs({ content }, 'save')).toEqual(['deny', 'content-secret']);
    expect(withArgs({ content: 'x'.repeat(5000) }, 'save')).toEqual(['allow', null]);
  });

  it('denies, naming the rule, when the arguments cannot be checked safely', () => {
    // An unanchored pattern backtracks quadratically at worst; ten thousand characters exceed
    // the work budget of one check, so whether the rule applies is unknown.
    const decision = engine.decide(
      call({ server: 's', tool: 'save', arguments: { content: 'x'.repeat(10_000) } }),
    );
    expect(decision).toEqual({
      effect: 'deny',
      ruleId: 'content-secret',
      reason:
        'Denied: the arguments could not be checked against policy rule "content-secret" (the data has too many long strings to test against the schema patterns).',
      source: { file: '/p/args.yaml', line: 20 },
    });
  });
});

describe('readAnnotations', () => {
  it('reads every hint of an untrusted server as its most cautious value, whatever it says', () => {
    const claims: ToolAnnotations = {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    };
    const reading = readAnnotations(claims, false);
    expect(reading).toEqual({
      readOnlyHint: { value: false, from: 'untrusted server' },
      destructiveHint: { value: true, from: 'untrusted server' },
      idempotentHint: { value: false, from: 'untrusted server' },
      openWorldHint: { value: true, from: 'untrusted server' },
    });
  });

  it("believes a trusted server, with the spec's defaults for hints it leaves out", () => {
    expect(readAnnotations(undefined, true)).toEqual({
      readOnlyHint: { value: false, from: 'spec default' },
      destructiveHint: { value: true, from: 'spec default' },
      idempotentHint: { value: false, from: 'spec default' },
      openWorldHint: { value: true, from: 'spec default' },
    });
    expect(readAnnotations({ destructiveHint: false, openWorldHint: false }, true)).toMatchObject({
      destructiveHint: { value: false, from: 'server' },
      openWorldHint: { value: false, from: 'server' },
    });
  });

  it('reads a read-only tool as not destructive and idempotent unless it says otherwise', () => {
    expect(readAnnotations({ readOnlyHint: true, openWorldHint: false }, true)).toEqual({
      readOnlyHint: { value: true, from: 'server' },
      destructiveHint: { value: false, from: 'read-only tool' },
      idempotentHint: { value: true, from: 'read-only tool' },
      openWorldHint: { value: false, from: 'server' },
    });
    expect(readAnnotations({ readOnlyHint: true, destructiveHint: true }, true).destructiveHint).toEqual({
      value: true,
      from: 'server',
    });
  });
});

describe('isHiddenFromList', () => {
  const hidden = (engine: PolicyEngine, tool: string, extra: Partial<PolicyCallInput> = {}): boolean =>
    engine.isHiddenFromList(call({ server: 's', tool, ...extra }));

  it('hides a tool denied by a rule without an arguments condition', () => {
    const engine = engineOf(['h.yaml', yaml('rules:', '  - { match: { tool: "rm*" }, action: deny }')]);
    expect(hidden(engine, 'rm_rf')).toBe(true);
    expect(hidden(engine, 'ls')).toBe(false);
  });

  it('does not hide a tool whose deny depends on its arguments', () => {
    const engine = engineOf([
      'h.yaml',
      yaml(
        'default: allow',
        'rules:',
        '  - { match: { tool: rm, arguments: { required: [force] } }, action: deny }',
      ),
    ]);
    expect(hidden(engine, 'rm')).toBe(false);
  });

  it('does not hide a tool that an earlier conditional rule allows or confirms for some calls', () => {
    for (const action of ['allow', 'confirm']) {
      const engine = engineOf([
        'h.yaml',
        yaml(
          'rules:',
          `  - { match: { tool: rm, arguments: { required: [dry_run] } }, action: ${action} }`,
          '  - { match: { tool: rm }, action: deny }',
        ),
      ]);
      expect(hidden(engine, 'rm'), action).toBe(false);
      expect(brief(engine.decide(call({ server: 's', tool: 'rm', arguments: {} })))).toEqual([
        'deny',
        'h.yaml#2',
      ]);
    }
  });

  it('hides a tool when an earlier conditional rule only denies too', () => {
    const engine = engineOf([
      'h.yaml',
      yaml(
        'rules:',
        '  - { match: { tool: rm, arguments: { required: [force] } }, action: deny }',
        '  - { match: { tool: rm }, action: deny }',
      ),
    ]);
    expect(hidden(engine, 'rm')).toBe(true);
  });

  it('ignores earlier rules that cannot match the tool, whatever their arguments condition', () => {
    const engine = engineOf([
      'h.yaml',
      yaml(
        'rules:',
        '  - { match: { tool: other, arguments: { required: [x] } }, action: allow }',
        '  - { match: { server: elsewhere }, action: allow }',
        '  - { match: { trusted: true }, action: allow }',
        '  - { match: { tool: rm }, action: deny }',
      ),
    ]);
    expect(hidden(engine, 'rm')).toBe(true);
    // The trusted-only allow can match a trusted server's rm.
    expect(hidden(engine, 'rm', { trusted: true })).toBe(false);
  });

  it('is decided by an unconditional allow or confirm before a deny', () => {
    const engine = engineOf([
      'h.yaml',
      yaml(
        'rules:',
        '  - { match: { tool: rm }, action: confirm }',
        '  - { match: { tool: rm }, action: deny }',
      ),
    ]);
    expect(hidden(engine, 'rm')).toBe(false);
  });

  it("reads annotations as decide does: an untrusted server's read-only claim does not count", () => {
    const engine = engineOf([
      'h.yaml',
      yaml(
        'default: deny',
        'rules:',
        '  - { match: { annotations: { readOnlyHint: true } }, action: allow }',
      ),
    ]);
    expect(hidden(engine, 'read', { trusted: true, annotations: READ_ONLY })).toBe(false);
    expect(hidden(engine, 'read', { trusted: false, annotations: READ_ONLY })).toBe(true);
  });

  it('hides tools no rule can match when the default is deny, and only then', () => {
    const rules = ['rules:', '  - { match: { tool: ls }, action: allow }'];
    expect(hidden(engineOf(['h.yaml', yaml('default: deny', ...rules)]), 'rm')).toBe(true);
    expect(hidden(engineOf(['h.yaml', yaml('default: deny', ...rules)]), 'ls')).toBe(false);
    expect(hidden(engineOf(['h.yaml', yaml('default: confirm', ...rules)]), 'rm')).toBe(false);
    expect(hidden(engineOf(['h.yaml', yaml(...rules)]), 'rm')).toBe(false);
  });

  it('agrees with decide: a hidden tool is denied whatever its arguments', () => {
    const engine = engineOf([
      'h.yaml',
      yaml(
        'default: deny',
        'rules:',
        '  - { match: { tool: "a*", arguments: { required: [ok] } }, action: allow }',
        '  - { match: { tool: "*b", arguments: { required: [no] } }, action: deny }',
        '  - { match: { tool: "ab" }, action: confirm }',
        '  - { match: { tool: "*c" }, action: deny }',
      ),
    ]);
    const argumentSets = [undefined, {}, { ok: 1 }, { no: 1 }, { ok: 1, no: 1 }];
    for (const tool of ['a', 'ab', 'b', 'ac', 'bc', 'c', 'z']) {
      const effects = argumentSets.map(
        (args) => engine.decide(call({ server: 's', tool, arguments: args })).effect,
      );
      expect(hidden(engine, tool), `${tool}: ${effects.join(', ')}`).toBe(
        effects.every((effect) => effect === 'deny'),
      );
    }
  });
});

describe('explain', () => {
  const engine = engineOf([
    'ex.yaml',
    yaml(
      'default: deny',
      'rules:',
      '  - id: other-server',
      '    match: { server: [git, "gh*"] }',
      '    action: allow',
      '  - id: destructive',
      '    match: { annotations: { readOnlyHint: true } }',
      '    action: allow',
      '  - id: etc',
      '    match: { server: fs, tool: write_file, arguments: { required: [path], properties: { path: { pattern: "^/etc/" } } } }',
      '    action: deny',
      '  - id: fs-writes',
      '    match: { server: fs, tool: "write_*", trusted: false }',
      '    action: confirm',
      '  - id: never-reached',
      '    match: {}',
      '    action: allow',
    ),
  ]);

  it('traces each rule tried, with why, up to the one that decides', () => {
    const explanation = engine.explain(
      call({
        server: 'fs',
        tool: 'write_file',
        annotations: READ_ONLY,
        arguments: { path: '/home/me/notes' },
      }),
    );
    expect(explanation).toEqual({
      decision: {
        effect: 'confirm',
        ruleId: 'fs-writes',
        reason: 'Policy rule "fs-writes" asks for the user\'s confirmation.',
        source: { file: '/p/ex.yaml', line: 12 },
      },
      trace: [
        {
          ruleId: 'other-server',
          source: { file: '/p/ex.yaml', line: 3 },
          matched: false,
          why: 'server "fs" does not match any of "git", "gh*"',
        },
        {
          ruleId: 'destructive',
          source: { file: '/p/ex.yaml', line: 6 },
          matched: false,
          why: 'readOnlyHint reads as false (server "fs" is not trusted, so its annotations are ignored); the rule wants true',
        },
        {
          ruleId: 'etc',
          source: { file: '/p/ex.yaml', line: 9 },
          matched: false,
          why: 'arguments/path must match pattern "^/etc/"',
        },
        {
          ruleId: 'fs-writes',
          source: { file: '/p/ex.yaml', line: 12 },
          matched: true,
          why: 'server "fs" matches "fs"; tool "write_file" matches "write_*"; server "fs" is not trusted',
        },
      ],
    });
    expect(
      engine.decide(call({ server: 'fs', tool: 'write_file', arguments: { path: '/home/me/notes' } })),
    ).toEqual(explanation.decision);
  });

  it('explains annotations of trusted servers, and a rule that matches', () => {
    const { decision, trace } = engine.explain(
      call({ server: 'x', tool: 't', trusted: true, annotations: READ_ONLY }),
    );
    expect(decision.ruleId).toBe('destructive');
    expect(trace.at(-1)?.why).toBe('readOnlyHint reads as true (as the trusted server says)');
    const spec = engine.explain(call({ server: 'x', tool: 't', trusted: true }));
    expect(spec.trace[1]?.why).toBe(
      'readOnlyHint reads as false (the trusted server leaves it out: the spec default); the rule wants true',
    );
  });

  it('says when arguments fail their requirements, and when every call matches', () => {
    const missing = engine.explain(call({ server: 'fs', tool: 'write_file', trusted: true }));
    expect(missing.trace[2]?.why).toBe("arguments must have required property 'path'");
    expect(missing.trace.at(-1)).toEqual({
      ruleId: 'never-reached',
      source: { file: '/p/ex.yaml', line: 15 },
      matched: true,
      why: 'the rule matches every request',
    });
  });

  it('ends with no matching rule when the default decides', () => {
    const lone = engineOf([
      'd.yaml',
      yaml('default: deny', 'rules:', '  - { match: { tool: a }, action: allow }'),
    ]);
    const { decision, trace } = lone.explain(call({ server: 's', tool: 'b' }));
    expect(decision.ruleId).toBeNull();
    expect(trace).toEqual([
      {
        ruleId: 'd.yaml#1',
        source: { file: '/p/d.yaml', line: 3 },
        matched: false,
        why: 'tool "b" does not match "a"',
      },
    ]);
  });
});

describe('rules on the principal', () => {
  const engine = engineOf([
    'team.yaml',
    yaml(
      'default: deny',
      'rules:',
      '  - id: admins-write',
      '    match: { tool: write_*, principal: { claims: { groups: admins } } }',
      '    action: allow',
      '  - id: alice-reads',
      '    match: { tool: read_*, principal: { subject: alice, claims: { email: "*@example.com" } } }',
      '    action: allow',
    ),
  ]);
  const alice = {
    source: 'token' as const,
    subject: 'alice',
    claims: { email: 'alice@example.com', groups: ['eng', 'admins'] },
  };
  const bob = {
    source: 'token' as const,
    subject: 'bob',
    claims: { email: 'bob@example.com', groups: ['eng'] },
  };

  it('matches the subject and claims, a list claim by any of its entries', () => {
    expect(brief(engine.decide(call({ server: 'fs', tool: 'write_file', principal: alice })))).toEqual([
      'allow',
      'admins-write',
    ]);
    expect(brief(engine.decide(call({ server: 'fs', tool: 'write_file', principal: bob })))).toEqual([
      'deny',
      null,
    ]);
    expect(brief(engine.decide(call({ server: 'fs', tool: 'read_file', principal: alice })))).toEqual([
      'allow',
      'alice-reads',
    ]);
    expect(brief(engine.decide(call({ server: 'fs', tool: 'read_file', principal: bob })))).toEqual([
      'deny',
      null,
    ]);
    // Nobody known: no principal rule matches.
    expect(brief(engine.decide(call({ server: 'fs', tool: 'read_file' })))).toEqual(['deny', null]);
  });

  it('never hides a tool from the shared list by itself, and explains a mismatch', () => {
    expect(
      engine.isHiddenFromList({ server: 'fs', tool: 'write_file', annotations: undefined, trusted: false }),
    ).toBe(false);
    const { trace } = engine.explain(call({ server: 'fs', tool: 'write_file', principal: bob }));
    expect(trace[0]!.why).toBe('principal "bob"\'s groups ["eng"] does not match "admins"');
  });
});
