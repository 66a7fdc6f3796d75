import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  assignExposedNames,
  type ExposedName,
  type NamingRules,
  type ToolOrigin,
} from '../../src/core/catalog/naming.js';
import { NamedCatalog } from '../../src/core/catalog/namedCatalog.js';

const DEFAULT: NamingRules = { separator: '__', pattern: '^[A-Za-z0-9_-]{1,64}$', maxLength: 64 };
const CURSOR: NamingRules = { separator: '__', pattern: '^[A-Za-z0-9_-]{1,60}$', maxLength: 60 };
const DOTTED: NamingRules = { separator: '__', pattern: '^[A-Za-z0-9_.-]{1,128}$', maxLength: 128 };

/** Written independently of the implementation so a change of hash input shows up here. */
function h(server: string, tool: string): string {
  return createHash('sha256').update(`${server}\0${tool}`).digest('hex').slice(0, 8);
}

function o(server: string, tool: string, namespace: string | null = server): ToolOrigin {
  return { server, namespace, tool };
}

function exposed(names: readonly ExposedName[]): string[] {
  return names.map((n) => n.exposed);
}

function accepts(rules: NamingRules, name: string): boolean {
  return new RegExp(rules.pattern).test(name) && name.length <= rules.maxLength;
}

const long80 = 'x'.repeat(80);

