/**
 * How policy `arguments` conditions are compiled with ajv: with the options their meta-schema
 * checks use (lib/schema/dialectChecks.ts), which the build also generates the meta-schemas'
 * code with, so that what the load-time check accepts compiles the same way.
 */
import type { Ajv, Options } from 'ajv';
import { createDialectAjv, type Dialect } from '../../lib/schema/dialectAjv.js';
import { DIALECT_CHECK_AJV_OPTIONS } from '../../lib/schema/dialectChecks.js';

/**
 * An ajv instance for conditions of `dialect`. `extra` adds what only the compiler needs: the
 * guarded regex engine, and `validateSchema: false` (the meta-schema check already ran when the
 * file was loaded).
 */
export function createConditionAjv(
  dialect: Dialect,
  extra: Pick<Options, 'code' | 'validateSchema'> = {},
): Ajv {
  return createDialectAjv(dialect, { ...DIALECT_CHECK_AJV_OPTIONS, ...extra });
}
