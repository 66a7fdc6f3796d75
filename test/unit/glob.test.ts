import { describe, expect, it } from 'vitest';
import { compileGlob, matchesGlob } from '../../src/lib/glob.js';

describe('matchesGlob', () => {
  const cases: [glob: string, text: string, expected: boolean][] = [
    // literal, anchored at both ends
    ['read_file', 'read_file', true],
    ['read_file', 'read_file2', false],
    ['read_file', 'xread_file', false],
    ['', '', true],
    ['', 'a', false],
    // *
    ['*', '', true],
    ['*', 'anything at all', true],
    ['read_*', 'read_', true],
    ['read_*', 'read_file', true],
    ['read_*', 'write_file', false],
    ['*_file', 'read_file', true],
    ['*_file', 'read_files', false],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXXbYYc', true],
    ['a*b*c', 'aXXcYYb', false],
    ['a**b', 'ab', true],
    ['*', 'line1\nline2', true],
    // ?
    ['?', 'a', true],
    ['?', '', false],
    ['?', 'ab', false],
    ['file?', 'file1', true],
    ['file?', 'file', false],
    ['?', '🔧', true], // one code point, two UTF-16 units
    // classes
    ['[abc]', 'b', true],
    ['[abc]', 'd', false],
    ['[a-z]x', 'qx', true],
    ['[a-z]x', 'Qx', false],
    ['[!abc]', 'd', true],
    ['[!abc]', 'a', false],
    ['[!a-z]', '_', true],
    ['[a-]', '-', true],
    ['[-a]', '-', true],
    ['[a-c-e]', '-', true],
    ['[]]', ']', true],
    ['[]a]', 'a', true],
    ['[!]]', ']', false],
    ['[!]]', 'x', true],
    ['[\\]]', ']', true],
    ['[\\!a]', '!', true],
    ['[^a]', '^', true], // only `!` negates; `^` is literal
    ['[^a]', 'b', false],
    ['[*?]', '*', true],
    ['[*?]', 'a', false],
    ['[\\\\]', '\\', true],
    // escapes
    ['a\\*b', 'a*b', true],
    ['a\\*b', 'aXb', false],
    ['\\?', '?', true],
    ['\\?', 'a', false],
    ['\\[x]', '[x]', true],
    ['\\a', 'a', true],
    // regex metacharacters are literal
    ['a.b', 'a.b', true],
    ['a.b', 'axb', false],
    ['a+', 'aa', false],
    ['a+', 'a+', true],
    ['(a|b)', '(a|b)', true],
    ['(a|b)', 'a', false],
    ['^a$', '^a$', true],
    ['{1,2}', '{1,2}', true],
    ['a/b', 'a/b', true],
    ['a-b', 'a-b', true],
    ['a b', 'a b', true],
    ['über_*', 'über_tool', true],
  ];

  it.each(cases)('%j vs %j → %s', (glob, text, expected) => {
    expect(matchesGlob(glob, text)).toBe(expected);
  });
});

describe('compileGlob', () => {
  it('returns an anchored RegExp equivalent to matchesGlob', () => {
    const re = compileGlob('fs_*');
    expect(re.test('fs_read')).toBe(true);
    expect(re.test('x_fs_read')).toBe(false);
    // Stateless: repeated tests give the same answer (no `g` flag).
    expect(re.test('fs_read')).toBe(true);
  });

  it('caches compiled globs', () => {
    expect(compileGlob('cached_*')).toBe(compileGlob('cached_*'));
  });

  it('stays correct once the cache has evicted entries', () => {
    const first = compileGlob('evict_me_*');
    for (let i = 0; i < 1100; i++) compileGlob(`filler_${i}_*`);
    const again = compileGlob('evict_me_*');
    expect(again).not.toBe(first);
    expect(again.test('evict_me_now')).toBe(true);
  });

  it('evicts the least recently used glob, not one in use', () => {
    const hot = compileGlob('hot_*');
    for (let i = 0; i < 1100; i++) {
      compileGlob(`churn_${i}_*`);
      if (i % 100 === 0) compileGlob('hot_*');
    }
    expect(compileGlob('hot_*')).toBe(hot);
  });

  const invalid: [glob: string, message: RegExp][] = [
    ['[abc', /invalid glob "\[abc": unterminated "\["/],
    ['x[', /invalid glob "x\[": unterminated "\["/],
    ['[]', /unterminated "\["/],
    ['[!]', /unterminated "\["/],
    ['[a\\', /unterminated "\["/],
    ['[a-', /unterminated "\["/],
    ['abc\\', /invalid glob "abc\\\\": trailing "\\" escapes nothing/],
    ['[z-a]', /invalid glob "\[z-a\]": range "z-a" is out of order/],
  ];

  it.each(invalid)('rejects %j', (glob, message) => {
    expect(() => compileGlob(glob)).toThrow(message);
    expect(() => matchesGlob(glob, 'x')).toThrow(message);
  });
});
