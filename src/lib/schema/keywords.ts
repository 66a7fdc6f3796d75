/**
 * The JSON Schema keywords every walk over a schema must tell apart (the bounds check of an
 * untrusted schema, the keyword check of a policy condition, the search for mirrored-header
 * annotations): one table, so the walks cannot drift apart on what is a schema and what is not.
 */

/**
 * Keywords whose values are data, never schemas: keys inside them are not keywords, and a `$ref`
 * there is only a value. `example` is not JSON Schema's, but OpenAPI's singular form is common
 * in tool schemas and holds an example value all the same; `$vocabulary` maps URIs to booleans.
 */
export const DATA_KEYWORDS: ReadonlySet<string> = new Set([
  'const',
  'enum',
  'default',
  'examples',
  'example',
  '$vocabulary',
]);

/**
 * Keywords whose values map names (of properties, patterns, definitions) to schemas: there a key
 * is a name, so a property called `default` or `enum` is no keyword. `dependentRequired` maps
 * names to lists of names rather than schemas; the lists hold nothing a walk looks for.
 */
export const NAME_MAP_KEYWORDS: ReadonlySet<string> = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
  'dependencies',
  'dependentRequired',
]);

/** Keywords whose string value refers to another schema. */
export const REF_KEYWORDS: ReadonlySet<string> = new Set(['$ref', '$dynamicRef', '$recursiveRef']);

/** What a value is, seen from the schema: a schema (or a list of them), a name map, or data. */
export type SchemaRole = 'schema' | 'names' | 'data';

/** The role of the value under `key` in a value of role `parent`. */
export function childRole(parent: SchemaRole, key: string): SchemaRole {
  if (parent !== 'schema') return parent === 'names' ? 'schema' : 'data';
  if (DATA_KEYWORDS.has(key)) return 'data';
  return NAME_MAP_KEYWORDS.has(key) ? 'names' : 'schema';
}
