/**
 * The regular-expression engine handed to ajv (`code.regExp`) for upstream tool schemas.
 *
 * An upstream's `inputSchema` or `outputSchema` is untrusted, and ajv runs every `pattern` and
 * `patternProperties` key on the data it validates, synchronously, on the gateway's only thread.
 * A pattern such as `^(a+)+$` backtracks exponentially on a near-miss (measured: 92 ms for 25
 * characters, doubling per character); one such as `^\s*\s*\s*x$` backtracks
 * polynomially (8 s for 4000 spaces, measured). So this engine refuses, when ajv compiles the
 * schema, patterns that are too long or whose shape backtracks exponentially or worse than
 * quadratically, and refuses, when the data is validated, to run on strings longer than a bound
 * or beyond a work budget per validation. Every refusal is thrown; its caller decides what an
 * unanswered question means (repair leaves the result alone, input validation refuses the call).
 *
 * The shape check judges structure only. It is conservative: it refuses some safe patterns, e.g.
 * `^([a-z0-9]+(-[a-z0-9]+)*)$`, which then go unchecked rather than checked slowly.
 *
 * Why not a linear-time engine instead: re2js (the pure JavaScript port of RE2) would make
 * every pattern safe, but measured on Node 20 it matched typical schema patterns
 * (`^[a-z0-9-]+$`, a date, a path) 35 to 90 times slower than V8's engine (about 2 µs against
 * 0.03 µs per test) and took about 180 µs to compile each pattern. These patterns run on every
 * policy-checked call and every validated result, where V8's engine with these bounds costs
 * almost nothing; the native `re2` binding would need a compiler at every install. So V8's
 * engine stays, behind the checks here.
 *
 * Longer than most modules because the shape analysis is one recursive judgement over a pattern's
 * syntax; split, its parts would each need the whole grammar.
 */

/** Thrown when a pattern is refused, or a string is too long or too costly to test against it. */
export class UnsafePatternError extends Error {
  override readonly name = 'UnsafePatternError';
}

export interface PatternLimits {
  readonly maxPatternLength: number;
  readonly maxStringLengthForPattern: number;
}

/**
 * Work allowance shared by all patterns of one validation, in estimated backtracking steps
 * (string length to the power of the pattern's degree). The validator refills it before each
 * validation; the engine draws from it before each test.
 */
export interface PatternWorkMeter {
  remaining: number;
}

/** Shape ajv expects for `code.regExp` (ajv's own `RegExpEngine`, restated to keep ajv's types out of callers). */
export interface GuardedRegExpEngine {
  (pattern: string, flags: string): { test(s: string): boolean; toString(): string };
  code: string;
}

/**
 * Bounded repetition of a group with an inner quantifier is allowed when the number of ways it
 * can split a string stays below this (`(\d{1,3}\.){3}` has 3^3 = 27 ways): a near-miss then
 * stays well under a millisecond while common IPv4-, date- and phone-like patterns pass.
 */
const NESTED_WAYS_BUDGET = 1000;

/**
 * Highest polynomial degree of backtracking allowed: quadratic, which a string of the default
 * maximum length (4096) runs through in a few milliseconds; cubic takes seconds.
 */
const MAX_DEGREE = 2;

export function createGuardedRegExpEngine(
  limits: PatternLimits,
  meter: PatternWorkMeter,
): GuardedRegExpEngine {
  const engine = (pattern: string, flags: string) => {
    if (pattern.length > limits.maxPatternLength) {
      throw new UnsafePatternError(
        `pattern of ${pattern.length} characters is longer than the ${limits.maxPatternLength} allowed`,
      );
    }
    // Compile first: the analysis below may then assume valid syntax.
    const rx = new RegExp(pattern, flags);
    const analysis = analysePattern(pattern, flags);
    if (analysis.kind === 'refused') {
      throw new UnsafePatternError(`pattern ${JSON.stringify(pattern)} ${analysis.reason}`);
    }
    const maxLength = limits.maxStringLengthForPattern;
    return {
      test(s: string): boolean {
        if (s.length > maxLength) {
          throw new UnsafePatternError(
            `a string of ${s.length} characters is longer than the ${maxLength} that pattern ${JSON.stringify(pattern)} is run on`,
          );
        }
        meter.remaining -= Math.max(1, s.length) ** analysis.degree;
        if (meter.remaining < 0) {
          throw new UnsafePatternError(
            'the data has too many long strings to test against the schema patterns',
          );
        }
        return rx.test(s);
      },
      // ajv dedupes compiled patterns per instance by `toString()` of this object (the scope key
      // in ajv's `usePattern`). Without it every pattern would print as "[object Object]" and the
      // second pattern an instance compiles would silently reuse the first one's tester.
      toString: () => rx.toString(),
    };
  };
  // ajv reads `.code` only to emit standalone source (`ajv/dist/standalone`), which we never use:
  // normal compilation references the returned object directly. The TypeScript type requires it,
  // and it must not be "new RegExp" (that would make ajv call `new RegExp` in generated code).
  return Object.assign(engine, { code: 'mcpWardenGuardedRegExp' });
}

