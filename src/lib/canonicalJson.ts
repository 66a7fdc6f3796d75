/**
 * Canonical JSON: object keys sorted by UTF-16 code units (as `Array.prototype.sort` and
 * RFC 8785 order them), no whitespace, strings and numbers written exactly as `JSON.stringify`
 * writes them, and stable under a parse round trip
 * (`canonicalJson(JSON.parse(canonicalJson(v))) === canonicalJson(v)`).
 *
 * The audit writer uses it for the records `JSON.stringify` refuses (see `recordJson` in
 * chain.ts), so it maps everything JSON cannot hold to something it can and never throws:
 * - `undefined`, functions and symbols: omitted from objects, `null` in arrays (JSON's rule);
 * - non-finite numbers: `null` (JSON's rule); `-0`: `0`;
 * - `bigint`: its decimal digits as a string (JSON.stringify would throw);
 * - objects with `toJSON` (Date, Buffer): what `toJSON` returns; a throwing getter or `toJSON`:
 *   `"[Unserializable]"`;
 * - a reference back to an enclosing object or array: `"[Circular]"`;
 * - nesting deeper than `MAX_CANONICAL_DEPTH`: `"[Truncated]"` (also bounds the recursion).
 */

/** Containers nested deeper than this are written as `"[Truncated]"`. */
export const MAX_CANONICAL_DEPTH = 100;

export function canonicalJson(value: unknown): string {
  const text = write(value, 0, []);
  // Only a top-level undefined/function/symbol yields nothing; JSON has no such document.
  return text ?? 'null';
}

/**
 * `ancestors` is the path from the root (an array: depth is bounded and small, and push/pop is
 * cheaper than a Set). Strings are built by concatenation.
 */
function write(value: unknown, depth: number, ancestors: object[]): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // JSON.stringify gives the shortest text that parses back to the same double, "null" for
      // non-finite numbers and "0" for -0: stable under a parse round trip.
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'object':
      break;
  }
  if (value === null) return 'null';
  const object = value as object;
  if (ancestors.includes(object)) return '"[Circular]"';
  if (depth >= MAX_CANONICAL_DEPTH) return '"[Truncated]"';
  ancestors.push(object);
  try {
    const toJSON = (object as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return write(toJSON.call(object), depth + 1, ancestors);
    if (Array.isArray(object)) {
      let out = '[';
      for (let i = 0; i < object.length; i++) {
        if (i > 0) out += ',';
        out += write(object[i], depth + 1, ancestors) ?? 'null';
      }
      return `${out}]`;
    }
    const record = object as Record<string, unknown>;
    let out = '{';
    for (const key of Object.keys(record).sort()) {
      const text = write(record[key], depth + 1, ancestors);
      if (text === undefined) continue;
      if (out.length > 1) out += ',';
      out += `${JSON.stringify(key)}:${text}`;
    }
    return `${out}}`;
  } catch {
    return '"[Unserializable]"';
  } finally {
    ancestors.pop();
  }
}
