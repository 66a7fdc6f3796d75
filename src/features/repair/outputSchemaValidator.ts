/**
 * Validation of `structuredContent` against a tool's `outputSchema`, for result repair.
 *
 * The schema comes from an upstream server and is not trusted (FIELD_NOTES "Traps"): ajv
 * compiles schemas into code and would happily recurse through a 5000-deep schema, run a
 * catastrophic `pattern`, or try to resolve a remote `$ref`. So every schema is bounded before
 * compiling (schemaBounds.ts), every pattern goes through a guarded engine (safeRegExp.ts), and
 * anything we cannot judge safely is reported as `unverifiable` rather than guessed at: repair
 * then leaves the result alone. `check` never throws.
 */
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { createDialectAjv, type Dialect } from '../../lib/schema/dialectAjv.js';
import { findSchemaBoundProblem } from '../../lib/schema/schemaBounds.js';
import {
  createGuardedRegExpEngine,
  UnsafePatternError,
  type PatternWorkMeter,
} from '../../lib/schema/safeRegExp.js';

export type SchemaVerdict =
  { kind: 'valid' } | { kind: 'invalid'; message: string } | { kind: 'unverifiable'; reason: string };

export interface OutputValidatorLimits {
  /** Approximate JSON size of one outputSchema. */
  maxSchemaBytes: number;
  /** JSON nesting depth of one outputSchema (objects and arrays both count). */
  maxSchemaDepth: number;
  /** JSON values (objects, arrays, primitives) in one outputSchema. */
  maxSchemaNodes: number;
  /** Characters of one `pattern` / `patternProperties` key. */
  maxPatternLength: number;
  /** Longest string a schema pattern is run on; longer ones make the verdict unverifiable. */
  maxStringLengthForPattern: number;
}

/**
 * Real output schemas are small: hand-written ones a few hundred bytes, generated ones (zod,
 * pydantic, OpenAPI) rarely over 50 KB, 20 levels of JSON nesting or a few thousand nodes. The
 * defaults leave several times that headroom while keeping one compile in the low milliseconds
 * and far from ajv's recursion limits. Patterns in schemas are identifiers, dates, slugs and
 * e-mail-like checks, well under 1000 characters, run on short strings; 4096 characters bounds
 * the polynomial backtracking (e.g. `\s*\s*x`) the shape check in safeRegExp.ts does not catch
 * to a few milliseconds per string.
 */
export const DEFAULT_OUTPUT_VALIDATOR_LIMITS: OutputValidatorLimits = Object.freeze({
  maxSchemaBytes: 256 * 1024,
  maxSchemaDepth: 128,
  maxSchemaNodes: 20_000,
  maxPatternLength: 1000,
  maxStringLengthForPattern: 4096,
});

export interface OutputValidatorStats {
  /** Schemas compiled (or refused) so far: once per distinct `outputSchema` object. */
  readonly compiled: number;
  /** ajv instances created so far (lazily, per dialect, renewed after many compiles). */
  readonly ajvInstances: number;
}

/** What repair needs: a fake with just `check` will do in tests. */
export interface OutputValidator {
  check(tool: { outputSchema?: unknown }, data: unknown): SchemaVerdict;
}

type CompiledSchema =
  { kind: 'ready'; validate: ValidateFunction } | { kind: 'unverifiable'; reason: string };

/**
 * ajv keeps every schema it compiled, and the generated function, in its instance forever (its
 * code-generation scope). A long-running gateway sees new tool definitions on every reconnect
 * or rug pull, so an instance is replaced after this many compiles; validators already compiled
 * keep working, they hold what they need.
 */
const COMPILES_PER_INSTANCE = 500;

/**
 * Estimated backtracking steps all patterns together may take in one `check` (see
 * safeRegExp.ts): about 30 ms of quadratic matching, or 50 MB of text for linear patterns. Bounds
 * a result that repeats one long string thousands of times, which the per-string limit cannot.
 */
const PATTERN_WORK_PER_CHECK = 50_000_000;

/** Keep notes readable: an ajv message quotes schema values, which the upstream controls. */
const MAX_MESSAGE_LENGTH = 300;

