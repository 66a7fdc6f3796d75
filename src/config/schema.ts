/**
 * The JSON Schema of the config file as users write it, compiled once, and what its errors need
 * beyond the generic translation in schemaErrors.ts.
 *
 * The schema describes the file *before* normalization (durations as `30s`, `mcpServers`, ...);
 * it is the same file editors use for completion, so it lives in `schema/` and is read at run time
 * rather than duplicated in code.
 */
import { readFileSync } from 'node:fs';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { didYouMean } from './didYouMean.js';
import type { KeyPath } from './interpolate.js';
import {
  asArray,
  createDocumentAjv,
  isSchemaObject,
  translateErrors,
  valueAt,
  type SchemaProblem,
} from './schemaErrors.js';

export { describeValue, unknownKeyMessage, type SchemaProblem } from './schemaErrors.js';

/** `src/config/` (vitest) and `dist/config/` (built) are both two levels below the package root. */
export const SCHEMA_URL = new URL('../../schema/proxy.config.schema.json', import.meta.url);

type SchemaObject = Readonly<Record<string, unknown>>;

/** The parsed schema file. */
export const configSchema: SchemaObject = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as SchemaObject;

const ajv = createDocumentAjv();

/** Validates a parsed (and env-interpolated) config document against the schema. */
export const validateConfigDocument: ValidateFunction = ajv.compile(configSchema);

/** Every schema violation in `document`, as friendly messages (none when it is valid). */
export function checkDocumentShape(document: unknown): SchemaProblem[] {
  if (validateConfigDocument(document)) return [];
  return translateErrors(validateConfigDocument.errors ?? [], document, { checkedInCode, explainOneOf });
}

const definitions = (configSchema['definitions'] ?? {}) as Readonly<Record<string, SchemaObject>>;

/**
 * Durations and byte sizes are checked by the loader with their parsers, which know the accepted
 * forms and limits; ajv's view of them ("must match a schema in anyOf") would only add noise.
 */
const checkedInCode = new Set<unknown>(
  [definitions['duration'], definitions['byteSize']].flatMap((definition) =>
    definition === undefined ? [] : [definition, ...asArray(definition['anyOf'])],
  ),
);

/** The server entry's `oneOf` (command or url): say which key is missing or doubled. */
function explainOneOf(
  error: ErrorObject,
  path: KeyPath,
  errors: readonly ErrorObject[],
  document: unknown,
): SchemaProblem[] | undefined {
  if (error.parentSchema !== definitions['server']) return undefined;
  // `required` holds vacuously for non-objects, so a null entry "passes" both branches; the type
  // error already says what is wrong with it.
  if (!isSchemaObject(valueAt(document, path))) return [];
  const name = String(path[path.length - 1]);
  // ajv sets passingSchemas to the indexes of the branches that matched when more than one did.
  if (Array.isArray(error.params['passingSchemas'])) {
    const message = `server "${name}" has both "command" and "url"; use "command" for a stdio server or "url" for an HTTP server, not both`;
    return [{ path, at: 'key', message }];
  }
  // `comand: npx` already gets "did you mean "command"?", which says all there is to say.
  const misspelt = errors.some(
    (other) =>
      other.keyword === 'additionalProperties' &&
      other.instancePath === error.instancePath &&
      ['command', 'url'].includes(
        didYouMean(String(other.params['additionalProperty']), ['command', 'url']) ?? '',
      ),
  );
  if (misspelt) return [];
  const message = `server "${name}" needs "command" (to start a stdio server) or "url" (to reach an HTTP server)`;
  return [{ path, at: 'key', message }];
}
