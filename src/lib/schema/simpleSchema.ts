/**
 * A check for the simpler tool schemas (typed properties, `required`, `enum`, bounds, `anyOf`,
 * `allOf`, `format`, `pattern`, local `$ref`s to definitions), built from the schema as a tree
 * of small functions, without ajv. Loading ajv and compiling a schema is what made a gateway's
 * first call of a tool slow; most tools' arguments are a flat object of strings and numbers,
 * which this checks at once.
 *
 * A `format` is checked by ajv-formats' own definitions (loaded without ajv, a few milliseconds
 * once), so a string is a `uri` here exactly when it is one to ajv. A `pattern` is taken only
 * when the caller gives the bounds ajv's guarded engine runs patterns under (safeRegExp.ts), and
 * is held to them: a pattern that engine would refuse is left to ajv, and a string it would
 * refuse to test (too long, or past the work allowed for one check) gets "ask ajv", whose engine
 * then refuses it as before.
 *
 * It only ever vouches: `true` means ajv, with the options untrustedSchema.ts gives it, would
 * accept the data too; `false` means "not sure", and the caller asks ajv, which also words the
 * problem. A schema with any keyword outside the small set below, or a value ajv's meta-schema
 * would refuse, gets no check at all (`undefined`), so there is nothing to keep in step with
 * ajv beyond the meaning of these keywords.
 */

import { createRequire } from 'node:module';
import {
  createGuardedRegExpEngine,
  type GuardedRegExpEngine,
  type PatternLimits,
  type PatternWorkMeter,
} from './safeRegExp.js';

/** True: the data matches for certain; false: ask ajv. */
export type SimpleCheck = (data: unknown) => boolean;

const load = createRequire(import.meta.url);

/** A format as ajv-formats defines it: a pattern, a test, or either with the type it applies to. */
type FormatDefinition =
  | true
  | RegExp
  | ((data: never) => boolean)
  | { readonly type?: string; readonly async?: boolean; readonly validate?: unknown };

let formats: Readonly<Record<string, FormatDefinition | undefined>> | undefined;

/** ajv-formats' definitions of its full formats: what every ajv instance here has added. */
function formatDefinitions(): Readonly<Record<string, FormatDefinition | undefined>> {
  formats ??= (load('ajv-formats/dist/formats.js') as { fullFormats: Record<string, FormatDefinition> })
    .fullFormats;
  return formats;
}

/** Deeper or larger schemas are not "simple"; ajv takes them. */
const MAX_DEPTH = 8;
const MAX_KEYWORDS = 400;

const TYPE_CHECKS: Readonly<Record<string, SimpleCheck>> = {
  string: (d) => typeof d === 'string',
  // JSON data has no NaN or Infinity, but ajv refuses them, so this does too.
  number: (d) => typeof d === 'number' && Number.isFinite(d),
  integer: (d) => Number.isInteger(d),
  boolean: (d) => typeof d === 'boolean',
  null: (d) => d === null,
  object: isObject,
  array: (d) => Array.isArray(d),
};

/** Keywords that say something about the schema, not the data, with the type the meta-schemas want. */
const ANNOTATIONS: Readonly<Record<string, (value: unknown) => boolean>> = {
  title: (v) => typeof v === 'string',
  description: (v) => typeof v === 'string',
  $comment: (v) => typeof v === 'string',
  default: () => true,
  examples: (v) => Array.isArray(v),
  deprecated: (v) => typeof v === 'boolean',
  readOnly: (v) => typeof v === 'boolean',
  writeOnly: (v) => typeof v === 'boolean',
};

type NumberBound = 'minimum' | 'maximum' | 'exclusiveMinimum' | 'exclusiveMaximum';
const COUNT_BOUNDS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'];

export interface SimpleCheckOptions {
  /** The bounds patterns run under; absent: a schema with a `pattern` is not simple. */
  readonly patterns?: PatternLimits & {
    /** Estimated backtracking steps all patterns may take in one check (see safeRegExp.ts). */
    readonly workPerCheck: number;
  };
}

/** While a check is built: what is left of its keyword budget, and how patterns are bounded. */
interface Building {
  /** The whole schema, which local `$ref`s point into. */
  readonly root: Record<string, unknown>;
  keywords: number;
  readonly options: SimpleCheckOptions;
  /** Shared by the check's patterns; refilled as each check starts. */
  readonly work: PatternWorkMeter;
  /** The guarded engine patterns are compiled with, made at the first one. */
  engine?: GuardedRegExpEngine;
  usesPatterns: boolean;
}

