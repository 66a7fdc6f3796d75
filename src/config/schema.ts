/**
 * The JSON Schema of the config file as users write it, compiled once, and the translation of
 * ajv's errors into messages written for people.
 *
 * The schema describes the file *before* normalization (durations as `30s`, `mcpServers`, ...);
 * it is the same file editors use for completion, so it lives in `schema/` and is read at run time
 * rather than duplicated in code.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { didYouMean } from './didYouMean.js';
import type { KeyPath } from './interpolate.js';

/** `src/config/` (vitest) and `dist/config/` (built) are both two levels below the package root. */
export const SCHEMA_URL = new URL('../../schema/proxy.config.schema.json', import.meta.url);

type SchemaObject = Readonly<Record<string, unknown>>;

/** The parsed schema file. */
export const configSchema: SchemaObject = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as SchemaObject;

const ajv = new Ajv({
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

/** Validates a parsed (and env-interpolated) config document against the schema. */
export const validateConfigDocument: ValidateFunction = ajv.compile(configSchema);

/** A schema violation, located by key path; `at` says whether to point at the key or its value. */
export interface SchemaProblem {
  readonly path: KeyPath;
  readonly at: 'key' | 'value';
  readonly message: string;
}

/** Every schema violation in `document`, as friendly messages (none when it is valid). */
export function checkDocumentShape(document: unknown): SchemaProblem[] {
  if (validateConfigDocument(document)) return [];
  return translateErrors(validateConfigDocument.errors ?? [], document);
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

function translateErrors(errors: readonly ErrorObject[], document: unknown): SchemaProblem[] {
  // anyOf/oneOf report each failed branch as well as themselves; the branch errors are explained
  // by (or folded into) the combinator's message, so claim them first.
  const branchErrors = new Map<ErrorObject, ErrorObject[]>();
  const claimed = new Set<ErrorObject>();
  for (const error of errors) {
    if (error.keyword !== 'anyOf' && error.keyword !== 'oneOf') continue;
    const branches = asArray(schemaOf(error)[error.keyword]);
    const own = errors.filter(
      (other) => other.instancePath === error.instancePath && branches.includes(other.parentSchema),
    );
    branchErrors.set(error, own);
    for (const other of own) claimed.add(other);
  }

  const problems: SchemaProblem[] = [];
  for (const error of errors) {
    if (claimed.has(error) || checkedInCode.has(error.parentSchema)) continue;
    // propertyNames repeats what its inner error (which carries `propertyName`) already says.
    if (error.keyword === 'propertyNames') continue;
    // `expected a string` next to `expected one of "error", "off"` for the same value: the
    // list of allowed values says more.
    if (error.keyword === 'type' && errors.some((other) => isEnumErrorOf(other, error))) continue;
    const path = toKeyPath(error.instancePath, document);
    if (error.keyword === 'anyOf') {
      problems.push(...explainAnyOf(error, branchErrors.get(error) ?? [], path, document));
    } else if (error.keyword === 'oneOf') {
      problems.push(...explainOneOf(error, path, errors, document));
    } else {
      problems.push(explain(error, path, document));
    }
  }
  return problems;
}

function isEnumErrorOf(other: ErrorObject, error: ErrorObject): boolean {
  return (
    other.keyword === 'enum' &&
    other.instancePath === error.instancePath &&
    other.parentSchema === error.parentSchema
  );
}

/** Reports the branch the value was evidently meant for, or the set of accepted types. */
function explainAnyOf(
  error: ErrorObject,
  ownErrors: readonly ErrorObject[],
  path: KeyPath,
  document: unknown,
): SchemaProblem[] {
  const value = valueAt(document, path);
  const branches = asArray(schemaOf(error)['anyOf']).filter(isSchemaObject);
  const intended = branches.find(
    (branch) => typeof branch['type'] === 'string' && hasType(value, branch['type']),
  );
  if (intended !== undefined) {
    return ownErrors
      .filter((other) => other.parentSchema === intended)
      .map((other) => explain(other, path, document));
  }
  const expected = branches.map((branch) =>
    'const' in branch ? JSON.stringify(branch['const']) : typeNoun(String(branch['type'])),
  );
  return [{ path, at: 'value', message: `expected ${expected.join(' or ')}, got ${describeValue(value)}` }];
}

function explainOneOf(
  error: ErrorObject,
  path: KeyPath,
  errors: readonly ErrorObject[],
  document: unknown,
): SchemaProblem[] {
  if (error.parentSchema !== definitions['server']) {
    return [{ path, at: 'value', message: 'matches more than one, or none, of the allowed forms' }];
  }
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

function explain(error: ErrorObject, path: KeyPath, document: unknown): SchemaProblem {
  const schema = schemaOf(error);
  const params = error.params as Record<string, unknown>;
  const value = valueAt(document, path);

  // An invalid mapping key (propertyNames): point at the key and name what kind of key it is.
  if (error.propertyName !== undefined) {
    const kind = typeof schema['title'] === 'string' ? schema['title'].toLowerCase() : 'key';
    const detail = explainValueRule(error, schema, params, error.propertyName);
    return {
      path: [...path, error.propertyName],
      at: 'key',
      message: `invalid ${kind} ${JSON.stringify(error.propertyName)}: ${detail}`,
    };
  }

  if (error.keyword === 'additionalProperties') {
    const key = String(params['additionalProperty']);
    const known = Object.keys(isSchemaObject(schema['properties']) ? schema['properties'] : {});
    return { path: [...path, key], at: 'key', message: unknownKeyMessage(key, known) };
  }
  if (error.keyword === 'required') {
    return { path, at: 'key', message: `missing required key "${String(params['missingProperty'])}"` };
  }
  return { path, at: 'value', message: explainValueRule(error, schema, params, value) };
}

/** The message for a rule about one value (type, enum, pattern, bounds...). */
function explainValueRule(
  error: ErrorObject,
  schema: SchemaObject,
  params: Record<string, unknown>,
  value: unknown,
): string {
  switch (error.keyword) {
    case 'type': {
      const expected = asArray(params['type']).map((type) => typeNoun(String(type)));
      const hint =
        expected.includes('a string') && (typeof value === 'number' || typeof value === 'boolean')
          ? '; put it in quotes to make it a string'
          : '';
      return `expected ${expected.join(' or ')}, got ${describeValue(value)}${hint}`;
    }
    case 'enum': {
      const allowed = asArray(params['allowedValues']);
      const listed = allowed.map((item) => JSON.stringify(item)).join(', ');
      // `false` for a setting that is switched off with "off" (as JSON, or YAML 1.1 habits).
      const suggestion =
        typeof value === 'string'
          ? didYouMean(
              value,
              allowed.filter((item) => typeof item === 'string'),
            )
          : value === false && allowed.includes('off')
            ? 'off'
            : undefined;
      const got = typeof value === 'string' ? JSON.stringify(value) : describeValue(value);
      return `expected one of ${listed}, got ${got}${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}`;
    }
    case 'const':
      return `expected ${JSON.stringify(params['allowedValue'])}, got ${describeValue(value)}`;
    case 'pattern':
      return typeof schema['patternErrorMessage'] === 'string'
        ? schema['patternErrorMessage']
        : `must match the regular expression ${String(params['pattern'])}`;
    case 'minLength':
      return params['limit'] === 1
        ? 'must not be empty'
        : `must be at least ${String(params['limit'])} characters long`;
    case 'maxLength':
      return `must be at most ${String(params['limit'])} characters long`;
    case 'minimum':
      return `must be at least ${String(params['limit'])}, got ${String(value)}`;
    case 'maximum':
      return `must be at most ${String(params['limit'])}, got ${String(value)}`;
    default:
      // Only reachable if the schema grows a keyword not handled above; the path still says where.
      return error.message ?? 'is not valid';
  }
}

/** `unknown key "x" (did you mean "y"?)`, or the list of allowed keys when nothing is close. */
export function unknownKeyMessage(key: string, known: readonly string[]): string {
  const suggestion = didYouMean(key, known);
  if (suggestion !== undefined) return `unknown key "${key}" (did you mean "${suggestion}"?)`;
  const listed = known.filter((name) => name !== '$schema');
  return listed.length === 0
    ? `unknown key "${key}"`
    : `unknown key "${key}"; allowed keys are: ${listed.join(', ')}`;
}

/**
 * How a value is named in "expected X, got Y". Strings are not echoed: after env interpolation
 * they may hold secrets, and the position already shows the user which value is meant.
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return `a number (${String(value)})`;
    case 'boolean':
      return `a boolean (${String(value)})`;
    case 'object':
      return 'a mapping';
    default:
      return typeof value;
  }
}

function typeNoun(type: string): string {
  switch (type) {
    case 'object':
      return 'a mapping';
    case 'array':
      return 'a list';
    case 'integer':
      return 'an integer';
    case 'boolean':
      return 'true or false';
    case 'null':
      return 'an empty value';
    default:
      return `a ${type}`;
  }
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'integer':
      return typeof value === 'number';
    case 'null':
      return value === null;
    default:
      return typeof value === type;
  }
}

/** `/servers/fs/args/0` → `['servers', 'fs', 'args', 0]`, numbering only list indexes. */
function toKeyPath(pointer: string, document: unknown): KeyPath {
  if (pointer === '') return [];
  const path: (string | number)[] = [];
  let node = document;
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) {
      path.push(Number(segment));
      node = node[Number(segment)];
    } else {
      path.push(segment);
      node = isSchemaObject(node) ? node[segment] : undefined;
    }
  }
  return path;
}

function valueAt(document: unknown, path: KeyPath): unknown {
  let node = document;
  for (const segment of path) {
    if (Array.isArray(node) && typeof segment === 'number') node = node[segment];
    else if (isSchemaObject(node) && typeof segment === 'string' && Object.hasOwn(node, segment))
      node = node[segment];
    else return undefined;
  }
  return node;
}

function schemaOf(error: ErrorObject): SchemaObject {
  return isSchemaObject(error.parentSchema) ? error.parentSchema : {};
}

function isSchemaObject(value: unknown): value is SchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asArray(value: unknown): readonly unknown[] {
  if (Array.isArray(value)) return value;
  return value === undefined ? [] : [value];
}