describe('assignExposedNames: one tool', () => {
  const cases: [
    label: string,
    origin: ToolOrigin,
    rules: NamingRules,
    expected: string,
    adjusted: ExposedName['adjusted'],
  ][] = [
    ['plain', o('fs', 'read_file'), DEFAULT, 'fs__read_file', 'none'],
    ['namespace differs from server', o('filesystem', 'read_file', 'fs'), DEFAULT, 'fs__read_file', 'none'],
    ['no namespace', o('fs', 'read_file', null), DEFAULT, 'read_file', 'none'],
    ['hyphens kept', o('my-server', 'get-item'), DEFAULT, 'my-server__get-item', 'none'],
    ['dot sanitized', o('fs', 'read.file'), DEFAULT, 'fs__read_file', 'sanitized'],
    ['dot kept when the pattern allows it', o('fs', 'read.file'), DOTTED, 'fs__read.file', 'none'],
    ['colon sanitized', o('db', 'sql:query'), DEFAULT, 'db__sql_query', 'sanitized'],
    ['space sanitized', o('db', 'run query'), DEFAULT, 'db__run_query', 'sanitized'],
    ['slash sanitized', o('gh', 'repos/list'), DEFAULT, 'gh__repos_list', 'sanitized'],
    ['space sanitized but dot kept', o('db', 'v1.run query'), DOTTED, 'db__v1.run_query', 'sanitized'],
    ['accented letter sanitized', o('u', 'naïve'), DEFAULT, 'u__na_ve', 'sanitized'],
    ['CJK sanitized', o('u', '検索'), DEFAULT, 'u____', 'sanitized'],
    ['emoji becomes a single _', o('u', 'fix🔧it'), DEFAULT, 'u__fix_it', 'sanitized'],
    ['namespace sanitized too', o('s', 'tool', 'my.ns'), DEFAULT, 'my_ns__tool', 'sanitized'],
    ['separator "_"', o('fs', 'read_file'), { ...DEFAULT, separator: '_' }, 'fs_read_file', 'none'],
    ['separator "-"', o('fs', 'read_file'), { ...DEFAULT, separator: '-' }, 'fs-read_file', 'none'],
    ['separator "." allowed', o('fs', 'read_file'), { ...DOTTED, separator: '.' }, 'fs.read_file', 'none'],
    ['separator "." not allowed', o('fs', 'read'), { ...DEFAULT, separator: '.' }, 'fs_read', 'sanitized'],
    ['separator "" ', o('fs', 'read'), { ...DEFAULT, separator: '' }, 'fsread', 'none'],
    [
      'long name shortened to exactly 64',
      o('github', `search_${long80}`),
      DEFAULT,
      `github__search_${'x'.repeat(40)}_${h('github', `search_${long80}`)}`,
      'shortened',
    ],
    [
      'long name shortened to exactly 60',
      o('github', `search_${long80}`),
      CURSOR,
      `github__search_${'x'.repeat(36)}_${h('github', `search_${long80}`)}`,
      'shortened',
    ],
    [
      'pattern bound below maxLength wins',
      o('github', `search_${long80}`),
      { ...DEFAULT, pattern: '^[A-Za-z0-9_-]{1,60}$' },
      `github__search_${'x'.repeat(36)}_${h('github', `search_${long80}`)}`,
      'shortened',
    ],
    ['exactly at the limit is kept', o('s', 'y'.repeat(61)), DEFAULT, `s__${'y'.repeat(61)}`, 'none'],
    [
      'one over the limit is shortened',
      o('s', 'y'.repeat(62)),
      DEFAULT,
      `s__${'y'.repeat(52)}_${h('s', 'y'.repeat(62))}`,
      'shortened',
    ],
    [
      'sanitized and shortened reports shortened',
      o('s', `a.${long80}`),
      DEFAULT,
      `s__a_${'x'.repeat(50)}_${h('s', `a.${long80}`)}`,
      'shortened',
    ],
    [
      'hash uses the server, not the namespace',
      o('server-one', long80, 'ns'),
      DEFAULT,
      `ns__${'x'.repeat(51)}_${h('server-one', long80)}`,
      'shortened',
    ],
  ];

  it.each(cases)('%s', (_label, origin, rules, expected, adjusted) => {
    const { names } = assignExposedNames([origin], rules);
    expect(names).toEqual([{ exposed: expected, origin, adjusted }]);
    expect(expected.length).toBeLessThanOrEqual(rules.maxLength);
    expect(accepts(rules, expected)).toBe(true);
  });

  it('shortened names are exactly maxLength', () => {
    for (const rules of [DEFAULT, CURSOR, { ...DEFAULT, maxLength: 32, pattern: '^[A-Za-z0-9_-]+$' }]) {
      const [name] = assignExposedNames([o('server', 'z'.repeat(200))], rules).names;
      expect(name?.exposed).toHaveLength(rules.maxLength);
      expect(name?.adjusted).toBe('shortened');
    }
  });

  it('pins the hash so exposed names survive upgrades', () => {
    // sha256("b\0x") starts with e1707ddf; if this changes, every shortened name a user has
    // allowed in their host changes with it.
    const { names } = assignExposedNames([o('a', 'x', null), o('b', 'x', null)], DEFAULT);
    expect(names[1]?.exposed).toBe('x_e1707ddf');
  });
});

describe('assignExposedNames: stability', () => {
  const tools = [o('github', `search_${long80}`), o('fs', 'read.file'), o('a', 'x', null), o('b', 'x', null)];

  it('gives the same result on every call', () => {
    expect(assignExposedNames(tools, DEFAULT)).toEqual(assignExposedNames(tools, DEFAULT));
  });

  it('a shortened name does not depend on the other tools', () => {
    const alone = assignExposedNames([o('github', `search_${long80}`)], DEFAULT).names[0]?.exposed;
    const withOthers = assignExposedNames(
      [o('other', `search_${long80}`), o('x', 'y'), ...tools, o('zz', long80)],
      DEFAULT,
    ).names.find((n) => n.origin.server === 'github')?.exposed;
    expect(withOthers).toBe(alone);
  });

  it('keeps input order in the output', () => {
    const input = [o('z', 'last'), o('a', 'first'), o('m', 'middle.x'), o('b', long80), o('a', 'again')];
    const { names } = assignExposedNames(input, DEFAULT);
    expect(names.map((n) => n.origin)).toEqual(input);
    expect(names.map((n) => n.origin)[0]).toBe(input[0]);
  });

  it('does not mutate its input', () => {
    const input = [o('a', 'x', null), o('b', 'x', null)];
    const copy = structuredClone(input);
    assignExposedNames(input, DEFAULT);
    expect(input).toEqual(copy);
  });

  it('handles no tools', () => {
    expect(assignExposedNames([], DEFAULT)).toEqual({ names: [], warnings: [] });
  });
});

