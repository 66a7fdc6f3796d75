/**
 * Cheap checks on an untrusted `outputSchema` before ajv sees it. ajv turns a schema into code
 * by recursion, so a thousands-deep schema throws `RangeError` mid-compile, a huge one costs
 * seconds of compile time, and a remote `$ref` can only fail (we never give ajv `loadSchema`)
 * or, worse, point at another tool's schema. This walk is iterative and stops at the first
 * limit it passes, so it is itself bounded whatever it is given (even a cyclic object).
 *
 * Why not json-schema-traverse (installed with ajv): it recurses, so the thousands-deep schemas
 * this walk exists to refuse would overflow its stack first, and it visits every node before a
 * caller could stop it at a limit.
 */

import { childRole, REF_KEYWORDS, type SchemaRole } from './keywords.js';

export interface SchemaBoundLimits {
  readonly maxSchemaBytes: number;
  readonly maxSchemaDepth: number;
  readonly maxSchemaNodes: number;
}

/** Returns why the schema is refused, or null when it is within bounds. */
export function findSchemaBoundProblem(schema: unknown, limits: SchemaBoundLimits): string | null {
  // Size is estimated as JSON text would be (string lengths plus punctuation) while walking, so a
  // huge schema is refused without ever serialising it.
  let bytes = 0;
  let nodes = 0;
  const stack: { value: unknown; depth: number; role: SchemaRole }[] = [
    { value: schema, depth: 1, role: 'schema' },
  ];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value, depth, role } = item;
    nodes++;
    if (nodes > limits.maxSchemaNodes) return `it has more than ${limits.maxSchemaNodes} nodes`;
    if (depth > limits.maxSchemaDepth) return `it nests deeper than ${limits.maxSchemaDepth} levels`;
    if (typeof value === 'string') bytes += value.length + 2;
    else if (typeof value === 'number' || typeof value === 'boolean') bytes += String(value).length;
    else if (value === null) bytes += 4;
    else if (Array.isArray(value)) {
      bytes += 2 + value.length;
      for (const element of value) stack.push({ value: element, depth: depth + 1, role });
    } else if (typeof value === 'object') {
      bytes += 2;
      for (const [key, child] of Object.entries(value)) {
        bytes += key.length + 4;
        if (role === 'schema' && REF_KEYWORDS.has(key) && typeof child === 'string' && !isLocalRef(child)) {
          return `it refers to ${JSON.stringify(child.slice(0, 200))}, outside the schema (only local "#..." references are followed)`;
        }
        stack.push({ value: child, depth: depth + 1, role: childRole(role, key) });
      }
    }
    if (bytes > limits.maxSchemaBytes) return `it is larger than ${limits.maxSchemaBytes} bytes`;
  }
  return null;
}

/** `#...` (a pointer or anchor in this schema) or `` (this schema itself). */
function isLocalRef(ref: string): boolean {
  return ref === '' || ref.startsWith('#');
}
