/**
 * Translation of ajv's errors into messages written for people, for any of our own document
 * schemas (config, policies): unknown keys with a did-you-mean, allowed values of an enum, types
 * named the way YAML users think of them. Moved here from schema.ts so policy files read the same.
 */
import type { ErrorObject } from 'ajv';
import { didYouMean } from '../lib/didYouMean.js';
import { formatKeyPath, type KeyPath } from './interpolate.js';

type SchemaObject = Readonly<Record<string, unknown>>;

/** A schema violation, located by key path; `at` says whether to point at the key or its value. */
export interface SchemaProblem {
  readonly path: KeyPath;
  readonly at: 'key' | 'value';
  readonly message: string;
}

export interface TranslateOptions {
  /** Subschemas whose errors are dropped: values the loader checks in code, with better messages. */
  readonly checkedInCode?: ReadonlySet<unknown>;
  /**
   * A document-specific explanation of a failed `oneOf`, given the path of the value and all the
   * errors; undefined for the generic "matches more than one, or none, of the allowed forms".
   */
  readonly explainOneOf?: (
    error: ErrorObject,
    path: KeyPath,
    errors: readonly ErrorObject[],
    document: unknown,
  ) => SchemaProblem[] | undefined;
}

/** Every error of one validation of `document`, as friendly messages. */
export function translateErrors(
  errors: readonly ErrorObject[],
  document: unknown,
  options: TranslateOptions = {},
): SchemaProblem[] {
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
    if (claimed.has(error) || options.checkedInCode?.has(error.parentSchema) === true) continue;
    // propertyNames repeats what its inner error (which carries `propertyName`) already says.
    if (error.keyword === 'propertyNames') continue;
    // `expected a string` next to `expected one of "error", "off"` for the same value: the
    // list of allowed values says more.
    if (error.keyword === 'type' && errors.some((other) => isEnumErrorOf(other, error))) continue;
    const path = toKeyPath(error.instancePath, document);
    if (error.keyword === 'anyOf') {
      problems.push(...explainAnyOf(error, branchErrors.get(error) ?? [], path, document));
    } else if (error.keyword === 'uniqueItems') {
      problems.push(...explainDuplicates(error, path, document));
    } else if (error.keyword === 'oneOf') {
      problems.push(
        ...(options.explainOneOf?.(error, path, errors, document) ?? [
          { path, at: 'value', message: 'matches more than one, or none, of the allowed forms' },
        ]),
      );
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

/**
 * Every repeated item of a list that must not repeat, each at the repetition and naming where the
 * value first appears. ajv reports one pair only; scalar items are compared here to find them all,
 * and for lists of mappings ajv's pair is used.
 */
function explainDuplicates(error: ErrorObject, path: KeyPath, document: unknown): SchemaProblem[] {
  const list = valueAt(document, path);
  const items: readonly unknown[] = Array.isArray(list) ? list : [];
  const itemSchema = schemaOf(error)['items'];
  const allowed = new Set(isSchemaObject(itemSchema) ? asArray(itemSchema['enum']) : []);
  const duplicate = (index: number, first: number): SchemaProblem => {
    const item = items[index];
    // Strings are echoed only when the schema itself spells them out (an enum): others may be secrets.
    const shown = typeof item === 'string' && allowed.has(item) ? JSON.stringify(item) : 'this value';
    const message = `${shown} is already listed at ${formatKeyPath([...path, first])}; list each value once`;
    return { path: [...path, index], at: 'value', message };
  };

  const firstAt = new Map<unknown, number>();
  const problems: SchemaProblem[] = [];
  items.forEach((item, index) => {
    if (typeof item === 'object' && item !== null) return;
    const first = firstAt.get(item);
    if (first === undefined) firstAt.set(item, index);
    else problems.push(duplicate(index, first));
  });
  if (problems.length > 0) return problems;
  const { i, j } = error.params as { i: number; j: number };
  return [duplicate(Math.max(i, j), Math.min(i, j))];
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
    case 'minItems':
      return params['limit'] === 1
        ? 'must not be an empty list'
        : `must have at least ${String(params['limit'])} items`;
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

export function valueAt(document: unknown, path: KeyPath): unknown {
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

export function isSchemaObject(value: unknown): value is SchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function asArray(value: unknown): readonly unknown[] {
  if (Array.isArray(value)) return value;
  return value === undefined ? [] : [value];
}
