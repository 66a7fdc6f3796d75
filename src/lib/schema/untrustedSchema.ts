/**
 * Compiling JSON Schemas that come from an upstream server (a tool's `inputSchema` or
 * `outputSchema`), which the gateway does not trust. Shared by result repair (output schemas) and
 * input validation (input schemas), so both refuse the same dangerous schemas in the same words.
 *
 * ajv compiles schemas into code and would happily recurse through a 5000-deep schema, run a
 * catastrophic `pattern`, or try to resolve a remote `$ref`. So every schema is bounded before
 * compiling (schemaBounds.ts), every pattern goes through a guarded engine (safeRegExp.ts), and a
 * schema we cannot compile safely is reported as `unverifiable` with the reason; what that means
 * (leave the result alone, let the call through unchecked) is the caller's decision.
 */
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { createDialectAjv, type Dialect } from './dialectAjv.js';
import { dialectChecks } from './dialectChecks.js';
import { findSchemaBoundProblem } from './schemaBounds.js';
import { createGuardedRegExpEngine, UnsafePatternError, type PatternWorkMeter } from './safeRegExp.js';
import { buildSimpleCheck, type SimpleCheck } from './simpleSchema.js';

export interface UntrustedSchemaLimits {
  /** Approximate JSON size of one schema. */
  maxSchemaBytes: number;
  /** JSON nesting depth of one schema (objects and arrays both count). */
  maxSchemaDepth: number;
  /** JSON values (objects, arrays, primitives) in one schema. */
  maxSchemaNodes: number;
  /** Characters of one `pattern` / `patternProperties` key. */
  maxPatternLength: number;
  /** Longest string a schema pattern is run on; a longer one makes that validation throw. */
  maxStringLengthForPattern: number;
}

/**
 * Real tool schemas are small: hand-written ones a few hundred bytes, generated ones (zod,
 * pydantic, OpenAPI) rarely over 50 KB, 20 levels of JSON nesting or a few thousand nodes. The
 * defaults leave several times that headroom while keeping one compile in the low milliseconds
 * and far from ajv's recursion limits. Patterns in schemas are identifiers, dates, slugs and
 * e-mail-like checks, well under 1000 characters, run on short strings; 4096 characters bounds
 * the polynomial backtracking (e.g. `\s*\s*x`) the shape check in safeRegExp.ts does not catch
 * to a few milliseconds per string.
 */
export const DEFAULT_UNTRUSTED_SCHEMA_LIMITS: UntrustedSchemaLimits = Object.freeze({
  maxSchemaBytes: 256 * 1024,
  maxSchemaDepth: 128,
  maxSchemaNodes: 20_000,
  maxPatternLength: 1000,
  maxStringLengthForPattern: 4096,
});

export type CompiledSchema =
  { kind: 'ready'; validate: ValidateFunction } | { kind: 'unverifiable'; reason: string };

export interface UntrustedSchemaStats {
  /** Schemas compiled (or refused) so far: once per distinct schema object while it is cached. */
  readonly compiled: number;
  /** ajv instances created so far (lazily, per dialect, renewed after many compiles). */
  readonly ajvInstances: number;
}

export interface UntrustedSchemaCompiler {
  /**
   * The schema compiled, from the cache when this very object was compiled before. Keyed by the
   * schema object: a tool's schema is compiled once however often it is used, and dropped with
   * its definition when the catalog replaces it. Never throws.
   */
  compiled(schema: Record<string, unknown>): CompiledSchema;
  /**
   * A check that vouches for data without ajv, when the schema is simple enough
   * (simpleSchema.ts); undefined when it is not. Its `false` means "ask `compiled`". Cached like
   * `compiled`. Never throws.
   */
  simple(schema: Record<string, unknown>): SimpleCheck | undefined;
  /**
   * The next piece of readying what compiling `schema` needs: loading its dialect's meta-schema
   * check (which `compiled` checks every schema against), then making the ajv instance; undefined
   * once both are done or the dialect is unsupported. Each takes milliseconds in one piece on a
   * fresh process, so work done ahead can take them one at a time. ajv must be loaded. Never
   * throws.
   */
  readyStep(schema: Record<string, unknown>): (() => void) | undefined;
  /**
   * Refills the work allowance all patterns share during one validation (see safeRegExp.ts).
   * Call it before each validation: setting one number, no allocation.
   */
  beginValidation(): void;
  readonly stats: UntrustedSchemaStats;
}

export interface UntrustedSchemaCompilerOptions {
  /** How messages name the schema: `outputSchema`, `inputSchema`. */
  readonly what: string;
  readonly limits?: Partial<UntrustedSchemaLimits>;
  /**
   * Bound on the cache: after this many compiles it starts over (schemas still in use are then
   * compiled once more). The cache holds weak keys, so it shrinks as definitions are replaced,
   * but a WeakMap cannot be counted; this keeps an upstream that relists new definitions
   * forever from holding more than this many compiled validators alive. Default 2000.
   */
  readonly maxCached?: number;
}