describe('assignExposedNames: collisions', () => {
  const cases: [
    label: string,
    origins: ToolOrigin[],
    rules: NamingRules,
    expected: string[],
    adjusted: ExposedName['adjusted'][],
  ][] = [
    [
      'two servers, namespace null: the first keeps the name',
      [o('a', 'x', null), o('b', 'x', null)],
      DEFAULT,
      ['x', `x_${h('b', 'x')}`],
      ['none', 'collision'],
    ],
    [
      'three servers, namespace null',
      [o('a', 'x', null), o('b', 'x', null), o('c', 'x', null)],
      DEFAULT,
      ['x', `x_${h('b', 'x')}`, `x_${h('c', 'x')}`],
      ['none', 'collision', 'collision'],
    ],
    [
      'config order decides, not server name',
      [o('b', 'x', null), o('a', 'x', null)],
      DEFAULT,
      ['x', `x_${h('a', 'x')}`],
      ['none', 'collision'],
    ],
    [
      'same namespace on two servers',
      [o('a', 'x', 'shared'), o('b', 'x', 'shared')],
      DEFAULT,
      ['shared__x', `shared__x_${h('b', 'x')}`],
      ['none', 'collision'],
    ],
    [
      'created by sanitizing (a.b then a_b)',
      [o('s', 'a.b', null), o('s', 'a_b', null)],
      DEFAULT,
      ['a_b', `a_b_${h('s', 'a_b')}`],
      ['sanitized', 'collision'],
    ],
    [
      'created by sanitizing (a_b then a.b)',
      [o('s', 'a_b', null), o('s', 'a.b', null)],
      DEFAULT,
      ['a_b', `a_b_${h('s', 'a.b')}`],
      ['none', 'collision'],
    ],
    [
      'not a collision when the pattern allows dots',
      [o('s', 'a.b', null), o('s', 'a_b', null)],
      DOTTED,
      ['a.b', 'a_b'],
      ['none', 'none'],
    ],
    [
      'namespace + separator meets a bare name',
      [o('a', 'b__c', null), o('a', 'c', 'b')],
      DEFAULT,
      ['b__c', `b__c_${h('a', 'c')}`],
      ['none', 'collision'],
    ],
    [
      'suffix is truncated to fit the limit',
      [o('a', 'y'.repeat(60), null), o('b', 'y'.repeat(60), null)],
      DEFAULT,
      ['y'.repeat(60), `${'y'.repeat(55)}_${h('b', 'y'.repeat(60))}`],
      ['none', 'collision'],
    ],
  ];

  it.each(cases)('%s', (_label, origins, rules, expected, adjusted) => {
    const { names } = assignExposedNames(origins, rules);
    expect(exposed(names)).toEqual(expected);
    expect(names.map((n) => n.adjusted)).toEqual(adjusted);
    for (const name of expected) expect(accepts(rules, name)).toBe(true);
  });

  it('long names sharing a long prefix stay distinct after shortening', () => {
    const prefix = 'p'.repeat(70);
    const input = [o('s', `${prefix}_one`), o('s', `${prefix}_two`), o('t', `${prefix}_one`)];
    const { names, warnings } = assignExposedNames(input, DEFAULT);
    const got = exposed(names);
    expect(new Set(got).size).toBe(3);
    expect(got).toEqual([
      `s__${'p'.repeat(52)}_${h('s', `${prefix}_one`)}`,
      `s__${'p'.repeat(52)}_${h('s', `${prefix}_two`)}`,
      `t__${'p'.repeat(52)}_${h('t', `${prefix}_one`)}`,
    ]);
    expect(names.map((n) => n.adjusted)).toEqual(['shortened', 'shortened', 'shortened']);
    expect(warnings.some((w) => w.includes('collision'))).toBe(false);
  });

  it('a shortened name that meets an existing name is re-hashed', () => {
    const tool = 'q'.repeat(70);
    const shortened = `${'q'.repeat(55)}_${h('s', tool)}`;
    // The earlier tool is literally named what the later one shortens to.
    const { names, warnings } = assignExposedNames([o('r', shortened, null), o('s', tool, null)], DEFAULT);
    expect(names[0]?.exposed).toBe(shortened);
    const later = names[1];
    expect(later?.adjusted).toBe('collision');
    expect(later?.exposed).not.toBe(shortened);
    expect(later?.exposed).toHaveLength(64);
    expect(later?.exposed.startsWith('q'.repeat(55))).toBe(true);
    expect(accepts(DEFAULT, later?.exposed ?? '')).toBe(true);
    expect(warnings.filter((w) => w.startsWith('tool name collision'))).toHaveLength(1);
  });

  it('a tool listed twice by one upstream gets two names (same hash is stepped past)', () => {
    const input = [o('s', 'dup'), o('s', 'dup'), o('s', 'dup')];
    const first = assignExposedNames(input, DEFAULT);
    const got = exposed(first.names);
    expect(got[0]).toBe('s__dup');
    expect(got[1]).toBe(`s__dup_${h('s', 'dup')}`);
    expect(new Set(got).size).toBe(3);
    expect(got.every((n) => accepts(DEFAULT, n))).toBe(true);
    expect(exposed(assignExposedNames(input, DEFAULT).names)).toEqual(got);
  });

  it('an earlier collision-suffixed name wins over a later natural name', () => {
    const suffixed = `x_${h('b', 'x')}`;
    const { names } = assignExposedNames(
      [o('a', 'x', null), o('b', 'x', null), o('c', suffixed, null)],
      DEFAULT,
    );
    expect(exposed(names)).toEqual(['x', suffixed, `${suffixed}_${h('c', suffixed)}`]);
  });

  it('never drops or overwrites, even with a limit too small for a hash', () => {
    const rules: NamingRules = { separator: '__', pattern: '^[A-Za-z0-9_-]+$', maxLength: 4 };
    const input = Array.from({ length: 40 }, (_, i) => o(`s${i}`, 'tool'));
    const { names } = assignExposedNames(input, rules);
    expect(names).toHaveLength(40);
    expect(new Set(exposed(names)).size).toBe(40);
    expect(names[0]?.exposed).toHaveLength(4);
  });

  it('keeps going past the limit rather than loop forever when every short name is taken', () => {
    // maxLength 1 leaves 16 possible hash names; the 17th+ colliding tools must still get one.
    const rules: NamingRules = { separator: '__', pattern: '^[A-Za-z0-9_-]+$', maxLength: 1 };
    const input = Array.from({ length: 20 }, (_, i) => o(`s${i}`, 'x', null));
    const { names, warnings } = assignExposedNames(input, rules);
    expect(new Set(exposed(names)).size).toBe(20);
    expect(warnings.some((w) => w.includes('does not match the naming pattern'))).toBe(true);
  });
});

