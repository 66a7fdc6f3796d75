/**
 * Compiles the JSON Schemas of rules' `arguments` conditions, once, when a policy file is loaded.
 *
 * The schemas come from the user's own policy file, so they are trusted more than an upstream's
 * output schema, but the data they run on is a tool call's arguments, which the model writes (and
 * a prompt injection can steer). So the same guards as result repair's output validator apply
 * (FIELD_NOTES "Traps"): size and depth bounds and no remote `$ref` (schemaBounds.ts), and a
 * guarded regex engine that refuses catastrophic patterns and strings too long to test
 * (safeRegExp.ts). Unlike there, every problem here is the user's to fix: it is reported at load
 * time with its place in the file, and unknown keywords are errors (with a did-you-mean), because
 * a misspelt keyword would otherwise be ignored and the condition would match every call.
 *
 * outputSchemaValidator.ts's `check` does not fit: it compiles lazily, reports problems as
 * "unverifiable" with output-schema wording, and ignores unknown keywords.
 *
 * Longer than most modules because the compile, its bounds and the verdicts it gives are one
 * contract that policies, `policy explain` and the generated validators must agree on.
 */
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { didYouMean } from '../../lib/didYouMean.js';
import type { KeyPath } from '../../config/interpolate.js';
import { translateErrors, type SchemaProblem } from '../../config/schemaErrors.js';
import type { Dialect } from '../../lib/schema/dialectAjv.js';
import { createConditionAjv } from './conditionAjv.js';
import { dialectChecks, type DialectChecks } from '../../lib/schema/dialectChecks.js';
import { DATA_KEYWORDS, NAME_MAP_KEYWORDS } from '../../lib/schema/keywords.js';
import { findSchemaBoundProblem } from '../../lib/schema/schemaBounds.js';
import {
  analysePattern,
  createGuardedRegExpEngine,
  UnsafePatternError,
  type PatternWorkMeter,
} from '../../lib/schema/safeRegExp.js';
import type { ArgumentCondition, ArgumentVerdict } from './types.js';

/**
 * Hand-written conditions are tiny (a few properties with a pattern or an enum); these bounds
 * are the output validator's, which leave generated schemas ample room. Patterns may run on
 * strings up to 1 MiB (a file's content, say): far more than an output schema's 4096, because a
 * user who writes a pattern on `content` means it, and the work budget below still bounds the
 * patterns whose backtracking grows faster than linearly (a quadratic one stops at about 7000
 * characters).
 */
export const ARGUMENT_SCHEMA_LIMITS = Object.freeze({
  maxSchemaBytes: 256 * 1024,
  maxSchemaDepth: 128,
  maxSchemaNodes: 20_000,
  maxPatternLength: 1000,
  maxStringLengthForPattern: 1024 * 1024,
});

/** Estimated backtracking steps of all patterns in one check: about 30 ms of matching. */
const PATTERN_WORK_PER_CHECK = 50_000_000;

/** `why` texts quote ajv messages, which quote schema values; keep them readable. */
const MAX_WHY_LENGTH = 300;

const DIALECT_URIS: readonly [RegExp, Dialect][] = [
  [/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/, 'draft-07'],
  [/^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/, '2019-09'],
  [/^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/, '2020-12'],
];

/**
 * Known to ajv but refused: `$async` makes `validate` return a promise, which is truthy, so the
 * condition would match every call.
 */
const REFUSED_KEYWORDS = new Set(['$async']);

/**
 * Keywords ajv cannot fail to compile once the load-time checks passed (meta-schema, known
 * keywords and formats, usable patterns): nothing in them refers elsewhere, and ajv's strict
 * mode has no complaint about any of them with DIALECT_CHECK_AJV_OPTIONS. A condition made of these
 * alone, which is what conditions usually are, is compiled when a call first needs it, so that
 * neither ajv (about 35 ms and 11 MB) nor the compile is paid at start-up. Any other
 * keyword (`$ref`, `if`, `patternProperties`, `contains`, ...) can fail at compile time (an
 * unresolvable reference, one of strict mode's "ignored keyword" errors), so its condition is
 * compiled as the file loads and any failure is reported there, with its place. A test compiles
 * generated conditions of these keywords to hold the list to its promise.
 */
