/**
 * The ajv set-up of our own document schemas (config, policy files). Only two places load it:
 * the build, which turns each schema into standalone code (scripts/generate-validators.mjs), and
 * tests running from source (documentValidators.ts); a served gateway never does.
 */
import { Ajv, type Options } from 'ajv';

/**
 * The ajv instance our own schemas (written by us, shipped in `schema/`) are compiled with:
 * strict, so a typo in a schema fails the build's tests rather than silently checking nothing.
 * `extra` adds options that do not change what is checked (the build's `code.source`).
 */
export function createDocumentAjv(extra: Pick<Options, 'code'> = {}): Ajv {
  const ajv = new Ajv({
    ...extra,
    strict: true,
    // strictRequired rejects `oneOf: [{required: [command]}, {required: [url]}]` because those
    // branches do not repeat the property definitions; that form is still the clearest way to tell
    // editors "exactly one of command / url".
    strictRequired: false,
    allErrors: true,
    // parentSchema on each error lets the translation read titles, allowed keys and custom messages.
    verbose: true,
  });
  // VS Code's JSON support shows `patternErrorMessage` instead of the raw regex; we show it too.
  ajv.addKeyword({ keyword: 'patternErrorMessage', schemaType: 'string' });
  return ajv;
}