describe('assignExposedNames: every name is valid and unique', () => {
  const corpus: ToolOrigin[] = [
    o('fs', 'read_file'),
    o('fs', 'read.file'),
    o('fs', 'read file'),
    o('fs', 'read:file'),
    o('fs', 'read_file'),
    o('a', 'x', null),
    o('b', 'x', null),
    o('c', 'X', null),
    o('u', 'naïve🔧検索'),
    o('long', 'l'.repeat(200)),
    o('long', `${'l'.repeat(200)}2`),
    o('very-long-server-name-used-as-namespace', 'and_a_fairly_long_tool_name_as_well_here'),
    o('s', 'a.b', null),
    o('s', 'a_b', null),
    o('s', 'a-b', null),
    o('t', '', 'ns'),
  ];
  const ruleSets: [string, NamingRules][] = [
    ['default', DEFAULT],
    ['cursor 60', CURSOR],
    ['dotted 128', DOTTED],
    ['separator "-"', { ...DEFAULT, separator: '-' }],
    ['separator "." with default pattern', { ...DEFAULT, separator: '.' }],
    ['maxLength 20', { ...DEFAULT, maxLength: 20 }],
  ];

  it.each(ruleSets)('%s', (_label, rules) => {
    const { names, warnings } = assignExposedNames(corpus, rules);
    expect(names).toHaveLength(corpus.length);
    const got = exposed(names);
    expect(new Set(got).size).toBe(got.length);
    for (const name of got) expect(accepts(rules, name), name).toBe(true);
    expect(warnings.some((w) => w.includes('does not match the naming pattern'))).toBe(false);
  });
});