export const COMPILE_LATER_KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'dependentRequired',
  'pattern',
  'minLength',
  'maxLength',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'uniqueItems',
  'not',
  'allOf',
  'anyOf',
  'oneOf',
  'title',
  'description',
  '$comment',
  'examples',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
]);

export type CompiledArguments =
  | { readonly kind: 'ready'; readonly condition: ArgumentCondition }
  /** Problems located by key path inside the schema (the caller prefixes the rule's path). */
  | { readonly kind: 'invalid'; readonly problems: readonly SchemaProblem[] };

export interface ArgumentSchemaCompiler {
  compile(schema: Readonly<Record<string, unknown>>): CompiledArguments;
}

/**
 * A compiler for the conditions of one load of the policies. Its ajv instances (one per
 * dialect, made when first needed) live as long as the policies compiled with them, and are
 * dropped with them on reload.
 */
export function createArgumentSchemaCompiler(): ArgumentSchemaCompiler {
  const instances = new Map<Dialect, Ajv>();
  // One meter for the instance's engine, refilled before each check: checks never interleave.
  const meter: PatternWorkMeter = { remaining: PATTERN_WORK_PER_CHECK };

  function instanceFor(dialect: Dialect): Ajv {
    let ajv = instances.get(dialect);
    if (ajv === undefined) {
      ajv = createConditionAjv(dialect, {
        // Checked against the meta-schema when the file was loaded (`dialectChecks`).
        validateSchema: false,
        code: { regExp: createGuardedRegExpEngine(ARGUMENT_SCHEMA_LIMITS, meter) },
      });
      instances.set(dialect, ajv);
    }
    return ajv;
  }

  /** ajv's function for `body` (a condition without `$schema` and `$id`); throws what ajv throws. */
  function compileNow(dialect: Dialect, body: Readonly<Record<string, unknown>>): ValidateFunction {
    const ajv = instanceFor(dialect);
    try {
      return ajv.compile(body);
    } finally {
      ajv.removeSchema(body);
    }
  }

  function compile(schema: Readonly<Record<string, unknown>>): CompiledArguments {
    const checked = checkSchema(schema);
    if ('problems' in checked) return { kind: 'invalid', problems: checked.problems };
    const { dialect, body } = checked;
    let validate: ValidateFunction | undefined;
    if (!checked.compileLater) {
      try {
        validate = compileNow(dialect, body);
      } catch (error) {
        const message = `invalid JSON Schema: ${describe(error)}`;
        return { kind: 'invalid', problems: [{ path: [], at: 'key', message }] };
      }
    }
    const compiled = (): ValidateFunction => (validate ??= compileNow(dialect, body));
    return { kind: 'ready', condition: conditionOf(schema, compiled, meter) };
  }

  return { compile };
}

/**
 * The schema's problems, with their places: over the bounds, an unsupported dialect, unknown
 * keywords and formats, unusable patterns, and the meta-schema's first error. Without problems,
 * its dialect and its body (without `$schema` and `$id`), and whether compiling can wait.
 */
function checkSchema(schema: Readonly<Record<string, unknown>>):
  | { readonly problems: SchemaProblem[] }
  | {
      readonly dialect: Dialect;
      readonly body: Readonly<Record<string, unknown>>;
      readonly compileLater: boolean;
    } {
  const tooBig = findSchemaBoundProblem(schema, ARGUMENT_SCHEMA_LIMITS);
  if (tooBig !== null)
    return { problems: [{ path: [], at: 'key', message: `the arguments schema cannot be used: ${tooBig}` }] };
  const dialect = dialectOf(schema['$schema']);
  if (typeof dialect !== 'string')
    return { problems: [{ path: ['$schema'], at: 'value', message: dialect.problem }] };
  const checks = dialectChecks(dialect);
  // `$schema` chose the dialect; `$id` goes so `#...` references resolve within this schema.
  const { $schema: _dialect, $id: _id, ...body } = schema;
  const { problems: found, compileLater } = checkKeywords(schema, checks);
  const metaErrors = checks.validateSchema(body);
  if (metaErrors.length > 0) {
    // Only its first error (ajv stops there): reported unless a better message has the place.
    const reported = new Set(found.map((problem) => JSON.stringify(problem.path)));
    for (const problem of metaSchemaProblems(metaErrors, body)) {
      if (!reported.has(JSON.stringify(problem.path))) found.push(problem);
    }
  }
  return found.length > 0 ? { problems: found } : { dialect, body, compileLater };
}

