/**
 * Validation of our own documents (the config file, policy files) against their schemas in
 * `schema/`. Compiling a schema with ajv, and loading ajv to do it, cost about 110 ms of every
 * start-up (measured), so `npm run build` turns each schema into plain code with ajv's standalone
 * mode (scripts/generate-validators.mjs writes `dist/config/generated/<kind>.cjs`) and the built
 * gateway only loads that. Run from source (vitest) there is no build output to trust, so the
 * same validator is compiled with ajv on first use; the `generated-validators` test project
 * runs the config and policy tests against the generated code as well (vitest.config.ts).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ErrorObject } from 'ajv';
import { requireGenerated } from '../lib/generatedCode.js';
import { generatedIdentity, rememberingValid } from '../lib/validDocuments.js';

export type DocumentKind = 'config' | 'policy';

/** Each document's schema file in `schema/`, and the generated validator's in `dist/config/generated/`. */
export const DOCUMENT_SCHEMAS: Readonly<Record<DocumentKind, { schema: string; generated: string }>> = {
  config: { schema: 'proxy.config.schema.json', generated: 'config.cjs' },
  policy: { schema: 'policy.schema.json', generated: 'policy.cjs' },
};

type SchemaObject = Readonly<Record<string, unknown>>;

/** `src/config/` (vitest) and `dist/config/` (built) are both two levels below the package root. */
export function documentSchemaUrl(kind: DocumentKind): URL {
  return new URL(`../../schema/${DOCUMENT_SCHEMAS[kind].schema}`, import.meta.url);
}

/** The parsed schema file. */
export function readDocumentSchema(kind: DocumentKind): SchemaObject {
  return JSON.parse(readFileSync(documentSchemaUrl(kind), 'utf8')) as SchemaObject;
}

/**
 * The schema with every local `$ref` replaced by the object it points to: one shared object per
 * target, so `definitions.server` and each use of it are the same object. This is what gets
 * compiled, for two reasons. ajv compiles a referenced schema that itself holds a `$ref` into a
 * function of its own, and the errors from inside it then carry a `schemaPath` relative to that
 * schema, not to the document's root; without any `$ref`, each error's `schemaPath` locates its
 * rule from the root, which is how errors from the generated code are tied back to the schema
 * objects the translation compares against (see `documentValidator`). Siblings of a `$ref` are
 * annotations (title, description, default) and are dropped with it: they check nothing.
 */
export function inlineRefs(schema: SchemaObject): SchemaObject {
  const done = new Map<unknown, unknown>();
  const inProgress = new Set<unknown>();
  const resolve = (ref: string): unknown => {
    if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported, got ${ref}`);
    let node: unknown = schema;
    for (const segment of ref.slice(2).split('/')) node = child(node, unescapeSegment(segment));
    if (node === undefined) throw new Error(`$ref ${ref} points at nothing`);
    return node;
  };
  const visit = (node: unknown): unknown => {
    if (typeof node !== 'object' || node === null) return node;
    const existing = done.get(node);
    if (existing !== undefined) return existing;
    if (inProgress.has(node)) throw new Error('recursive $refs cannot be inlined');
    inProgress.add(node);
    const ref = isRecord(node) ? node['$ref'] : undefined;
    const result =
      typeof ref === 'string'
        ? visit(resolve(ref))
        : Array.isArray(node)
          ? node.map(visit)
          : Object.fromEntries(Object.entries(node).map(([key, value]) => [key, visit(value)]));
    inProgress.delete(node);
    done.set(node, result);
    return result;
  };
  return visit(schema) as SchemaObject;
}

/** ajv's validate function, as compiled or as generated: errors are left on the function. */
type ValidateFunction = ((document: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * Only loaded when running from source: ajv's compiler. In the built gateway this is undefined
 * and ajv is never loaded.
 */
const compileFromSource: ((schema: SchemaObject) => ValidateFunction) | undefined = import.meta.url.endsWith(
  '.ts',
)
  ? await import('./documentAjv.js').then(
      ({ createDocumentAjv }) =>
        (schema) =>
          createDocumentAjv().compile(schema),
    )
  : undefined;

/**
 * A validator of `kind` documents returning every error (none when the document is valid).
 * `schema` is `inlineRefs` of the schema file: each error's `schema` and `parentSchema` are
 * objects of it, whether the checking code was generated at build time (which embeds copies of
 * the schema's parts) or compiled now. Loading happens on the first call.
 */
export function documentValidator(
  kind: DocumentKind,
  schema: SchemaObject,
): (document: unknown) => readonly ErrorObject[] {
  let validate: ValidateFunction | undefined;
  const generated = () =>
    fileURLToPath(new URL(`./generated/${DOCUMENT_SCHEMAS[kind].generated}`, import.meta.url));
  // Only generated code has an identity: compiled from source, every document is checked.
  const identity = (): string | null =>
    compileFromSource === undefined ? generatedIdentity(generated()) : null;
  return rememberingValid(identity, (document) => {
    validate ??= compileFromSource?.(schema) ?? (requireGenerated(generated()) as ValidateFunction);
    if (validate(document)) return [];
    return (validate.errors ?? []).map((error) => ({
      ...error,
      schema: schemaAt(schema, error.schemaPath, 0),
      parentSchema: schemaAt(schema, error.schemaPath, 1) as ErrorObject['parentSchema'],
    }));
  });
}

/** The schema object at `pointer` (ajv's `#/a/b`, each segment URI-encoded), `up` levels above it. */
function schemaAt(schema: SchemaObject, pointer: string, up: number): unknown {
  const segments = pointer === '#' ? [] : pointer.slice(2).split('/');
  let node: unknown = schema;
  for (const segment of segments.slice(0, segments.length - up)) {
    node = child(node, unescapeSegment(segment));
  }
  return node;
}

function child(node: unknown, key: string): unknown {
  return isRecord(node) || Array.isArray(node) ? (node as Record<string, unknown>)[key] : undefined;
}

/** One segment of a JSON pointer written as a URI fragment (RFC 6901 section 6). */
function unescapeSegment(segment: string): string {
  return decodeURIComponent(segment).replaceAll('~1', '/').replaceAll('~0', '~');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