describe('assignExposedNames: warnings', () => {
  it('says nothing when no name was adjusted', () => {
    expect(assignExposedNames([o('fs', 'read'), o('fs', 'write')], DEFAULT).warnings).toEqual([]);
  });

  const cases: [label: string, origins: ToolOrigin[], rules: NamingRules, warnings: string[]][] = [
    [
      'collision',
      [o('a', 'x', 'a'), o('b', 'x', 'a')],
      DEFAULT,
      [
        `tool name collision: "a__x" from server "b" (tool "x") collides with server "a" (tool "x"); exposing it as "a__x_${h('b', 'x')}"`,
      ],
    ],
    [
      'sanitized',
      [o('fs', 'read.file')],
      DEFAULT,
      [
        'tool name "fs__read.file" from server "fs" (tool "read.file") contains characters not allowed by the naming pattern (replaced with "_"); exposing it as "fs__read_file"',
      ],
    ],
    [
      'shortened',
      [o('gh', long80)],
      CURSOR,
      [
        `tool name "gh__${long80}" from server "gh" (tool "${long80}") is 84 characters, over the limit of 60 (shortened with a stable hash); exposing it as "gh__${'x'.repeat(47)}_${h('gh', long80)}"`,
      ],
    ],
    [
      'sanitized and shortened in one warning',
      [o('gh', `a.${long80}`)],
      CURSOR,
      [
        `tool name "gh__a.${long80}" from server "gh" (tool "a.${long80}") contains characters not allowed by the naming pattern (replaced with "_") and is 86 characters, over the limit of 60 (shortened with a stable hash); exposing it as "gh__a_${'x'.repeat(45)}_${h('gh', `a.${long80}`)}"`,
      ],
    ],
    [
      'sanitized, then collided',
      [o('s', 'a.b', null), o('s', 'a_b', null), o('t', 'a.b', null)],
      DEFAULT,
      [
        'tool name "a.b" from server "s" (tool "a.b") contains characters not allowed by the naming pattern (replaced with "_"); exposing it as "a_b"',
        `tool name collision: "a_b" from server "s" (tool "a_b") collides with server "s" (tool "a.b"); exposing it as "a_b_${h('s', 'a_b')}"`,
        `tool name "a.b" from server "t" (tool "a.b") contains characters not allowed by the naming pattern (replaced with "_"); exposing it as "a_b_${h('t', 'a.b')}"`,
        `tool name collision: "a_b" from server "t" (tool "a.b") collides with server "s" (tool "a.b"); exposing it as "a_b_${h('t', 'a.b')}"`,
      ],
    ],
    [
      'quotes and control characters in upstream names are escaped',
      [o('s', 'say "hi"\n', null)],
      DEFAULT,
      [
        'tool name "say \\"hi\\"\\n" from server "s" (tool "say \\"hi\\"\\n") contains characters not allowed by the naming pattern (replaced with "_"); exposing it as "say__hi__"',
      ],
    ],
  ];

  it.each(cases)('%s', (_label, origins, rules, expected) => {
    expect(assignExposedNames(origins, rules).warnings).toEqual(expected);
  });
});

