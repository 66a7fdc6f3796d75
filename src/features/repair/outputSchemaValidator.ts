/**
 * Validation of `structuredContent` against a tool's `outputSchema`, for result repair.
 *
 * The schema comes from an upstream server and is not trusted; it is compiled by the shared
 * untrusted-schema compiler (lib/schema/untrustedSchema.ts), which bounds it, guards its
 * patterns and refuses remote references. Anything we cannot judge safely is reported as
 * `unverifiable` rather than guessed at: repair then leaves the result alone. `check` never throws.
 */
import type { ErrorObject } from 'ajv';
import {
  createUntrustedSchemaCompiler,
  DEFAULT_UNTRUSTED_SCHEMA_LIMITS,
  describeSchemaError,
  truncateSchemaMessage,
  type UntrustedSchemaLimits,
  type UntrustedSchemaStats,
} from '../../lib/schema/untrustedSchema.js';

export type SchemaVerdict =
  { kind: 'valid' } | { kind: 'invalid'; message: string } | { kind: 'unverifiable'; reason: string };

export type OutputValidatorLimits = UntrustedSchemaLimits;

/** The limits every upstream schema is held to (see lib/schema/untrustedSchema.ts). */
export const DEFAULT_OUTPUT_VALIDATOR_LIMITS: OutputValidatorLimits = DEFAULT_UNTRUSTED_SCHEMA_LIMITS;

export type OutputValidatorStats = UntrustedSchemaStats;

/** What repair needs: a fake with just `check` will do in tests. */
export interface OutputValidator {
  check(tool: { outputSchema?: unknown }, data: unknown): SchemaVerdict;
}

/** A validator that can also compile a tool's schema ahead of its first result. */
export interface PreparedOutputValidator extends OutputValidator {
  /**
   * Whether results matching `tool.outputSchema` are recognised without ajv (true without a
   * schema); the check is built now and cached. Never throws.
   */
  checkedWithoutAjv(tool: { outputSchema?: unknown }): boolean;
  /** Compiles `tool.outputSchema` now (a no-op without one); never throws. */
  prepare(tool: { outputSchema?: unknown }): void;
  /** The next piece of readying ajv for this schema ahead of `prepare` (see untrustedSchema.ts). */
  readyStep(tool: { outputSchema?: unknown }): (() => void) | undefined;
}

const VALID: SchemaVerdict = Object.freeze({ kind: 'valid' });

export function createOutputValidator(
  options: { limits?: Partial<OutputValidatorLimits> } = {},
): PreparedOutputValidator & { readonly stats: OutputValidatorStats } {
  const compiler = createUntrustedSchemaCompiler({
    what: 'outputSchema',
    ...(options.limits && { limits: options.limits }),
  });

  function check(tool: { outputSchema?: unknown }, data: unknown): SchemaVerdict {
    try {
      const schema = tool.outputSchema;
      if (schema === undefined || schema === true) return { kind: 'valid' };
      if (schema === false) {
        return { kind: 'invalid', message: 'the outputSchema is `false`, which nothing matches' };
      }
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
        return { kind: 'unverifiable', reason: 'the outputSchema is not a JSON Schema object' };
      }
      // As for arguments: a simple schema vouches for a matching result without ajv, so a
      // gateway whose schemas are all simple never loads it (lib/schema/simpleSchema.ts).
      if (compiler.simple(schema as Record<string, unknown>)?.(data) === true) return VALID;
      const compiled = compiler.compiled(schema as Record<string, unknown>);
      if (compiled.kind === 'unverifiable') return compiled;
      compiler.beginValidation();
      if (compiled.validate(data) === true) return { kind: 'valid' };
      return { kind: 'invalid', message: errorMessage(compiled.validate.errors) };
    } catch (error) {
      // Thrown while validating: a pattern refused to run on a long string, or a recursive
      // schema recursed too deep on deep data. We do not know the answer, so we do not guess.
      return { kind: 'unverifiable', reason: `the data could not be checked: ${describeSchemaError(error)}` };
    }
  }

  function checkedWithoutAjv(tool: { outputSchema?: unknown }): boolean {
    const schema = tool.outputSchema;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return true;
    return compiler.simple(schema as Record<string, unknown>) !== undefined;
  }

  function prepare(tool: { outputSchema?: unknown }): void {
    const schema = tool.outputSchema;
    if (typeof schema === 'object' && schema !== null && !Array.isArray(schema))
      compiler.compiled(schema as Record<string, unknown>);
  }

  function readyStep(tool: { outputSchema?: unknown }): (() => void) | undefined {
    const schema = tool.outputSchema;
    return typeof schema === 'object' && schema !== null && !Array.isArray(schema)
      ? compiler.readyStep(schema as Record<string, unknown>)
      : undefined;
  }

  return { check, checkedWithoutAjv, prepare, readyStep, stats: compiler.stats };
}

function errorMessage(errors: ErrorObject[] | null | undefined): string {
  const error = errors?.[0];
  if (error === undefined) return 'it does not match';
  // ajv's message for additionalProperties does not say which property; the model needs that.
  const extra =
    error.keyword === 'additionalProperties' ? ` (${JSON.stringify(error.params.additionalProperty)})` : '';
  return truncateSchemaMessage(
    `structuredContent${error.instancePath} ${error.message ?? 'does not match'}${extra}`,
  );
}