/** The condition a compiled schema checks arguments with. */
function conditionOf(
  schema: Readonly<Record<string, unknown>>,
  compiled: () => ValidateFunction,
  meter: PatternWorkMeter,
): ArgumentCondition {
  // `explain` false: a mismatch is the shared verdict without its text (see `holds`).
  const check = (args: Readonly<Record<string, unknown>>, explain: boolean): ArgumentVerdict => {
    let validate: ValidateFunction;
    try {
      validate = compiled();
    } catch (error) {
      // Not expected (COMPILE_LATER_KEYWORDS says why); if it happens, the rule cannot be checked.
      return { kind: 'unverifiable', why: `the condition could not be compiled: ${describe(error)}` };
    }
    meter.remaining = PATTERN_WORK_PER_CHECK;
    try {
      if (validate(args) === true) return { kind: 'match' };
      return explain ? { kind: 'mismatch', why: mismatchText(validate.errors) } : UNEXPLAINED_MISMATCH;
    } catch (error) {
      // A pattern refused to run on a long string, or a recursive schema met too deep data.
      const why = error instanceof RangeError ? 'they nest too deeply to check' : describe(error);
      return { kind: 'unverifiable', why };
    }
  };
  const test = (args: Readonly<Record<string, unknown>>) => check(args, true);
  const holds = (args: Readonly<Record<string, unknown>>) => check(args, false);
  return { schema, test, holds };
}

/** 2020-12 when absent, as MCP says of tool schemas; drafts ajv 8 cannot run (04, 06) are errors. */
function dialectOf($schema: unknown): Dialect | { problem: string } {
  if ($schema === undefined) return '2020-12';
  if (typeof $schema === 'string') {
    for (const [uri, dialect] of DIALECT_URIS) if (uri.test($schema)) return dialect;
  }
  return {
    problem:
      'unsupported $schema: use "https://json-schema.org/draft/2020-12/schema" (the default), ' +
      '"https://json-schema.org/draft/2019-09/schema" or "http://json-schema.org/draft-07/schema#"',
  };
}

/**
 * Unknown keywords and formats and unusable patterns, all of them with their places (ajv would
 * report only the first, without saying where it is), and whether every keyword used is one of
 * COMPILE_LATER_KEYWORDS.
 */
function checkKeywords(
  schema: Readonly<Record<string, unknown>>,
  checks: DialectChecks,
): { problems: SchemaProblem[]; compileLater: boolean } {
  const keywords = checks.keywords.filter((keyword) => !REFUSED_KEYWORDS.has(keyword));
  const known = new Set(keywords);
  const { formats } = checks;
  const problems: SchemaProblem[] = [];
  let compileLater = true;
  // Iterative, and over a schema already bounded in size and depth.
  const stack: { value: unknown; path: KeyPath; role: 'schema' | 'names' }[] = [
    { value: schema, path: [], role: 'schema' },
  ];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value, path, role } = item;
    if (Array.isArray(value)) {
      // Lists of schemas (allOf, prefixItems, draft-07 items); lists of data are skipped below.
      value.forEach((element, index) => stack.push({ value: element, path: [...path, index], role }));
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      const at = [...path, key];
      if (role === 'names') {
        if (path.at(-1) === 'patternProperties') problems.push(...patternProblems(key, at, 'key'));
        stack.push({ value: child, path: at, role: 'schema' });
        continue;
      }
      // `$schema` and `$id` at the top are taken off before compiling.
      if (!COMPILE_LATER_KEYWORDS.has(key) && !(path.length === 0 && (key === '$schema' || key === '$id')))
        compileLater = false;
      if (!known.has(key)) {
        const suggestion = didYouMean(key, keywords);
        const message = REFUSED_KEYWORDS.has(key)
          ? `"${key}" is not supported in policy conditions`
          : `unknown JSON Schema keyword "${key}"${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}`;
        problems.push({ path: at, at: 'key', message });
        continue;
      }
      // The 2019-09 and 2020-12 meta-schemas allow it, but ajv refuses to compile it.
      if (key === 'enum' && Array.isArray(child) && child.length === 0)
        problems.push({ path: at, at: 'value', message: 'an enum must list at least one value' });
      if (DATA_KEYWORDS.has(key)) continue;
      if (key === 'pattern' && typeof child === 'string')
        problems.push(...patternProblems(child, at, 'value'));
      if (key === 'format' && typeof child === 'string' && !formats.includes(child)) {
        const suggestion = didYouMean(child, formats);
        problems.push({
          path: at,
          at: 'value',
          message:
            `unknown format "${child}"` +
            (suggestion === undefined
              ? `; known formats are: ${formats.join(', ')}`
              : ` (did you mean "${suggestion}"?)`),
        });
      }
      // `required`, `type` and the like hold strings or lists of strings: nothing to walk.
      if (typeof child === 'object' && child !== null) {
        stack.push({ value: child, path: at, role: NAME_MAP_KEYWORDS.has(key) ? 'names' : 'schema' });
      }
    }
  }
  // In no particular order: the loader sorts all of a file's issues by place.
  return { problems, compileLater };
}

