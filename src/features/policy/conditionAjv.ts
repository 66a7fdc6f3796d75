/**
 * How policy `arguments` conditions are compiled with ajv, in one place for the three users of
 * it: the compiler of conditions (argumentSchema.ts), the checks run when a policy file is
 * loaded (conditionDialects.ts), and the build, which turns each dialect's meta-schema into
 * standalone code with exactly these options (scripts/generate-validators.mjs).
 */
import type { Ajv, Options } from 'ajv';
import { createDialectAjv, type Dialect } from '../../lib/schema/dialectAjv.js';

export const CONDITION_AJV_OPTIONS: Readonly<Options> = Object.freeze({
  // Unknown keywords and formats are errors: a misspelt one would silently match anything.
  // The type checks of full strict mode would reject `properties` without `type: object`,
  // which is fine JSON Schema and how users write conditions.
  strictSchema: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allErrors: false,
  // parentSchema on meta-schema errors, for the shared friendly translation.
  verbose: true,
  // Each rule's schema stays its own: no registration under its `$id`.
  addUsedSchema: false,
  // `required: ["constructor"]` must not be satisfied by Object.prototype.
  ownProperties: true,
  // ajv logs to the console by default; stdout carries JSON-RPC and nothing else.
  logger: false,
});

/**
 * An ajv instance for conditions of `dialect`. `extra` adds what only one user needs: the
 * guarded regex engine and `validateSchema: false` for the compiler (the meta-schema check
 * already ran when the file was loaded), `code.source` for the build.
 */
export function createConditionAjv(
  dialect: Dialect,
  extra: Pick<Options, 'code' | 'validateSchema'> = {},
): Ajv {
  return createDialectAjv(dialect, { ...CONDITION_AJV_OPTIONS, ...extra });
}
