/**
 * What checking a JSON Schema needs to know about its dialect: its keywords, its formats, and
 * its meta-schema. Two kinds of schemas are checked so: policy `arguments` conditions, when a
 * policy file is loaded, and the schemas of upstream servers' tools, before ajv compiles them
 * (untrustedSchema.ts).
 *
 * Loading ajv and compiling a meta-schema cost about 60 ms and 15 MB at every start of a gateway
 * whose policies have argument conditions, and the meta-schema alone 60 to 75 ms of the first
 * compile of a tool's schema (measured, 2 cores). So `npm run build` turns each dialect's
 * meta-schema into standalone code with V8's code cache beside it, and writes the keyword and
 * format lists (scripts/generate-validators.mjs, into `dist/lib/schema/generated/`); the built
 * gateway loads only those, in 5 to 8 ms. Run from source (vitest), the same checks come from an
 * ajv instance made now; the `generated-validators` test project runs the policy and schema
 * tests against the generated code as well.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Ajv, ErrorObject, Options, SchemaObject } from 'ajv';
import { requireGenerated } from '../generatedCode.js';
import { generatedIdentity, rememberingValid } from '../validDocuments.js';
import { createDialectAjv, type Dialect } from './dialectAjv.js';

/**
 * The options the meta-schemas are checked with, which policy conditions are also compiled with
 * (features/policy/conditionAjv.ts), and which the build generates the meta-schemas' code with.
 */
export const DIALECT_CHECK_AJV_OPTIONS: Readonly<Options> = Object.freeze({
  // Unknown keywords and formats are errors: a misspelt one would silently match anything.
  // The type checks of full strict mode would reject `properties` without `type: object`,
  // which is fine JSON Schema and how users write conditions.
  strictSchema: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allErrors: false,
  // parentSchema on meta-schema errors, for the policy loader's friendly translation.
  verbose: true,
  // Each schema stays its own: no registration under its `$id`.
  addUsedSchema: false,
  // `required: ["constructor"]` must not be satisfied by Object.prototype.
  ownProperties: true,
  // ajv logs to the console by default; stdout carries JSON-RPC and nothing else.
  logger: false,
});

/** An ajv instance for `dialect` with DIALECT_CHECK_AJV_OPTIONS, and `extra` for one user's needs. */
export function createDialectCheckAjv(
  dialect: Dialect,
  extra: Pick<Options, 'code' | 'validateSchema'> = {},
): Ajv {
  return createDialectAjv(dialect, { ...DIALECT_CHECK_AJV_OPTIONS, ...extra });
}

export interface DialectChecks {
  /** Keywords ajv knows in this dialect (with ajv-formats), in ajv's order. */
  readonly keywords: readonly string[];
  /** Formats ajv-formats adds, in its order. */
  readonly formats: readonly string[];
  /**
   * The meta-schema's first error for `schema` (without `$schema` and `$id`), if any; a schema
   * found valid is remembered across runs of a serving gateway (lib/validDocuments.ts). For the
   * few documents a user wrote.
   */
  readonly validateSchema: (schema: Readonly<SchemaObject>) => readonly ErrorObject[];
  /**
   * The same check, remembering nothing: for schemas from elsewhere, which are many and change
   * (an upstream server's tools), and would crowd out the documents that are remembered.
   */
  readonly checkSchema: (schema: Readonly<SchemaObject>) => readonly ErrorObject[];
  /** Loading the meta-schema's code, as a step of its own; undefined once it is loaded. */
  readonly loadStep: () => (() => void) | undefined;
}

/** The generated files, in `dist/lib/schema/generated/`. */
export const GENERATED_DIALECT_FILES: Readonly<Record<Dialect, string>> = Object.freeze({
  'draft-07': 'meta-draft-07.cjs',
  '2019-09': 'meta-2019-09.cjs',
  '2020-12': 'meta-2020-12.cjs',
});
/** Keyword and format lists of every dialect: `{ [dialect]: { keywords, formats } }`. */
export const GENERATED_LISTS_FILE = 'dialects.json';

type ValidateFunction = ((schema: Readonly<SchemaObject>) => boolean) & { errors?: ErrorObject[] | null };

const loaded = new Map<Dialect, DialectChecks>();

export function dialectChecks(dialect: Dialect): DialectChecks {
  let checks = loaded.get(dialect);
  if (checks === undefined) {
    checks = import.meta.url.endsWith('.ts') ? fromSource(dialect) : fromBuild(dialect);
    loaded.set(dialect, checks);
  }
  return checks;
}

/** Run from source: the checks straight from ajv. */
function fromSource(dialect: Dialect): DialectChecks {
  const ajv = createDialectCheckAjv(dialect);
  const check = (schema: Readonly<SchemaObject>): readonly ErrorObject[] =>
    ajv.validateSchema(schema) === true ? [] : (ajv.errors ?? []);
  return {
    keywords: Object.keys(ajv.RULES.keywords),
    formats: Object.keys(ajv.formats),
    validateSchema: check,
    checkSchema: check,
    loadStep: () => undefined,
  };
}

function fromBuild(dialect: Dialect): DialectChecks {
  const load = createRequire(import.meta.url);
  const lists = load(`./generated/${GENERATED_LISTS_FILE}`) as Record<
    Dialect,
    { keywords: string[]; formats: string[] }
  >;
  const file = fileURLToPath(new URL(`./generated/${GENERATED_DIALECT_FILES[dialect]}`, import.meta.url));
  // Loaded on the first schema not found valid before (lib/validDocuments.ts): a gateway served
  // again on the same policies, with no upstream schema to check, loads no meta-schema.
  let validate: ValidateFunction | undefined;
  const check = (schema: Readonly<SchemaObject>): readonly ErrorObject[] => {
    validate ??= requireGenerated(file) as ValidateFunction;
    return validate(schema) ? [] : (validate.errors ?? []);
  };
  return {
    keywords: lists[dialect].keywords,
    formats: lists[dialect].formats,
    validateSchema: rememberingValid(() => generatedIdentity(file), check),
    checkSchema: check,
    loadStep: () =>
      validate === undefined
        ? () => void (validate ??= requireGenerated(file) as ValidateFunction)
        : undefined,
  };
}
