import { describe, expect, it } from 'vitest';
import {
  analysePattern,
  createGuardedRegExpEngine,
  UnsafePatternError,
} from '../../src/lib/schema/safeRegExp.js';

describe('analysePattern', () => {
  // [pattern, refused?] — refusals make a schema unverifiable, so false positives only cost
  // repair, never correctness; the safe column lists shapes real output schemas use.
  const cases: [pattern: string, refused: boolean][] = [
    // exponential: a repeated group whose body can match one string several ways
    ['^(a+)+$', true],
    ['(a*)*', true],
    ['(a|aa)+', true],
    ['(\\w+\\s?)*', true],
    ['^(a+)*b', true],
    ['((ab)+)+', true],
    ['(|a)+', true],
    ['(a|\\w)+', true],
    ['(?:x+y?)+', true],
    ['(a+){2}', true],
    ['(a{1,4}){7}', true], // bounded, but 4^7 ways
    ['^([a-z0-9]+(-[a-z0-9]+)*)$', true], // safe in fact: the documented price of a structural check
    // polynomial beyond quadratic
    ['^\\s*\\s*\\s*x$', true],
    ['\\s*\\s*x', true], // unanchored: every start position adds a factor
    ['^.*a.*a.*b$', true],
    ['^(\\s*\\s*)\\s*x$', true],
    // safe
    ['(a|b)+', false],
    ['(foo|bar)*', false],
    ['^\\d+(\\.\\d+)?$', false],
    ['^(\\d{1,3}\\.){3}\\d{1,3}$', false],
    ['^\\d{4}-\\d{2}-\\d{2}$', false],
    ['^[a-z]+$', false],
    ['[a-z]+', false],
    ['\\p{L}+', false],
    ['^\\s*\\s*x$', false], // quadratic: bounded by the string length limit
    ['^[a-z]+-[a-z]+-[a-z]+$', false], // `-` ends each run
    ['^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$', false],
    ['^(?=.*\\d)(?=.*[a-z]).{8,}$', false],
    ['^(?<year>\\d{4})-(?<month>\\d{2})$', false],
    ['^https?://[^\\s]+$', false],
    ['^[A-Za-z0-9+/]+={0,2}$', false],
    ['^\\u{1F600}+$', false],
    ['^[\\]\\\\]+$', false],
  ];
  it.each(cases)('%s refused: %s', (pattern, refused) => {
    expect(() => new RegExp(pattern, 'u')).not.toThrow();
    expect(analysePattern(pattern, 'u').kind).toBe(refused ? 'refused' : 'safe');
  });
});

describe('createGuardedRegExpEngine', () => {
  const limits = { maxPatternLength: 20, maxStringLengthForPattern: 10 };

  it('tests like RegExp within the limits', () => {
    const engine = createGuardedRegExpEngine(limits, { remaining: 1e9 });
    const rx = engine('^a+$', 'u');
    expect(rx.test('aaa')).toBe(true);
    expect(rx.test('aab')).toBe(false);
  });

  it('prints as the RegExp it wraps, which ajv uses to tell patterns apart', () => {
    const engine = createGuardedRegExpEngine(limits, { remaining: 1e9 });
    expect(String(engine('^a+$', 'u'))).toBe('/^a+$/u');
    expect(String(engine('^b+$', 'u'))).toBe('/^b+$/u');
  });

  it('refuses long patterns, catastrophic shapes and invalid syntax when compiled', () => {
    const engine = createGuardedRegExpEngine(limits, { remaining: 1e9 });
    expect(() => engine('a'.repeat(21), 'u')).toThrow(UnsafePatternError);
    expect(() => engine('^(a+)+$', 'u')).toThrow(/catastrophic/);
    expect(() => engine('(', 'u')).toThrow(SyntaxError);
  });

  it('refuses to test strings longer than the limit', () => {
    const rx = createGuardedRegExpEngine(limits, { remaining: 1e9 })('^a+$', 'u');
    expect(rx.test('a'.repeat(10))).toBe(true);
    expect(() => rx.test('a'.repeat(11))).toThrow(/longer than the 10/);
  });

  it('draws on the work meter and refuses once it is spent', () => {
    const meter = { remaining: 25 };
    const rx = createGuardedRegExpEngine(limits, meter)('^a+$', 'u'); // degree 1: cost = length
    expect(rx.test('a'.repeat(10))).toBe(true);
    expect(rx.test('a'.repeat(10))).toBe(true);
    expect(() => rx.test('a'.repeat(10))).toThrow(/too many long strings/);
  });

  it('has a code name that is not "new RegExp", so ajv never bypasses it', () => {
    expect(createGuardedRegExpEngine(limits, { remaining: 0 }).code).not.toBe('new RegExp');
  });
});