export function createOutputValidator(
  options: { limits?: Partial<OutputValidatorLimits> } = {},
): OutputValidator & { readonly stats: OutputValidatorStats } {
  const limits: OutputValidatorLimits = { ...DEFAULT_OUTPUT_VALIDATOR_LIMITS, ...options.limits };
  // Keyed by the outputSchema object: a tool definition is compiled once however often it is
  // called, and dropped with the definition when the catalog replaces it.
  const cache = new WeakMap<object, CompiledSchema>();
  const instances = new Map<Dialect, { ajv: Ajv; compiles: number }>();
  const stats = { compiled: 0, ajvInstances: 0 };
  const patternWork: PatternWorkMeter = { remaining: PATTERN_WORK_PER_CHECK };

  function instanceFor(dialect: Dialect): { ajv: Ajv; compiles: number } {
    let entry = instances.get(dialect);
    if (entry === undefined || entry.compiles >= COMPILES_PER_INSTANCE) {
      const ajvOptions: Options = {
        // Upstream schemas carry annotations and vendor keywords; the SDK's own host check is
        // non-strict too, and refusing them would only make more schemas unverifiable.
        strict: false,
        // One error is all the note reports, and stopping at the first is cheaper.
        allErrors: false,
        // A schema that is not valid for its dialect compiles to something we cannot trust.
        validateSchema: true,
        // Compiling must not register the schema under its `$id` in the shared instance, where
        // another tool's schema could collide with it or `$ref` it.
        addUsedSchema: false,
        // `required: ["constructor"]` must not be satisfied by Object.prototype.
        ownProperties: true,
        // ajv logs to the console by default; stdout carries JSON-RPC and nothing else.
        logger: false,
        code: { regExp: createGuardedRegExpEngine(limits, patternWork) },
        // No `loadSchema`: ajv then never fetches anything, a remote `$ref` just fails to compile.
      };
      entry = { ajv: createDialectAjv(dialect, ajvOptions), compiles: 0 };
      instances.set(dialect, entry);
      stats.ajvInstances++;
    }
    return entry;
  }

  function compile(schema: Record<string, unknown>): CompiledSchema {
    stats.compiled++;
    const tooBig = findSchemaBoundProblem(schema, limits);
    if (tooBig !== null) {
      return { kind: 'unverifiable', reason: `the outputSchema is not checked: ${tooBig}` };
    }
    const dialect = dialectOf(schema.$schema);
    if (typeof dialect !== 'string') return { kind: 'unverifiable', reason: dialect.unsupported };
    // `$schema` has chosen the instance, whose default meta-schema is that dialect's (this also
    // accepts the https and no-"#" spellings ajv itself would not look up). `$id` goes so the
    // schema's own `#...` references resolve within it and never against an id another tool used.
    const { $schema: _dialect, $id: _id, ...body } = schema;
    const entry = instanceFor(dialect);
    const refsBefore = new Set(Object.keys(entry.ajv.refs));
    try {
      return { kind: 'ready', validate: entry.ajv.compile(body) };
    } catch (error) {
      return { kind: 'unverifiable', reason: `the outputSchema could not be compiled: ${describe(error)}` };
    } finally {
      entry.compiles++;
      // Drop what compiling left in the shared instance: its cache entry, and the ids of nested
      // `$id` subschemas, which ajv registers instance-wide even with `addUsedSchema: false`.
      entry.ajv.removeSchema(body);
      const refs = entry.ajv.refs as Record<string, unknown>;
      for (const key of Object.keys(refs)) if (!refsBefore.has(key)) delete refs[key];
    }
  }

  function check(tool: { outputSchema?: unknown }, data: unknown): SchemaVerdict {
    try {
      const schema = tool.outputSchema;
      if (schema === undefined || schema === true) return { kind: 'valid' };
      if (schema === false) {
        return { kind: 'invalid', message: 'the outputSchema is `false`, which nothing matches' };
      }
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
        return { kind: 'unverifiable', reason: 'the outputSchema is not a JSON Schema object' };
      }
      let compiled = cache.get(schema);
      if (compiled === undefined) {
        compiled = compile(schema as Record<string, unknown>);
        cache.set(schema, compiled);
      }
      if (compiled.kind === 'unverifiable') return compiled;
      patternWork.remaining = PATTERN_WORK_PER_CHECK;
      if (compiled.validate(data) === true) return { kind: 'valid' };
      return { kind: 'invalid', message: errorMessage(compiled.validate.errors) };
    } catch (error) {
      // Thrown while validating: a pattern refused to run on a long string, or a recursive
      // schema recursed too deep on deep data. We do not know the answer, so we do not guess.
      return { kind: 'unverifiable', reason: `the data could not be checked: ${describe(error)}` };
    }
  }

  return { check, stats };
}

const DIALECT_URIS: readonly [RegExp, Dialect][] = [
  [/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/, 'draft-07'],
  [/^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/, '2019-09'],
  [/^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/, '2020-12'],
];

/** 2020-12 when absent, as the MCP spec says; drafts ajv 8 cannot run (04, 06) are unsupported. */
function dialectOf($schema: unknown): Dialect | { unsupported: string } {
  if ($schema === undefined) return '2020-12';
  if (typeof $schema !== 'string') {
    return { unsupported: 'the outputSchema has a $schema that is not a string' };
  }
  for (const [uri, dialect] of DIALECT_URIS) if (uri.test($schema)) return dialect;
  return {
    unsupported: `the outputSchema's $schema ${JSON.stringify($schema.slice(0, 200))} is not a supported dialect (draft-07, 2019-09 or 2020-12)`,
  };
}

function errorMessage(errors: ErrorObject[] | null | undefined): string {
  const error = errors?.[0];
  if (error === undefined) return 'it does not match';
  // ajv's message for additionalProperties does not say which property; the model needs that.
  const extra =
    error.keyword === 'additionalProperties' ? ` (${JSON.stringify(error.params.additionalProperty)})` : '';
  return truncate(`structuredContent${error.instancePath} ${error.message ?? 'does not match'}${extra}`);
}

function describe(error: unknown): string {
  if (error instanceof UnsafePatternError) return truncate(error.message);
  if (error instanceof RangeError) return 'it nests too deeply';
  return truncate(error instanceof Error ? error.message : String(error));
}

function truncate(text: string): string {
  return text.length <= MAX_MESSAGE_LENGTH ? text : `${text.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}