/**
 * ajv keeps every schema it compiled, and the generated function, in its instance forever (its
 * code-generation scope). A long-running gateway sees new tool definitions on every reconnect
 * or rug pull, so an instance is replaced after this many compiles; validators already compiled
 * keep working, they hold what they need.
 */
const COMPILES_PER_INSTANCE = 500;

/**
 * Estimated backtracking steps all patterns together may take in one validation (see
 * safeRegExp.ts): about 30 ms of quadratic matching, or 50 MB of text for linear patterns. Bounds
 * data that repeats one long string thousands of times, which the per-string limit cannot.
 */
const PATTERN_WORK_PER_VALIDATION = 50_000_000;

/** Cached for a schema that has no simple check, so it is not looked at again. */
const NOT_SIMPLE = Symbol('not simple');

/** Keep messages readable: an ajv message quotes schema values, which the upstream controls. */
const MAX_MESSAGE_LENGTH = 300;

export function createUntrustedSchemaCompiler(
  options: UntrustedSchemaCompilerOptions,
): UntrustedSchemaCompiler {
  const { what } = options;
  const limits: UntrustedSchemaLimits = { ...DEFAULT_UNTRUSTED_SCHEMA_LIMITS, ...options.limits };
  const maxCached = options.maxCached ?? 2000;
  const cache = new BoundedWeakCache<CompiledSchema>(maxCached);
  const simpleCache = new BoundedWeakCache<SimpleCheck | typeof NOT_SIMPLE>(maxCached);
  const instances = new Map<Dialect, Instance>();
  const stats = { compiled: 0, ajvInstances: 0 };
  const patternWork: PatternWorkMeter = { remaining: PATTERN_WORK_PER_VALIDATION };

  function instanceFor(dialect: Dialect): Instance {
    let entry = instances.get(dialect);
    if (entry === undefined || entry.compiles >= COMPILES_PER_INSTANCE) {
      entry = {
        ajv: createDialectAjv(dialect, untrustedAjvOptions(limits, patternWork)),
        compiles: 0,
      };
      instances.set(dialect, entry);
      stats.ajvInstances++;
    }
    return entry;
  }

  function compile(schema: Record<string, unknown>): CompiledSchema {
    stats.compiled++;
    const tooBig = findSchemaBoundProblem(schema, limits);
    if (tooBig !== null) return { kind: 'unverifiable', reason: `the ${what} is not checked: ${tooBig}` };
    const dialect = dialectOf(schema.$schema, what);
    if (typeof dialect !== 'string') return { kind: 'unverifiable', reason: dialect.unsupported };
    // `$schema` has chosen the instance, whose default meta-schema is that dialect's (this also
    // accepts the https and no-"#" spellings ajv itself would not look up). `$id` goes so the
    // schema's own `#...` references resolve within it and never against an id another tool used.
    const { $schema: _dialect, $id: _id, ...body } = schema;
    const invalid = metaSchemaProblem(dialect, body);
    if (invalid !== undefined)
      return { kind: 'unverifiable', reason: `the ${what} could not be compiled: ${invalid}` };
    return compileIn(instanceFor(dialect), body, what);
  }

  function simpleOf(schema: Record<string, unknown>): SimpleCheck | undefined {
    // What ajv would refuse to compile is unverifiable, not valid: such schemas get no check.
    if (findSchemaBoundProblem(schema, limits) !== null) return undefined;
    if (typeof dialectOf(schema.$schema, what) !== 'string') return undefined;
    const { $schema: _dialect, $id: _id, ...body } = schema;
    return buildSimpleCheck(body, {
      patterns: { ...limits, workPerCheck: PATTERN_WORK_PER_VALIDATION },
    });
  }

  return {
    simple(schema) {
      const known = simpleCache.get(schema);
      if (known !== undefined) return known === NOT_SIMPLE ? undefined : known;
      let check: SimpleCheck | undefined;
      try {
        check = simpleOf(schema);
      } catch {
        check = undefined;
      }
      simpleCache.set(schema, check ?? NOT_SIMPLE);
      return check;
    },
    compiled(schema) {
      let result = cache.get(schema);
      if (result !== undefined) return result;
      try {
        result = compile(schema);
      } catch (error) {
        // Walking or compiling threw something unforeseen: unverifiable, never a crash.
        result = {
          kind: 'unverifiable',
          reason: `the ${what} could not be compiled: ${describeSchemaError(error)}`,
        };
      }
      cache.set(schema, result);
      return result;
    },
    readyStep(schema) {
      const dialect = dialectOf(schema.$schema, what);
      if (typeof dialect !== 'string') return undefined;
      const loadMeta = dialectChecks(dialect).loadStep();
      if (loadMeta !== undefined) return loadMeta;
      const entry = instances.get(dialect);
      return entry === undefined || entry.compiles >= COMPILES_PER_INSTANCE
        ? () => void instanceFor(dialect)
        : undefined;
    },
    beginValidation() {
      patternWork.remaining = PATTERN_WORK_PER_VALIDATION;
    },
    stats,
  };
}