/** The check for `schema` (its `$schema` and `$id` already taken off), or undefined when it is not simple. */
export function buildSimpleCheck(
  schema: Record<string, unknown>,
  options: SimpleCheckOptions = {},
): SimpleCheck | undefined {
  const building: Building = {
    root: schema,
    keywords: MAX_KEYWORDS,
    options,
    work: { remaining: 0 },
    usesPatterns: false,
  };
  let check: SimpleCheck;
  try {
    check = build(schema, 0, building);
  } catch (error) {
    if (error instanceof NotSimple) return undefined;
    throw error;
  }
  const allowance = options.patterns?.workPerCheck;
  if (!building.usesPatterns || allowance === undefined) return check;
  const { work } = building;
  return (data) => {
    work.remaining = allowance;
    return check(data);
  };
}

class NotSimple extends Error {}

function refuse(): never {
  throw new NotSimple();
}

function build(schema: unknown, depth: number, building: Building): SimpleCheck {
  if (schema === true) return accept;
  if (!isObject(schema) || depth > MAX_DEPTH) refuse();
  const checks: SimpleCheck[] = [];
  for (const key of Object.keys(schema)) {
    if (--building.keywords < 0) refuse();
    const value = schema[key];
    const annotation = ANNOTATIONS[key];
    if (annotation !== undefined) {
      if (!annotation(value)) refuse();
      continue;
    }
    switch (key) {
      case 'type':
        checks.push(typeCheck(value));
        break;
      case 'properties':
      case 'required':
      case 'additionalProperties':
        // Built once below, from all three together.
        break;
      case 'items': {
        const item = build(value, depth + 1, building);
        checks.push((d) => !Array.isArray(d) || d.every(item));
        break;
      }
      case 'enum':
        checks.push(enumCheck(value));
        break;
      case 'anyOf':
      case 'allOf': {
        // A branch's true is certain, so some branch true (anyOf) or every one (allOf) is too;
        // a branch that is not sure makes the whole "ask ajv", never a pass. (`oneOf` would
        // need certainty that the other branches fail; it is left to ajv.)
        if (!Array.isArray(value) || value.length === 0) refuse();
        const branches = value.map((branch: unknown) => build(branch, depth + 1, building));
        checks.push(
          key === 'anyOf'
            ? (d) => branches.some((branch) => branch(d))
            : (d) => branches.every((branch) => branch(d)),
        );
        break;
      }
      case 'format':
        checks.push(formatCheck(value));
        break;
      case 'pattern':
        checks.push(patternCheck(value, building));
        break;
      case '$ref':
        checks.push(refCheck(value, schema, depth, building));
        break;
      case 'definitions':
      case '$defs':
        // Only the whole schema's, which is where local references point. Each definition is
        // built, used or not, so one that ajv's meta-schema would refuse leaves the schema to it.
        if (depth !== 0 || !isObject(value)) refuse();
        for (const definition of Object.values(value)) build(definition, depth + 1, building);
        break;
      case 'const':
        if (!isScalar(value)) refuse();
        checks.push((d) => d === value);
        break;
      case 'minimum':
      case 'maximum':
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        checks.push(numberBound(key, value));
        break;
      default:
        if (!COUNT_BOUNDS.includes(key)) refuse();
        checks.push(countBound(key, value));
    }
  }
  if ('properties' in schema || 'required' in schema || 'additionalProperties' in schema)
    checks.push(objectCheck(schema, depth, building));
  return checks.length === 1 ? checks[0]! : (d) => checks.every((check) => check(d));
}

function typeCheck(value: unknown): SimpleCheck {
  if (typeof value === 'string') return TYPE_CHECKS[value] ?? refuse();
  if (!Array.isArray(value) || value.length === 0 || new Set(value).size !== value.length) refuse();
  const any = value.map((t: unknown) => (typeof t === 'string' && TYPE_CHECKS[t]) || refuse());
  return (d) => any.some((check) => check(d));
}

/**
 * `format` as ajv applies a definition: only to data of the format's type (strings unless it
 * says otherwise), by its pattern or its test (any truthy answer passes). Formats ajv-formats
 * does not define, and asynchronous ones, are left to ajv.
 */
function formatCheck(name: unknown): SimpleCheck {
  if (typeof name !== 'string' || !Object.hasOwn(formatDefinitions(), name)) refuse();
  const definition = formatDefinitions()[name] ?? refuse();
  if (definition === true) return accept;
  const { type = 'string', validate } =
    definition instanceof RegExp || typeof definition === 'function'
      ? { validate: definition }
      : definition.async === true
        ? refuse()
        : definition;
  if (type !== 'string' && type !== 'number') refuse();
  const test =
    validate instanceof RegExp
      ? (d: unknown) => validate.test(d as string)
      : typeof validate === 'function'
        ? (d: unknown) => Boolean((validate as (data: unknown) => unknown)(d))
        : refuse();
  return (d) => typeof d !== type || test(d);
}

/** Names of definitions a reference may point to: no escapes to decode, nothing to misread. */
const LOCAL_REF = /^#\/(definitions|\$defs)\/([A-Za-z0-9_.-]+)$/;

