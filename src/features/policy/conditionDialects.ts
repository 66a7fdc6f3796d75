/**
 * What a policy file's load needs to know about each JSON Schema dialect to check an `arguments`
 * condition: its keywords, its formats, and its meta-schema. Loading ajv and compiling a
 * meta-schema cost about 60 ms and 15 MB at every start of a gateway whose policies have
 * argument conditions, so `npm run build` turns each dialect's meta-schema into
 * standalone code and writes the keyword and format lists beside it
 * (scripts/generate-validators.mjs, into `dist/policy/generated/`); the built gateway loads only
 * those. Run from source (vitest), the same checks come from an ajv instance made now; the
 * `generated-validators` test project runs the policy tests against the generated code as well.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { ErrorObject, SchemaObject } from 'ajv';
import { requireGenerated } from '../../lib/generatedCode.js';
import { generatedIdentity, rememberingValid } from '../../lib/validDocuments.js';
import type { Dialect } from '../../lib/schema/dialectAjv.js';

export interface DialectChecks {
  /** Keywords ajv knows in this dialect (with ajv-formats), in ajv's order. */
  readonly keywords: readonly string[];
  /** Formats ajv-formats adds, in its order. */
  readonly formats: readonly string[];
  /** The meta-schema's first error for `schema` (a condition without `$schema` and `$id`), if any. */
  readonly validateSchema: (schema: Readonly<SchemaObject>) => readonly ErrorObject[];
}

/** The generated files, in `dist/policy/generated/`. */
export const GENERATED_DIALECT_FILES: Readonly<Record<Dialect, string>> = Object.freeze({
  'draft-07': 'meta-draft-07.cjs',
  '2019-09': 'meta-2019-09.cjs',
  '2020-12': 'meta-2020-12.cjs',
});
/** Keyword and format lists of every dialect: `{ [dialect]: { keywords, formats } }`. */
export const GENERATED_LISTS_FILE = 'dialects.json';

type ValidateFunction = ((schema: Readonly<SchemaObject>) => boolean) & { errors?: ErrorObject[] | null };

/** Only loaded when running from source: the checks straight from ajv. */
const fromSource: ((dialect: Dialect) => DialectChecks) | undefined = import.meta.url.endsWith('.ts')
  ? await import('./conditionAjv.js').then(({ createConditionAjv }) => (dialect: Dialect) => {
      const ajv = createConditionAjv(dialect);
      return {
        keywords: Object.keys(ajv.RULES.keywords),
        formats: Object.keys(ajv.formats),
        validateSchema: (schema) => (ajv.validateSchema(schema) === true ? [] : (ajv.errors ?? [])),
      };
    })
  : undefined;

const loaded = new Map<Dialect, DialectChecks>();

export function dialectChecks(dialect: Dialect): DialectChecks {
  let checks = loaded.get(dialect);
  if (checks === undefined) {
    checks = fromSource?.(dialect) ?? fromBuild(dialect);
    loaded.set(dialect, checks);
  }
  return checks;
}

function fromBuild(dialect: Dialect): DialectChecks {
  const load = createRequire(import.meta.url);
  const lists = load(`./generated/${GENERATED_LISTS_FILE}`) as Record<
    Dialect,
    { keywords: string[]; formats: string[] }
  >;
  const file = fileURLToPath(new URL(`./generated/${GENERATED_DIALECT_FILES[dialect]}`, import.meta.url));
  // Loaded on the first schema not found valid before (lib/validDocuments.ts): a gateway served
  // again on the same policies loads no meta-schema.
  let validate: ValidateFunction | undefined;
  return {
    keywords: lists[dialect].keywords,
    formats: lists[dialect].formats,
    validateSchema: rememberingValid(
      () => generatedIdentity(file),
      (schema) => {
        validate ??= requireGenerated(file) as ValidateFunction;
        return validate(schema) ? [] : (validate.errors ?? []);
      },
    ),
  };
}
