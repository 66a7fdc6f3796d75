/**
 * Checks a tool call's arguments against the tool's own `inputSchema`, strictly: a string is
 * never taken for a number, no default is filled in, no extra property is dropped. The schema
 * comes from the upstream and is compiled by the shared untrusted-schema compiler.
 */
import type { ErrorObject } from 'ajv';
import {
  createUntrustedSchemaCompiler,
  describeSchemaError,
  truncateSchemaMessage,
  type UntrustedSchemaLimits,
  type UntrustedSchemaStats,
} from '../../lib/schema/untrustedSchema.js';

/**
 * - `valid`: they match (or the tool's schema cannot be compiled safely, see `unchecked`);
 * - `invalid`: they do not match; `problem` names the property and what is wrong;
 * - `unchecked`: the data could not be checked (a pattern refused a very long string, data
 *   nested too deeply for a recursive schema); `problem` says why;
 * - `unverifiable`: the schema itself could not be compiled safely; `reason` says why.
 */
export type ArgumentsVerdict =
  | { readonly kind: 'valid' }
  | { readonly kind: 'invalid' | 'unchecked'; readonly problem: string }
  | { readonly kind: 'unverifiable'; readonly reason: string };

export interface InputValidator {
  /** Never throws. A valid call costs one cache lookup and one check. */
  check(inputSchema: unknown, args: Record<string, unknown>): ArgumentsVerdict;
  /**
   * Whether valid arguments for this schema are recognised without ajv (simpleSchema.ts); the
   * check is built now and cached, so asking is also getting it ready. Never throws.
   */
  checkedWithoutAjv(inputSchema: unknown): boolean;
  /**
   * Compiles a tool's schema now, ahead of its first call, so that call only looks it up (the
   * same schema object is then found in the cache). Never throws.
   */
  prepare(inputSchema: unknown): void;
  /** The next piece of readying ajv for this schema ahead of `prepare` (see untrustedSchema.ts). */
  readyStep(inputSchema: unknown): (() => void) | undefined;
}

/** Shared, so the common answer allocates nothing. */
const VALID: ArgumentsVerdict = Object.freeze({ kind: 'valid' });

/** Longest argument value quoted back in a message: enough to recognise, not to echo a document. */
const MAX_QUOTED_VALUE = 60;

export function createInputValidator(
  options: { readonly limits?: Partial<UntrustedSchemaLimits>; readonly maxCached?: number } = {},
): InputValidator & { readonly stats: UntrustedSchemaStats } {
  const compiler = createUntrustedSchemaCompiler({ what: 'inputSchema', ...options });

  function check(inputSchema: unknown, args: Record<string, unknown>): ArgumentsVerdict {
    // A tool must declare an object schema; one that does not declares nothing we can check,
    // and the SDK's own client would not have listed it.
    if (typeof inputSchema !== 'object' || inputSchema === null || Array.isArray(inputSchema)) {
      return { kind: 'unverifiable', reason: 'the inputSchema is not a JSON Schema object' };
    }
    const schema = inputSchema as Record<string, unknown>;
    // Most tools' arguments are checked without ajv, so no call waits for it to load or compile
    // (see simpleSchema.ts); ajv takes what that check cannot vouch for, and words the problem.
    if (compiler.simple(schema)?.(args) === true) return VALID;
    const compiled = compiler.compiled(schema);
    if (compiled.kind === 'unverifiable') return compiled;
    const { validate } = compiled;
    try {
      compiler.beginValidation();
      if (validate(args) === true) return VALID;
    } catch (error) {
      // Validation stopped part-way, so properties after the one it stopped at were not checked
      // either: this is no answer, and the caller must not treat it as a pass.
      return { kind: 'unchecked', problem: describeSchemaError(error) };
    }
    return { kind: 'invalid', problem: describeFirstError(validate.errors, args) };
  }

  function isObjectSchema(inputSchema: unknown): inputSchema is Record<string, unknown> {
    return typeof inputSchema === 'object' && inputSchema !== null && !Array.isArray(inputSchema);
  }

  function checkedWithoutAjv(inputSchema: unknown): boolean {
    return isObjectSchema(inputSchema) && compiler.simple(inputSchema) !== undefined;
  }

  function prepare(inputSchema: unknown): void {
    if (isObjectSchema(inputSchema)) compiler.compiled(inputSchema);
  }

  const readyStep = (inputSchema: unknown) =>
    isObjectSchema(inputSchema) ? compiler.readyStep(inputSchema) : undefined;

  return { check, checkedWithoutAjv, prepare, readyStep, stats: compiler.stats };
}

/** `/a must be number (got string "1000")`: where, what, and what was sent. */
function describeFirstError(errors: ErrorObject[] | null | undefined, args: Record<string, unknown>): string {
  const error = errors?.[0];
  if (error === undefined) return 'they do not match the inputSchema';
  const where = error.instancePath;
  switch (error.keyword) {
    case 'required':
      return truncateSchemaMessage(
        `${where}/${pointerToken(String(error.params.missingProperty))} is required but missing`,
      );
    case 'additionalProperties':
      return truncateSchemaMessage(
        `${where}/${pointerToken(String(error.params.additionalProperty))} is not a property the ` +
          `inputSchema allows`,
      );
    default: {
      const subject = where === '' ? 'the arguments' : where;
      const got = describeValue(valueAt(args, where));
      return truncateSchemaMessage(
        `${subject} ${error.message ?? 'does not match the inputSchema'} (got ${got})`,
      );
    }
  }
}

/** The value a JSON Pointer from ajv (`/a/0/b`) points at in the arguments. */
function valueAt(root: unknown, pointer: string): unknown {
  if (pointer === '') return root;
  let value = root;
  for (const token of pointer.slice(1).split('/')) {
    if (typeof value !== 'object' || value === null) return undefined;
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    value = Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value;
}

function pointerToken(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** `string "1000"`, `number 5`, `array`, `object`, `null`: the JSON type, and short scalars. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'string') {
    const quoted = JSON.stringify(
      value.length <= MAX_QUOTED_VALUE ? value : `${value.slice(0, MAX_QUOTED_VALUE)}…`,
    );
    return `string ${quoted}`;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  if (typeof value === 'object') return 'an object';
  return typeof value;
}