/** What is wrong with a `pattern` (or `patternProperties` key), as ajv will run it: with the `u` flag. */
function patternProblems(pattern: string, path: KeyPath, at: 'key' | 'value'): SchemaProblem[] {
  const shown = JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 79)}…` : pattern);
  if (pattern.length > ARGUMENT_SCHEMA_LIMITS.maxPatternLength) {
    const message = `pattern ${shown} is longer than the ${ARGUMENT_SCHEMA_LIMITS.maxPatternLength} characters allowed`;
    return [{ path, at, message }];
  }
  try {
    new RegExp(pattern, 'u');
  } catch (error) {
    const reason =
      error instanceof Error ? error.message.replace(/^Invalid regular expression: \/.*\/u: /s, '') : '';
    return [
      { path, at, message: `not a valid regular expression (JavaScript, with the "u" flag): ${reason}` },
    ];
  }
  const analysis = analysePattern(pattern, 'u');
  if (analysis.kind === 'refused') {
    const message = `pattern ${shown} is refused: it ${analysis.reason}; the model controls the text it runs on`;
    return [{ path, at, message }];
  }
  return [];
}

/**
 * The first meta-schema error, in words. A failed `anyOf` (e.g. `type: strng`: neither a type
 * name nor a list) is explained by its first branch's error, which carries the allowed values.
 */
function metaSchemaProblems(errors: readonly ErrorObject[], body: unknown): SchemaProblem[] {
  const first = errors.find((error) => error.keyword !== 'anyOf' && error.keyword !== 'oneOf') ?? errors[0];
  if (first === undefined) return [{ path: [], at: 'key', message: 'invalid JSON Schema' }];
  const problems = translateErrors([first], body);
  return problems.length > 0
    ? problems
    : [{ path: [], at: 'key', message: `invalid JSON Schema: ${first.message ?? ''}` }];
}

const UNEXPLAINED_MISMATCH: ArgumentVerdict = Object.freeze({ kind: 'mismatch', why: '' });

function mismatchText(errors: ErrorObject[] | null | undefined): string {
  const error = errors?.[0];
  if (error === undefined) return 'the arguments do not match';
  // ajv's message for this one does not name the property; the reader needs it.
  const named =
    error.keyword === 'additionalProperties'
      ? ` (${JSON.stringify(error.params['additionalProperty'])})`
      : '';
  return truncate(`arguments${error.instancePath} ${error.message ?? 'do not match'}${named}`);
}

function describe(error: unknown): string {
  if (error instanceof UnsafePatternError) return truncate(error.message);
  return truncate(error instanceof Error ? error.message : String(error));
}

function truncate(text: string): string {
  return text.length <= MAX_WHY_LENGTH ? text : `${text.slice(0, MAX_WHY_LENGTH - 1)}…`;
}
