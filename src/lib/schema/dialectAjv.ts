/**
 * ajv instances for the JSON Schema dialects that schemas from elsewhere use: upstreams' tool
 * schemas (untrustedSchema.ts) and policy argument conditions (argumentSchema.ts). Loading
 * ajv, a dialect's build and ajv-formats takes tens of milliseconds, which a gateway whose tools
 * all have simple schemas and whose policies have no argument conditions should not pay at
 * start-up (measured); so they are loaded when the first instance is made. With `require`,
 * because callers compile synchronously and these packages are CommonJS.
 *
 * The built gateway loads them from one file beside its chunks, with V8's code cache
 * (lib/vendored.ts): 8 to 11 ms against 55 to 72 from node_modules.
 */
import { createRequire } from 'node:module';
import type { Ajv, Options } from 'ajv';
import { runsVendored, vendored } from '../vendored.js';

export type Dialect = 'draft-07' | '2019-09' | '2020-12';

const load = createRequire(import.meta.url);

export type AjvClass = new (options: Options) => Ajv;

/** What the bundled file exports (scripts/bundleVendor.mjs). */
export interface AjvBundle {
  readonly Ajv: AjvClass;
  readonly Ajv2019: AjvClass;
  readonly Ajv2020: AjvClass;
  readonly addFormats: (ajv: Ajv) => unknown;
}

const bundled = (): AjvBundle | null => vendored<AjvBundle>('ajv');

/**
 * Loading what an instance needs, as separate steps (from node_modules: ajv's core, then
 * ajv-formats; from the bundle, the one file), so they can be done ahead of the first compile,
 * each in a turn of its own (see lib/idleWork.ts). Loading is most of what a first compile costs.
 */
export function ajvLoadSteps(): readonly (() => void)[] {
  if (runsVendored()) return [() => void bundled()];
  return [() => load('ajv/dist/core.js'), () => load('ajv-formats')];
}

/** The installed packages, in the bundle's shape: each loaded when first asked for. */
const installed: AjvBundle = {
  get Ajv() {
    return (load('ajv') as typeof import('ajv')).Ajv;
  },
  get Ajv2019() {
    return (load('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js')).Ajv2019;
  },
  get Ajv2020() {
    return (load('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')).Ajv2020;
  },
  get addFormats() {
    // CommonJS: `module.exports` is the plugin itself.
    return load('ajv-formats') as typeof import('ajv-formats').default;
  },
};

/** Each dialect's ajv class, by its name in the bundle. */
const CLASS_OF = { 'draft-07': 'Ajv', '2019-09': 'Ajv2019', '2020-12': 'Ajv2020' } as const;

/** A new ajv instance for `dialect`, with ajv-formats' formats added. */
export function createDialectAjv(dialect: Dialect, options: Options): Ajv {
  const from = bundled() ?? installed;
  const ajv = new from[CLASS_OF[dialect]](options);
  from.addFormats(ajv);
  return ajv;
}