// --- Pattern shape analysis -------------------------------------------------------------------

interface Quantifier {
  readonly min: number;
  readonly max: number; // Infinity when unbounded
}

type Atom =
  /** One known character (`char`), or an escape standing for one we do not resolve. */
  | { kind: 'literal'; text: string; char?: string; quantifier?: Quantifier }
  /** Consumes characters from a set: `[...]`, `.`, `\d`, `\p{L}`; or a backreference. */
  | { kind: 'set'; source: string; quantifier?: Quantifier }
  /** Consumes nothing: `^`, `$`, `\b`, `\B`. */
  | { kind: 'assertion'; source: string; quantifier?: Quantifier }
  | { kind: 'group'; alternatives: Atom[][]; lookaround: boolean; quantifier?: Quantifier };

export type PatternAnalysis =
  | { kind: 'refused'; reason: string }
  /** `degree`: the pattern backtracks at worst about length^degree steps on a string. */
  | { kind: 'safe'; degree: number };

class Refused {
  constructor(readonly reason: string) {}
}

/** Flags to test character sets with, and their answers so far (a long pattern asks many times). */
interface MatchContext {
  readonly flags: string;
  readonly answers: Map<string, boolean>;
}

export function analysePattern(pattern: string, flags = 'u'): PatternAnalysis {
  try {
    const alternatives = parseAlternatives(pattern);
    checkNesting(alternatives);
    const context: MatchContext = { flags, answers: new Map() };
    const degree = Math.max(...alternatives.map((atoms) => topLevelDegree(atoms, context)));
    if (degree > MAX_DEGREE) {
      return {
        kind: 'refused',
        reason: `chains quantifiers that can match the same text (backtracking grows like length^${degree})`,
      };
    }
    return { kind: 'safe', degree };
  } catch (error) {
    if (error instanceof Refused) return { kind: 'refused', reason: error.reason };
    throw error;
  }
}

// Exponential shapes: a repeated group whose body can match one string in several ways.

/** What a sequence contributes to the ambiguity of an enclosing repetition. */
interface Ambiguity {
  /** Some quantifier or ambiguous alternation is inside. */
  readonly hazard: boolean;
  /** Rough count of ways it can match one string; Infinity when unbounded. */
  readonly ways: number;
}

function checkNesting(alternatives: Atom[][]): Ambiguity {
  const parts = alternatives.map(nestingOfAtoms);
  const ambiguousChoice = alternatives.length > 1 && !isPrefixFreeLiteralChoice(alternatives);
  return {
    hazard: ambiguousChoice || parts.some((p) => p.hazard),
    // Overlapping alternatives add up their ways; disjoint ones can only take one branch.
    ways: ambiguousChoice ? sum(parts.map((p) => p.ways)) : Math.max(1, ...parts.map((p) => p.ways)),
  };
}

function nestingOfAtoms(atoms: Atom[]): Ambiguity {
  let hazard = false;
  let ways = 1;
  for (const atom of atoms) {
    const inner: Ambiguity =
      atom.kind === 'group' ? checkNesting(atom.alternatives) : { hazard: false, ways: 1 };
    const q = atom.quantifier;
    if (q === undefined) {
      hazard ||= inner.hazard;
      ways *= inner.ways;
      continue;
    }
    hazard = true;
    if (atom.kind === 'group' && inner.hazard && q.max > 1) {
      if (q.max === Infinity || inner.ways === Infinity) {
        throw new Refused(
          'repeats a group that itself contains a quantifier or overlapping alternatives (catastrophic backtracking)',
        );
      }
      const total = inner.ways ** q.max * (q.max - q.min + 1);
      if (total > NESTED_WAYS_BUDGET) {
        throw new Refused(`nests bounded quantifiers too deeply (about ${total} ways to match one string)`);
      }
      ways *= total;
    } else {
      ways *= inner.ways * (q.max === Infinity ? Infinity : q.max - q.min + 1);
    }
  }
  return { hazard, ways };
}

