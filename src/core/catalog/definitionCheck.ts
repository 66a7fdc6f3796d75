import { createRequire } from 'node:module';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/**
 * Tool definitions as a strict host checks them. The TypeScript SDK's client parses a whole
 * `tools/list` answer with its zod schema and throws on any tool it rejects, so one server's odd
 * (but valid JSON Schema) definition would empty the merged list of every server. Each tool is
 * checked here on its own, against the schema of the protocol revision the host negotiated; a
 * rejected definition is repaired when the repair keeps its meaning, and otherwise that one tool
 * is left out.
 *
 * The revisions' schemas, as differences from the SDK's schema (which is 2025-11-25's):
 *  - 2025-06-18 (and earlier) has no `icons` and no `execution`: a host of it does not read
 *    them, so what is wrong with them is not held against the tool;
 *  - 2025-11-25: the SDK's schema as it is (each `properties` value an object, an
 *    `outputSchema` of `"type": "object"`);
 *  - 2026-07-28 takes any JSON value as a `properties` value (a boolean subschema included) and
 *    any JSON object as `outputSchema` (with `$schema`, when present, a string).
 *
 * Repairs are driven by what the check rejects, so a definition the check accepts is served
 * exactly as the server sent it:
 *  - a boolean subschema the check refuses: `true` (anything) becomes `{}`, `false` (nothing)
 *    becomes `{"not": {}}`;
 *  - an `inputSchema` or `outputSchema` without `type` gets `"type": "object"` (arguments and
 *    structured content are objects by definition, so this adds no constraint).
 * Anything else (a schema whose type is not "object", a malformed field) cannot be repaired
 * without guessing, and the tool is left out with the checker's reason.
 */

/** One tool's repaired definition and what was changed. */
export interface RepairedTool {
  readonly tool: string;
  readonly repairs: readonly string[];
}

/** A tool left out because its definition cannot be repaired, and why. */
export interface LeftOutTool {
  readonly tool: string;
  readonly reason: string;
}

export interface CheckedDefinitions {
  /** The tools to serve, repaired where needed, in the server's order. */
  readonly tools: readonly Tool[];
  readonly repaired: readonly RepairedTool[];
  readonly leftOut: readonly LeftOutTool[];
}

/** The protocol revisions whose tool schemas differ. */
export type DefinitionRevision = '2025-06-18' | '2025-11-25' | '2026-07-28';

/**
 * The revision whose schema checks definitions for a host that negotiated `protocolVersion`
 * (revisions are dates, so they compare as text). Before any host: 2025-11-25, the strictest.
 */
export function definitionRevision(protocolVersion: string | undefined): DefinitionRevision {
  if (protocolVersion === undefined || protocolVersion === '') return '2025-11-25';
  if (protocolVersion >= '2026-07-28') return '2026-07-28';
  if (protocolVersion >= '2025-11-25') return '2025-11-25';
  return '2025-06-18';
}

/** Enough rounds for every repairable issue of one definition; each round fixes at least one. */
const MAX_ROUNDS = 64;

/** Checks one tool definition; undefined when `revision`'s schema accepts it as it is. */
export function checkTool(
  tool: Tool,
  revision: DefinitionRevision = '2025-11-25',
): { tool: Tool; repairs: string[] } | { reason: string } | undefined {
  const problems = (definition: unknown) => problemsIn(definition, revision);
  let issues = problems(tool);
  if (issues.length === 0) return undefined;
  const current = structuredClone(tool) as unknown as Record<string, unknown>;
  const repairs: string[] = [];
  for (let round = 0; round < MAX_ROUNDS && issues.length > 0; round++) {
    const fixed = issues.flatMap((issue) => repair(current, issue));
    if (fixed.length === 0) break;
    repairs.push(...fixed);
    issues = problems(current);
  }
  if (issues.length > 0) return { reason: issues.map(describeIssue).join('; ') };
  return { tool: current as unknown as Tool, repairs };
}

/** Checks one server's tools, each on its own, against `revision`'s schema. */
export function checkDefinitions(
  tools: readonly Tool[],
  revision: DefinitionRevision = '2025-11-25',
): CheckedDefinitions {
  const served: Tool[] = [];
  const repaired: RepairedTool[] = [];
  const leftOut: LeftOutTool[] = [];
  for (const tool of tools) {
    const checked = checkTool(tool, revision);
    if (checked === undefined) served.push(tool);
    else if ('reason' in checked) leftOut.push({ tool: String(tool.name), reason: checked.reason });
    else {
      served.push(checked.tool);
      repaired.push({ tool: tool.name, repairs: checked.repairs });
    }
  }
  return { tools: served, repaired, leftOut };
}

interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly code: string;
}

function problemsIn(tool: unknown, revision: DefinitionRevision): Issue[] {
  const issues = plainlyValid(tool) ? [] : sdkIssues(tool);
  if (revision === '2025-11-25') return issues;
  if (revision === '2025-06-18') return issues.filter((issue) => !NOT_IN_2025_06_18.has(issue.path[0]!));
  return [...issues.filter((issue) => !acceptedBy2026(issue)), ...outputSchemaDialect(tool)];
}

/**
 * What the SDK's zod schema says of `tool`. The schema (with zod and the SDK's whole type
 * module, about 100 modules and 14 MB) is loaded the first time a definition needs it, so a
 * gateway whose servers send ordinary definitions never loads it.
 */