describe('assignExposedNames: patterns it cannot satisfy', () => {
  it('exposes the name anyway and warns', () => {
    const rules: NamingRules = { separator: '__', pattern: '^[A-Za-z0-9_-]{5,64}$', maxLength: 64 };
    const { names, warnings } = assignExposedNames([o('s', 'ab', null)], rules);
    expect(names).toEqual([{ exposed: 'ab', origin: o('s', 'ab', null), adjusted: 'none' }]);
    expect(warnings).toEqual([
      'tool name "ab" from server "s" (tool "ab") does not match the naming pattern ^[A-Za-z0-9_-]{5,64}$ (at most 64 characters); exposing it anyway, but hosts may reject or drop it',
    ]);
  });

  it('uses the pattern class to sanitize, even when "_" itself is not allowed', () => {
    const rules: NamingRules = { separator: '', pattern: '^[a-z]{1,64}$', maxLength: 64 };
    const { names, warnings } = assignExposedNames([o('s', 'ok'), o('s', 'Bad')], rules);
    expect(exposed(names)).toEqual(['sok', 's_ad']);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toContain('does not match the naming pattern');
  });

  it('falls back to [A-Za-z0-9_-] for patterns it cannot take apart', () => {
    const rules: NamingRules = { separator: '__', pattern: '^[a-z][a-z0-9_]*$', maxLength: 64 };
    const { names, warnings } = assignExposedNames([o('fs', 'read.file'), o('fs', 'Write')], rules);
    expect(exposed(names)).toEqual(['fs__read_file', 'fs__Write']);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toContain('"fs__Write"');
    expect(warnings[1]).toContain('does not match the naming pattern');
  });

  it('anchors an unanchored pattern', () => {
    const rules: NamingRules = { separator: '__', pattern: '[A-Za-z0-9_-]{1,64}', maxLength: 64 };
    const { names } = assignExposedNames([o('fs', 'read.file')], rules);
    expect(exposed(names)).toEqual(['fs__read_file']);
  });

  it('throws on a pattern that is not a regular expression', () => {
    expect(() => assignExposedNames([o('a', 'b')], { ...DEFAULT, pattern: '^[a-z' })).toThrow(
      /naming pattern "\^\[a-z" is not a valid regular expression/,
    );
  });
});

describe('NamedCatalog', () => {
  const tool = (name: string, description = 'd') => ({ name, description, inputSchema: { type: 'object' } });
  const source = (items: ReturnType<typeof tool>[]) => [{ server: 'fs', namespace: 'fs', items }];

  it('lists what the host sees and says whether a rebuild changed it', () => {
    const catalog = new NamedCatalog<ReturnType<typeof tool>>('tools', DEFAULT, () => {});
    expect(catalog.listResultJson()).toBe('{"tools":[]}');
    // The first rebuild counts as a change even when empty: the host has seen no list yet.
    expect(catalog.rebuild(source([]))).toBe(true);
    expect(catalog.rebuild(source([tool('read'), tool('write')]))).toBe(true);
    expect(JSON.parse(catalog.listResultJson())).toEqual({
      tools: [tool('fs__read'), tool('fs__write')],
    });
    expect(catalog.rebuild(source([tool('read'), tool('write')]))).toBe(false);
    expect(catalog.rebuild(source([tool('read'), tool('write', 'changed')]))).toBe(true);
    // Unlisted entries stay resolvable, with the upstream's own definition.
    expect(catalog.rebuild(source([tool('read'), tool('write')]), (e) => e.exposed !== 'fs__write')).toBe(
      true,
    );
    expect(JSON.parse(catalog.listResultJson())).toEqual({ tools: [tool('fs__read')] });
    expect(catalog.resolve('fs__write')?.item).toEqual(tool('write'));
  });
});