/** `(foo|bar)` cannot match one string two ways; `(a|aa)`, `(a|\w)` and `(|a)` can. */
function isPrefixFreeLiteralChoice(alternatives: Atom[][]): boolean {
  const texts: string[] = [];
  for (const alternative of alternatives) {
    let text = '';
    for (const atom of alternative) {
      if (atom.kind !== 'literal' || atom.quantifier !== undefined) return false;
      text += atom.text;
    }
    texts.push(text);
  }
  return texts.every((a, i) => texts.every((b, j) => i === j || !b.startsWith(a)));
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

// Polynomial shapes: unbounded quantifiers in a row that can share the same text, such as
// `\s*\s*x` or `.*a.*b`. A run of k of them tried against a near-miss explores about n^(k-1)
// ways to split the text, each re-running the rest of the pattern. A run ends at a required
// character none of its members can match (`[a-z]+-[0-9]+`: the `-` fixes where `[a-z]+` stops).

function topLevelDegree(atoms: Atom[], context: MatchContext): number {
  const first = atoms.find((atom) => !(atom.kind === 'group' && atom.lookaround));
  const anchored = first?.kind === 'assertion' && first.source === '^';
  // Unanchored, the engine retries the whole pattern at every position: one more factor of n.
  return chainsOf(atoms, context).excess + 1 + (anchored ? 0 : 1);
}

interface Chains {
  /** Sum over runs of (run length - 1): the degree beyond a linear scan. */
  readonly excess: number;
  /** Contains an unbounded quantifier. */
  readonly unbounded: boolean;
}

function chainsOf(atoms: Atom[], context: MatchContext): Chains {
  let excess = 0;
  let unbounded = false;
  let run: Atom[] = [];
  for (const atom of atoms) {
    if (atom.kind === 'assertion') continue;
    if (atom.kind === 'group' && atom.lookaround) {
      // Zero-width, so it joins no run; what it runs inside counts where it stands.
      excess += Math.max(...atom.alternatives.map((alternative) => chainsOf(alternative, context).excess));
      continue;
    }
    const q = atom.quantifier;
    if (q?.max === Infinity) {
      unbounded = true;
      run.push(atom);
      continue;
    }
    if (atom.kind === 'group') {
      const inner = atom.alternatives.map((alternative) => chainsOf(alternative, context));
      if (inner.some((c) => c.unbounded)) {
        unbounded = true;
        excess += Math.max(...inner.map((c) => c.excess));
        run.push(atom);
      }
      continue;
    }
    const required = q === undefined || q.min >= 1;
    const char = atom.kind === 'literal' ? atom.char : undefined;
    if (
      required &&
      char !== undefined &&
      run.length > 0 &&
      run.every((member) => !canMatch(member, char, context))
    ) {
      excess += run.length - 1;
      run = [];
    }
  }
  return { excess: excess + Math.max(0, run.length - 1), unbounded };
}

/** Whether `atom` could consume `char`; true when unsure. */
function canMatch(atom: Atom, char: string, context: MatchContext): boolean {
  if (atom.kind === 'literal') return atom.char === undefined || atom.char === char;
  if (atom.kind !== 'set') return true;
  const key = `${atom.source}\u0000${char}`;
  let answer = context.answers.get(key);
  if (answer === undefined) {
    try {
      answer = new RegExp(`^(?:${atom.source})$`, context.flags).test(char);
    } catch {
      answer = true;
    }
    context.answers.set(key, answer);
  }
  return answer;
}

// Parsing.

/**
 * A minimal parser for the syntax `new RegExp(pattern, flags)` accepted already: groups,
 * alternation, classes, escapes and quantifiers. Iterative, so deeply nested groups cannot
 * overflow the stack (the pattern's length is bounded anyway).
 */
function parseAlternatives(pattern: string): Atom[][] {
  const root: Atom[][] = [[]];
  const stack: Atom[][][] = [root];
  const current = (): Atom[] => {
    const alternatives = stack[stack.length - 1] as Atom[][];
    return alternatives[alternatives.length - 1] as Atom[];
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === '(') {
      const [next, lookaround] = skipGroupPrefix(pattern, i + 1);
      const group: Atom = { kind: 'group', alternatives: [[]], lookaround };
      current().push(group);
      stack.push(group.alternatives);
      i = next;
    } else if (c === ')') {
      stack.pop();
      i++;
    } else if (c === '|') {
      (stack[stack.length - 1] as Atom[][]).push([]);
      i++;
    } else if (c === '[') {
      const next = skipClass(pattern, i + 1);
      current().push({ kind: 'set', source: pattern.slice(i, next) });
      i = next;
    } else if (c === '\\') {
      const [atom, next] = readEscape(pattern, i);
      current().push(atom);
      i = next;
    } else if (c === '*' || c === '+' || c === '?' || (c === '{' && matchBraces(pattern, i) !== null)) {
      const [quantifier, next] = readQuantifier(pattern, i);
      const atoms = current();
      const last = atoms[atoms.length - 1];
      if (last !== undefined) last.quantifier = quantifier;
      i = next;
    } else if (c === '.') {
      current().push({ kind: 'set', source: '.' });
      i++;
    } else if (c === '^' || c === '$') {
      current().push({ kind: 'assertion', source: c });
      i++;
    } else {
      current().push({ kind: 'literal', text: c, char: c });
      i++;
    }
  }
  return root;
}