/**
 * A local `$ref` to one of the whole schema's definitions, checked as that definition. Beside
 * it only annotations are taken (what dialects do with other keywords next to `$ref` differs),
 * and a definition that refers to itself is not simple (building it runs past MAX_DEPTH).
 */
function refCheck(
  ref: unknown,
  schema: Record<string, unknown>,
  depth: number,
  building: Building,
): SimpleCheck {
  if (typeof ref !== 'string') refuse();
  if (Object.keys(schema).some((key) => key !== '$ref' && ANNOTATIONS[key] === undefined)) refuse();
  const [, holder = '', name = ''] = LOCAL_REF.exec(ref) ?? refuse();
  const definitions = building.root[holder];
  if (!isObject(definitions) || !Object.hasOwn(definitions, name)) refuse();
  return build(definitions[name], depth + 1, building);
}

/** `pattern` as ajv's guarded engine runs it: with the `u` flag, unanchored, within its bounds. */
function patternCheck(pattern: unknown, building: Building): SimpleCheck {
  const limits = building.options.patterns ?? refuse();
  if (typeof pattern !== 'string') refuse();
  // The engine ajv is given, on this check's own work allowance: it refuses here what it would
  // refuse there (too long, bad syntax, a shape that backtracks badly), and a string too long or
  // past the work allowed when testing, where "ask ajv" then meets the same refusal.
  building.engine ??= createGuardedRegExpEngine(limits, building.work);
  let tester: { test(s: string): boolean };
  try {
    tester = building.engine(pattern, 'u');
  } catch {
    refuse();
  }
  building.usesPatterns = true;
  return (d) => {
    if (typeof d !== 'string') return true;
    try {
      return tester.test(d);
    } catch {
      return false;
    }
  };
}

function enumCheck(value: unknown): SimpleCheck {
  // Objects and arrays in an enum are compared deeply by ajv; those schemas are left to it.
  if (!Array.isArray(value) || value.length === 0 || !value.every(isScalar)) refuse();
  const allowed = new Set<unknown>(value);
  return (d) => allowed.has(d);
}

function numberBound(key: NumberBound, limit: unknown): SimpleCheck {
  if (typeof limit !== 'number' || !Number.isFinite(limit)) refuse();
  const within =
    key === 'minimum'
      ? (n: number) => n >= limit
      : key === 'maximum'
        ? (n: number) => n <= limit
        : key === 'exclusiveMinimum'
          ? (n: number) => n > limit
          : (n: number) => n < limit;
  return (d) => typeof d !== 'number' || within(d);
}

function countBound(key: string, limit: unknown): SimpleCheck {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0) refuse();
  const least = key.startsWith('min');
  const within = (count: number): boolean => (least ? count >= limit : count <= limit);
  if (key.endsWith('Length')) return (d) => typeof d !== 'string' || within(codePoints(d));
  if (key.endsWith('Items')) return (d) => !Array.isArray(d) || within(d.length);
  return (d) => !isObject(d) || within(Object.keys(d).length);
}

function objectCheck(schema: Record<string, unknown>, depth: number, building: Building): SimpleCheck {
  const { properties = {}, required = [], additionalProperties = true } = schema;
  if (!isObject(properties)) refuse();
  if (!Array.isArray(required) || new Set(required).size !== required.length) refuse();
  const names: readonly string[] = required.map((r: unknown) => (typeof r === 'string' ? r : refuse()));
  const declared = new Map<string, SimpleCheck>();
  for (const [name, sub] of Object.entries(properties)) {
    // A property named like one of Object's own is left to ajv rather than reasoned about.
    if (name in Object.prototype) refuse();
    declared.set(name, build(sub, depth + 1, building));
  }
  const others: SimpleCheck | undefined =
    additionalProperties === true
      ? undefined
      : additionalProperties === false
        ? () => false
        : build(additionalProperties, depth + 1, building);
  return (d) => {
    if (!isObject(d)) return true;
    for (const name of names) if (!Object.hasOwn(d, name)) return false;
    for (const key of Object.keys(d)) {
      const check = declared.get(key) ?? others;
      if (check !== undefined && !check(d[key])) return false;
    }
    return true;
  };
}

function isObject(d: unknown): d is Record<string, unknown> {
  return typeof d === 'object' && d !== null && !Array.isArray(d);
}

function isScalar(v: unknown): v is string | number | boolean | null {
  return (
    v === null ||
    typeof v === 'string' ||
    typeof v === 'boolean' ||
    (typeof v === 'number' && Number.isFinite(v))
  );
}

function accept(): boolean {
  return true;
}

/** A string's length as JSON Schema counts it (and ajv does): a surrogate pair is one character. */
function codePoints(s: string): number {
  let count = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      count--;
      i++;
    }
  }
  return count;
}
