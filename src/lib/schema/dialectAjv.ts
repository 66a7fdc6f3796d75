/**
 * ajv instances for the JSON Schema dialects that schemas from elsewhere use: upstreams' output
 * schemas (outputSchemaValidator.ts) and policy argument conditions (argumentSchema.ts). Loading
 * ajv, a dialect's build and ajv-formats takes about 50 ms, which a gateway whose tools declare
 * no output schema and whose policies have no argument conditions should not pay at start-up
 * (measured); so each is loaded when the first instance of its dialect is made. With `require`,
 * because callers compile synchronously and these packages are CommonJS.
 */
import { createRequire } from 'node:module';
import type { Ajv, Options } from 'ajv';

export type Dialect = 'draft-07' | '2019-09' | '2020-12';

const load = createRequire(import.meta.url);

/**
 * Loading the packages an instance needs, as separate steps (ajv's core, then ajv-formats), so
 * they can be done ahead of the first compile, each in a turn of its own (see lib/idleWork.ts).
 * Loading is what most of a first compile costs; a dialect's own build is small beside it.
 */
export const AJV_LOAD_STEPS: readonly (() => void)[] = [
  () => load('ajv/dist/core.js'),
  () => load('ajv-formats'),
];

/** A new ajv instance for `dialect`, with ajv-formats' formats added. */
export function createDialectAjv(dialect: Dialect, options: Options): Ajv {
  const ajv =
    dialect === 'draft-07'
      ? new (load('ajv') as typeof import('ajv')).Ajv(options)
      : dialect === '2019-09'
        ? new (load('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js')).Ajv2019(options)
        : new (load('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')).Ajv2020(options);
  // CommonJS: `module.exports` is the plugin itself.
  (load('ajv-formats') as typeof import('ajv-formats').default)(ajv);
  return ajv;
}
