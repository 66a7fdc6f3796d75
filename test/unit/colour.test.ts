import { describe, expect, it } from 'vitest';
import { colourEnabled, paletteFor } from '../../src/lib/colour.js';
import { plural } from '../../src/lib/plural.js';

describe('colourEnabled', () => {
  const tty = { isTTY: true };
  const pipe = { isTTY: false };
  it.each([
    ['a terminal', tty, {}, true],
    ['a pipe', pipe, {}, false],
    ['a terminal with NO_COLOR', tty, { NO_COLOR: '1' }, false],
    ['a terminal with an empty NO_COLOR (not set, by the convention)', tty, { NO_COLOR: '' }, true],
    ['a pipe with FORCE_COLOR', pipe, { FORCE_COLOR: '1' }, true],
    ['a terminal with FORCE_COLOR=0', tty, { FORCE_COLOR: '0' }, false],
    ['FORCE_COLOR over NO_COLOR', pipe, { FORCE_COLOR: '1', NO_COLOR: '1' }, true],
    ['a dumb terminal', tty, { TERM: 'dumb' }, false],
  ])('%s', (_what, stream, env, expected) => {
    expect(colourEnabled(stream, env)).toBe(expected);
  });

  it('a palette that is off changes nothing; one that is on wraps and resets', () => {
    expect(paletteFor(pipe, {}).red('x')).toBe('x');
    expect(paletteFor(tty, {}).red('x')).toBe('\u001b[31mx\u001b[39m');
  });
});

describe('plural', () => {
  it('says 1 policy file, 2 policy files, 0 entries', () => {
    expect(plural(1, 'policy file')).toBe('1 policy file');
    expect(plural(2, 'policy file')).toBe('2 policy files');
    expect(plural(0, 'entry', 'entries')).toBe('0 entries');
  });
});