/** Skips `?:`, `?=`, `?!`, `?<=`, `?<!` or `?<name>`; says whether the group is a lookaround. */
function skipGroupPrefix(pattern: string, i: number): [number, boolean] {
  if (pattern[i] !== '?') return [i, false];
  const next = pattern[i + 1];
  if (next === '<' && pattern[i + 2] !== '=' && pattern[i + 2] !== '!') {
    const end = pattern.indexOf('>', i);
    return [end === -1 ? pattern.length : end + 1, false]; // named group
  }
  if (next === '<') return [i + 3, true];
  return [i + 2, next === '=' || next === '!'];
}

function skipClass(pattern: string, i: number): number {
  while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** Reads the escape starting at the backslash at `start`. */
function readEscape(pattern: string, start: number): [Atom, number] {
  const i = start + 1;
  const c = pattern[i] ?? '';
  let end: number;
  if ((c === 'p' || c === 'P' || c === 'u') && pattern[i + 1] === '{') {
    const close = pattern.indexOf('}', i);
    end = close === -1 ? pattern.length : close + 1;
    if (c !== 'u') return [{ kind: 'set', source: pattern.slice(start, end) }, end];
  } else if (c === 'u') end = i + 5;
  else if (c === 'x') end = i + 3;
  else if (c === 'c') end = i + 2;
  else if (c === 'k') {
    const close = pattern.indexOf('>', i);
    end = close === -1 ? pattern.length : close + 1;
    return [{ kind: 'set', source: pattern.slice(start, end) }, end]; // named backreference
  } else if (/[1-9]/.test(c)) {
    end = i + 1;
    while (/[0-9]/.test(pattern[end] ?? '')) end++;
    return [{ kind: 'set', source: pattern.slice(start, end) }, end]; // backreference
  } else if (/[dDwWsS]/.test(c)) return [{ kind: 'set', source: pattern.slice(start, i + 1) }, i + 1];
  else if (c === 'b' || c === 'B') return [{ kind: 'assertion', source: pattern.slice(start, i + 1) }, i + 1];
  else if (/[^A-Za-z0-9]/.test(c))
    return [{ kind: 'literal', text: `\\${c}`, char: c }, i + 1]; // `\.`, `\/`
  else end = i + 1; // `\n`, `\t`, `\0`, ...
  return [{ kind: 'literal', text: pattern.slice(start, end) }, end];
}

/** `{n}`, `{n,}` or `{n,m}` starting at `i`. (Outside unicode mode a lone `{` is a literal.) */
function matchBraces(pattern: string, i: number): RegExpExecArray | null {
  const braces = /\{(\d+)(,(\d*))?\}/y;
  braces.lastIndex = i;
  return braces.exec(pattern);
}

function readQuantifier(pattern: string, i: number): [Quantifier, number] {
  const c = pattern[i];
  let quantifier: Quantifier;
  let next: number;
  if (c === '*') [quantifier, next] = [{ min: 0, max: Infinity }, i + 1];
  else if (c === '+') [quantifier, next] = [{ min: 1, max: Infinity }, i + 1];
  else if (c === '?') [quantifier, next] = [{ min: 0, max: 1 }, i + 1];
  else {
    const match = matchBraces(pattern, i) as RegExpExecArray;
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === '' ? Infinity : Number(match[3]);
    [quantifier, next] = [{ min, max }, i + match[0].length];
  }
  if (pattern[next] === '?') next++; // lazy: backtracks just the same on a failed match
  return [quantifier, next];
}
