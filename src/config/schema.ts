/**
 * The JSON Schema of the config file as users write it, its validator (generated at build time,
 * see documentValidators.ts), and what its errors need beyond the generic translation in
 * schemaErrors.ts.
 *
 * The schema describes the file *before* normalization (durations as `30s`, `mcpServers`, ...);
 * it is the same file editors use for completion, so it lives in `schema/` and is read at run time
 * rather than duplicated in code.
 */
import type { ErrorObject } from 'ajv';
import { didYouMean } from '../lib/didYouMean.js';
import {
  documentSchemaUrl,
  documentValidator,
  inlineRefs,
  readDocumentSchema,
} from './documentValidators.js';
import type { KeyPath } from './interpolate.js';
import { asArray, isSchemaObject, translateErrors, valueAt, type SchemaProblem } from './schemaErrors.js';

export { describeValue, unknownKeyMessage, type SchemaProblem } from './schemaErrors.js';

export const SCHEMA_URL = documentSchemaUrl('config');

type SchemaObject = Readonly<Record<string, unknown>>;

/** The parsed schema file. */
export const configSchema: SchemaObject = readDocumentSchema('config');

/** The keys the file may have at its top level, in schema order. */
export const TOP_LEVEL_KEYS: readonly string[] = Object.keys(
  isSchemaObject(configSchema['properties']) ? configSchema['properties'] : {},
);

/** What is checked: the schema with its `$ref`s inlined (errors point at objects of this one). */
const checkedSchema = inlineRefs(configSchema);

const validateConfigDocument = documentValidator('config', checkedSchema);

/** Every schema violation in `document`, as friendly messages (none when it is valid). */
export function checkDocumentShape(document: unknown): SchemaProblem[] {
  const errors = validateConfigDocument(document);
  if (errors.length === 0) return [];
  return translateErrors(errors, document, { checkedInCode, explainOneOf });
}

const definitions = (checkedSchema['definitions'] ?? {}) as Readonly<Record<string, SchemaObject>>;

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