function sdkIssues(tool: unknown): Issue[] {
  sdkToolSchema ??= (
    createRequire(import.meta.url)(
      '@modelcontextprotocol/sdk/types.js',
    ) as typeof import('@modelcontextprotocol/sdk/types.js')
  ).ToolSchema;
  const parsed = sdkToolSchema.safeParse(tool);
  return parsed.success ? [] : (parsed.error.issues as unknown as Issue[]);
}

let sdkToolSchema: (typeof import('@modelcontextprotocol/sdk/types.js'))['ToolSchema'] | undefined;

/**
 * True only when the SDK's tool schema certainly accepts `tool`: the shapes servers send, checked
 * field by field as the schema checks them, only stricter (plain objects only), so that a
 * definition this accepts is one the schema accepts. Anything else goes to the schema itself,
 * which alone says what is wrong.
 */
export function plainlyValid(tool: unknown): boolean {
  if (!isPlainObject(tool)) return false;
  const { name, title, description, icons, inputSchema, outputSchema, annotations, execution, _meta } = tool;
  return (
    typeof name === 'string' &&
    optional(title, isString) &&
    optional(description, isString) &&
    optional(icons, (list) => arrayOf(list, isIcon)) &&
    isObjectSchema(inputSchema) &&
    optional(outputSchema, isObjectSchema) &&
    optional(annotations, isAnnotations) &&
    optional(execution, isExecution) &&
    optional(_meta, isRecord)
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** An object the schema takes as a record of string keys: it refuses symbol keys. */
function isRecord(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && Object.getOwnPropertySymbols(value).length === 0;
}

function isString(value: unknown): boolean {
  return typeof value === 'string';
}

function optional(value: unknown, check: (value: unknown) => boolean): boolean {
  return value === undefined || check(value);
}

function arrayOf(value: unknown, check: (item: unknown) => boolean): boolean {
  if (!Array.isArray(value)) return false;
  // By index, not `every`: a hole is an undefined item, which the schema would refuse.
  for (let i = 0; i < value.length; i++) if (!check(value[i])) return false;
  return true;
}

/** `type: "object"`, `properties` an object of objects, `required` an array of strings. */
function isObjectSchema(value: unknown): boolean {
  if (!isPlainObject(value) || value.type !== 'object') return false;
  const { properties, required } = value;
  if (properties !== undefined) {
    if (!isRecord(properties)) return false;
    for (const key in properties) {
      const property = properties[key];
      if (typeof property !== 'object' || property === null) return false;
    }
  }
  return optional(required, (list) => arrayOf(list, isString));
}

function isIcon(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { src, mimeType, sizes, theme } = value;
  return (
    typeof src === 'string' &&
    optional(mimeType, isString) &&
    optional(sizes, (list) => arrayOf(list, isString)) &&
    optional(theme, (t) => t === 'light' || t === 'dark')
  );
}

function isAnnotations(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint } = value;
  const isBoolean = (hint: unknown): boolean => typeof hint === 'boolean';
  return (
    optional(title, isString) &&
    optional(readOnlyHint, isBoolean) &&
    optional(destructiveHint, isBoolean) &&
    optional(idempotentHint, isBoolean) &&
    optional(openWorldHint, isBoolean)
  );
}

function isExecution(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const support = value.taskSupport;
  return support === undefined || support === 'required' || support === 'optional' || support === 'forbidden';
}

/** Fields a 2025-06-18 host does not know. */
const NOT_IN_2025_06_18: ReadonlySet<PropertyKey> = new Set(['icons', 'execution']);

/** What 2026-07-28 accepts of what the SDK's schema rejects: see the header. */
function acceptedBy2026(issue: Issue): boolean {
  const [field, second] = issue.path;
  if (field === 'inputSchema' && second === 'properties' && issue.path.length >= 3) return true;
  return field === 'outputSchema' && issue.path.length >= 2;
}

/** 2026-07-28 asks of an `outputSchema` object only that its `$schema`, if any, be a string. */
function outputSchemaDialect(tool: unknown): Issue[] {
  const output = (tool as { outputSchema?: unknown } | null)?.outputSchema;
  if (typeof output !== 'object' || output === null || !Object.hasOwn(output, '$schema')) return [];
  const dialect = (output as { $schema?: unknown }).$schema;
  return typeof dialect === 'string'
    ? []
    : [{ path: ['outputSchema', '$schema'], message: 'expected a string', code: 'invalid_type' }];
}

const SCHEMA_FIELDS: ReadonlySet<PropertyKey> = new Set(['inputSchema', 'outputSchema']);

/** Repairs what `issue` points at, when that keeps the definition's meaning; the repairs made. */
function repair(tool: Record<string, unknown>, issue: Issue): string[] {
  const { path } = issue;
  if (path.length === 0 || !SCHEMA_FIELDS.has(path[0]!)) return [];
  const parent = at(tool, path.slice(0, -1));
  const key = path[path.length - 1]!;
  if (typeof parent !== 'object' || parent === null) return [];
  const holder = parent as Record<PropertyKey, unknown>;
  const value = holder[key];
  const where = path.map(String).join('.');
  if (typeof value === 'boolean') {
    holder[key] = value ? {} : { not: {} };
    return [`${where}: ${value} became ${value ? '{}' : '{"not":{}}'}`];
  }
  // The schema's `type` is missing: objects are what both schemas describe.
  if (key === 'type' && path.length === 2 && value === undefined) {
    holder.type = 'object';
    return [`${where}: missing, set to "object"`];
  }
  return [];
}

function at(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function describeIssue(issue: Issue): string {
  const where = issue.path.length === 0 ? 'the definition' : issue.path.map(String).join('.');
  return `${where}: ${issue.message}`;
}