/**
 * A cache keyed by schema objects that starts over after `max` entries: it holds weak keys, so
 * it shrinks as definitions are replaced, but a WeakMap cannot be counted, and an upstream that
 * relists new definitions forever must not keep more than this many alive.
 */
class BoundedWeakCache<V> {
  private map = new WeakMap<object, V>();
  private count = 0;

  constructor(private readonly max: number) {}

  get(key: object): V | undefined {
    return this.map.get(key);
  }

  set(key: object, value: V): void {
    if (this.count >= this.max) {
      this.map = new WeakMap();
      this.count = 0;
    }
    this.map.set(key, value);
    this.count++;
  }
}

/** A shared ajv instance, with how often it has compiled. */
interface Instance {
  readonly ajv: Ajv;
  compiles: number;
}

/**
 * Why `body` is not valid for `dialect`, in the words ajv refuses such a schema with; undefined
 * when it is valid. A schema that is not valid for its dialect compiles to something we cannot
 * trust. It is checked by the build's code for the meta-schema, which ajv would otherwise compile
 * on a fresh process (60 to 75 ms).
 */
function metaSchemaProblem(dialect: Dialect, body: Record<string, unknown>): string | undefined {
  const invalid = dialectChecks(dialect).checkSchema(body);
  if (invalid.length === 0) return undefined;
  return truncateSchemaMessage(`schema is invalid: ${errorsText(invalid)}`);
}

/** Meta-schema errors as ajv words them when it refuses to compile a schema. */
function errorsText(errors: readonly ErrorObject[]): string {
  return errors.map((error) => `data${error.instancePath} ${error.message ?? ''}`).join(', ');
}

/** ajv's options for schemas an upstream wrote: lenient about what they say, strict about what they may do. */
function untrustedAjvOptions(limits: UntrustedSchemaLimits, patternWork: PatternWorkMeter): Options {
  return {
    // Upstream schemas carry annotations and vendor keywords; the SDK's own checks are
    // non-strict too, and refusing them would only make more schemas unverifiable.
    strict: false,
    // Validation judges the data as it is: a string is not a number because it looks like
    // one, a missing property is not filled in, an extra one is not dropped. (These are
    // ajv's defaults; they are written out because validators rely on them.)
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
    // One error is all a message reports, and stopping at the first is cheaper.
    allErrors: false,
    // Checked against its dialect's meta-schema before it gets here (`compile`).
    validateSchema: false,
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
}

/**
 * Compiles `body` in a shared ajv instance, then drops what compiling left there: its cache
 * entry, and the ids of nested `$id` subschemas, which ajv registers instance-wide even with
 * `addUsedSchema: false`.
 */
function compileIn(entry: Instance, body: Record<string, unknown>, what: string): CompiledSchema {
  const refsBefore = new Set(Object.keys(entry.ajv.refs));
  try {
    return { kind: 'ready', validate: entry.ajv.compile(body) };
  } catch (error) {
    return {
      kind: 'unverifiable',
      reason: `the ${what} could not be compiled: ${describeSchemaError(error)}`,
    };
  } finally {
    entry.compiles++;
    entry.ajv.removeSchema(body);
    const refs = entry.ajv.refs as Record<string, unknown>;
    for (const key of Object.keys(refs)) if (!refsBefore.has(key)) delete refs[key];
  }
}

const DIALECT_URIS: readonly [RegExp, Dialect][] = [
  [/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/, 'draft-07'],
  [/^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/, '2019-09'],
  [/^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/, '2020-12'],
];

/** 2020-12 when absent, as the MCP spec says; drafts ajv 8 cannot run (04, 06) are unsupported. */
function dialectOf($schema: unknown, what: string): Dialect | { unsupported: string } {
  if ($schema === undefined) return '2020-12';
  if (typeof $schema !== 'string') {
    return { unsupported: `the ${what} has a $schema that is not a string` };
  }
  for (const [uri, dialect] of DIALECT_URIS) if (uri.test($schema)) return dialect;
  return {
    unsupported: `the ${what}'s $schema ${JSON.stringify($schema.slice(0, 200))} is not a supported dialect (draft-07, 2019-09 or 2020-12)`,
  };
}

/** Why compiling or validating threw, in words (a refused pattern, too deep, ajv's message). */
export function describeSchemaError(error: unknown): string {
  if (error instanceof UnsafePatternError) return truncateSchemaMessage(error.message);
  if (error instanceof RangeError) return 'it nests too deeply';
  return truncateSchemaMessage(error instanceof Error ? error.message : String(error));
}

/** Cuts a message that quotes upstream-controlled text to a readable length. */
export function truncateSchemaMessage(text: string): string {
  return text.length <= MAX_MESSAGE_LENGTH ? text : `${text.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}
