/**
 * Reads policy files into a validated, frozen `PolicySet`.
 *
 * Same stages and error quality as the config loader (src/config/load.ts), with its machinery:
 * YAML parse (syntax errors stop there) → JSON Schema check (`schema/policy.schema.json`, unknown
 * keys with a did-you-mean) → checks the schema cannot express (globs, argument schemas, unique
 * rule ids). Every problem in every file is reported at once, located as file:line:column and key
 * path. There is no fallback: a policy that cannot be read in full is an error, never "allow all",
 * and an empty file is an error too, since a file caught half-written on reload
 * would otherwise silently drop every rule.
 */
import path from 'node:path';
import { compilePrincipalCondition, type PrincipalCondition } from './principal.js';
import { ConfigError, type ConfigIssue } from '../../config/issues.js';
import { deepFreeze } from '../../lib/freeze.js';
import { FLOW_LABELS } from '../../config/types.js';
import { BUILT_IN_CATEGORIES } from '../../config/guardrailCategories.js';
import { levelSettings } from '../../config/guardrails.js';
import type { KeyPath } from '../../config/interpolate.js';
import {
  documentSchemaUrl,
  documentValidator,
  inlineRefs,
  readDocumentSchema,
} from '../../config/documentValidators.js';
import { translateErrors } from '../../config/schemaErrors.js';
import { formatKeyPath } from '../../config/interpolate.js';
import {
  parseYamlSource,
  readSourceFile,
  requireTopLevelMapping,
  toPlainData,
  type YamlSource,
} from '../../config/yamlSource.js';
import { compileGlob } from '../../lib/glob.js';
import { sha256Hex } from '../../lib/hash.js';
import { createArgumentSchemaCompiler, type ArgumentSchemaCompiler } from './argumentSchema.js';
import { normalizeResourceGlob } from './resourceUri.js';
import { compilePathCondition, folderProblem } from './paths.js';
import {
  HINT_NAMES,
  REQUEST_KINDS,
  type ArgumentCondition,
  type Effect,
  type GuardrailRule,
  type HintName,
  type LabelRule,
  type PathCondition,
  type PathConditionSpec,
  type PolicyFile,
  type PolicyMatch,
  type PolicyRule,
  type PolicySet,
  type PolicySource,
  type RequestKind,
} from './types.js';

export const POLICY_SCHEMA_URL = documentSchemaUrl('policy');

/** The parsed schema file. */
export const policySchema: Readonly<Record<string, unknown>> = readDocumentSchema('policy');

/** Generated at build time (see documentValidators.ts); errors point into the `$ref`-inlined schema. */
const validatePolicyDocument = documentValidator('policy', inlineRefs(policySchema));

const KIND = 'policy file';

/**
 * Reads the policy files, in the order given (the order rules are tried in). Relative paths
 * resolve against the current directory: resolve them against the config file's folder first.
 * Throws one `ConfigError` with every problem of every file, including files that cannot be read.
 */
export async function loadPolicies(
  files: readonly string[],
  options: { readonly managed?: readonly string[] } = {},
): Promise<PolicySet> {
  const issues: ConfigIssue[] = [];
  const parsed: PolicyFile[] = [];
  const seen = new Set<string>();
  for (const file of files) {
    const absolute = path.resolve(file);
    if (seen.has(absolute)) {
      // Its rules would be tried twice and its ids would clash with themselves.
      issues.push({
        file: absolute,
        line: 0,
        column: 0,
        path: '',
        message: 'policy file listed more than once',
      });
      continue;
    }
    seen.add(absolute);
    try {
      parsed.push(parsePolicyText(await readSourceFile(absolute, KIND), absolute));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      issues.push(...error.issues);
    }
  }
  if (issues.length === 0) {
    const set = combinePolicyFiles(parsed);
    return options.managed === undefined ? set : Object.freeze({ ...set, managedFiles: options.managed });
  }
  // Problems across files, e.g. an id used in two of them, are only worth reporting once each
  // file is valid on its own; until then they could be echoes of the other errors.
  throw new ConfigError(issues);
}

/**
 * Puts parsed files together in the order given. Throws a `ConfigError` when a rule id is used
 * in more than one file: ids name rules in denials and the audit log, so one must mean one rule.
 */
export function combinePolicyFiles(files: readonly PolicyFile[]): PolicySet {
  const issues: ConfigIssue[] = [];
  const firstUse = new Map<string, PolicySource>();
  for (const policy of files) {
    policy.rules.forEach((rule, index) => {
      if (!rule.idWritten) return;
      const earlier = firstUse.get(rule.id);
      if (earlier === undefined) {
        firstUse.set(rule.id, rule.source);
        return;
      }
      issues.push({
        file: rule.source.file,
        line: rule.source.line,
        column: rule.source.column,
        // The rule's place: where its id is written is not kept once the file is parsed.
        path: formatKeyPath(['rules', index]),
        message: `rule id "${rule.id}" is already used by the rule at ${earlier.file}:${earlier.line}; rule ids must be unique across all policy files`,
      });
    });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return deepFreeze({ files: [...files] });
}

/**
 * Parses one policy file's text (YAML or JSON). Pure: no file access. `file` names it in
 * messages and in made-up rule ids. Throws `ConfigError` listing every problem found.
 */
export function parsePolicyText(text: string, file: string): PolicyFile {
  const absolute = path.resolve(file);
  const source = parseYamlSource(text, absolute, KIND);
  const { issues } = source;
  requireTopLevelMapping(source, {
    empty: 'policy file is empty; it needs "default", "rules", "labels" or "guardrails"',
    expectedKeys: 'with "default" and "rules" keys',
  });
  issues.throwIfAny();

  const data = toPlainData(source) as Readonly<Record<string, unknown>>;
  for (const problem of translateErrors(validatePolicyDocument(data), data)) {
    issues.add(problem.path, problem.at, problem.message);
  }
  if (['default', 'rules', 'labels', 'guardrails'].every((key) => data[key] === undefined)) {
    issues.add([], 'value', 'a policy file needs "default", "rules", "labels" or "guardrails"');
  }

  const policy = normalize(data, { file: absolute, source, compiler: lazyCompiler() });
  issues.throwIfAny();
  return deepFreeze({ ...policy, sha256: sha256Hex(text) });
}

interface Context {
  readonly file: string;
  readonly source: YamlSource;
  readonly compiler: () => ArgumentSchemaCompiler;
}

/** ajv instances cost a few milliseconds: made only for a file with argument conditions. */
function lazyCompiler(): () => ArgumentSchemaCompiler {
  let compiler: ArgumentSchemaCompiler | undefined;
  return () => (compiler ??= createArgumentSchemaCompiler());
}

/**
 * Builds the file's rules from data that may still have schema problems: those were reported,
 * so wrongly typed values are skipped here (the result is then discarded).
 */
function normalize(data: Readonly<Record<string, unknown>>, ctx: Context): Omit<PolicyFile, 'sha256'> {
  const defaultEffect = asEffect(data['default']);
  const rules: PolicyRule[] = [];
  const idAt = new Map<string, number>();
  const list = Array.isArray(data['rules']) ? (data['rules'] as readonly unknown[]) : [];
  list.forEach((value, index) => {
    const entry = asRecord(value);
    if (entry === undefined) return;
    const rule = normalizeRule(entry, index, ctx);
    if (rule === undefined) return;
    if (rule.idWritten) {
      const earlier = idAt.get(rule.id);
      if (earlier !== undefined) {
        ctx.source.issues.add(
          ['rules', index, 'id'],
          'value',
          `rule id "${rule.id}" is already used by the rule at line ${earlier}; rule ids must be unique`,
        );
      } else idAt.set(rule.id, rule.source.line);
    }
    rules.push(rule);
  });
  const labels = normalizeLabels(data, ctx);
  const guardrails = normalizeGuardrailRules(data, ctx);
  return {
    file: ctx.file,
    default:
      defaultEffect === undefined ? null : { effect: defaultEffect, source: sourceOf(ctx, ['default']) },
    rules,
    ...(labels.length > 0 && { labels }),
    ...(guardrails.length > 0 && { guardrails }),
  };
}

function normalizeRule(
  entry: Readonly<Record<string, unknown>>,
  index: number,
  ctx: Context,
): PolicyRule | undefined {
  const at = (...keys: (string | number)[]): KeyPath => ['rules', index, ...keys];
  const match = asRecord(entry['match']);
  const action = asEffect(entry['action']);
  const written = typeof entry['id'] === 'string' && entry['id'] !== '' ? entry['id'] : undefined;
  const reason = typeof entry['reason'] === 'string' && entry['reason'] !== '' ? entry['reason'] : null;
  const conditions = matchConditions(ctx, at('match'), match);
  if (match === undefined || action === undefined) return undefined; // reported by the schema
  return {
    id: written ?? `${path.basename(ctx.file)}#${index + 1}`,
    idWritten: written !== undefined,
    match: conditions,
    action,
    reason,
    source: sourceOf(ctx, at()),
  };
}

/** A rule's (or a label entry's) `match`, each condition compiled and checked. */
function matchConditions(
  ctx: Context,
  keyPath: KeyPath,
  match: Readonly<Record<string, unknown>> | undefined,
): PolicyMatch {
  const at = (key: string): KeyPath => [...keyPath, key];
  const session = sessionCondition(match?.['session']);
  return {
    server: globs(ctx, at('server'), match?.['server']),
    kind: kinds(match?.['kind']),
    tool: globs(ctx, at('tool'), match?.['tool']),
    prompt: globs(ctx, at('prompt'), match?.['prompt']),
    resource: resourceGlobs(ctx, at('resource'), match?.['resource']),
    trusted: typeof match?.['trusted'] === 'boolean' ? match['trusted'] : null,
    annotations: annotations(match?.['annotations']),
    arguments: argumentCondition(ctx, at('arguments'), match?.['arguments']),
    paths: pathCondition(ctx, at('paths'), match?.['paths']),
    principal: principalCondition(ctx, at('principal'), match?.['principal']),
    ...(session && { session }),
  };
}

/** A `session` condition: the flow labels the session must have seen (the schema checked them). */
function sessionCondition(value: unknown): PolicyMatch['session'] {
  const has = asRecord(value)?.['has'];
  if (!Array.isArray(has)) return undefined;
  return { has: FLOW_LABELS.filter((label) => has.includes(label)) };
}

/**
 * The file's `labels:` entries. A `session` condition is refused there: a label says what a tool
 * or resource brings into a session, which cannot depend on what the session saw before.
 */
function normalizeLabels(data: Readonly<Record<string, unknown>>, ctx: Context): LabelRule[] {
  const list = Array.isArray(data['labels']) ? (data['labels'] as readonly unknown[]) : [];
  const entries: LabelRule[] = [];
  list.forEach((value, index) => {
    const entry = asRecord(value);
    const match = asRecord(entry?.['match']);
    if (entry === undefined || match === undefined || !Array.isArray(entry['add'])) return; // the schema
    const keyPath: KeyPath = ['labels', index];
    if (match['session'] !== undefined)
      ctx.source.issues.add(
        [...keyPath, 'match', 'session'],
        'key',
        'a labels entry cannot have a session condition: labels say what a tool or resource brings into a session, whatever came before',
      );
    const written = typeof entry['id'] === 'string' && entry['id'] !== '' ? entry['id'] : undefined;
    const add = entry['add'] as unknown[];
    entries.push({
      id: written ?? `${path.basename(ctx.file)}#labels${index + 1}`,
      match: matchConditions(ctx, [...keyPath, 'match'], match),
      add: FLOW_LABELS.filter((label) => add.includes(label)),
      source: sourceOf(ctx, keyPath),
    });
  });
  return entries;
}

const BUILT_IN = new Set(BUILT_IN_CATEGORIES);

/**
 * The file's `guardrails:` entries. A `session` condition is refused, as for labels: what a
 * result is scanned for is about what is asked, not what the session saw before. Category names
 * must be built-in ones: the names of the config's own patterns are not known to a policy file
 * (which may be shared by configs with other patterns); `secrets` covers those.
 */
function normalizeGuardrailRules(data: Readonly<Record<string, unknown>>, ctx: Context): GuardrailRule[] {
  const list = Array.isArray(data['guardrails']) ? (data['guardrails'] as readonly unknown[]) : [];
  const entries: GuardrailRule[] = [];
  list.forEach((value, index) => {
    const entry = asRecord(value);
    const match = asRecord(entry?.['match']);
    if (entry === undefined || match === undefined) return; // the schema
    const keyPath: KeyPath = ['guardrails', index];
    if (match['session'] !== undefined)
      ctx.source.issues.add(
        [...keyPath, 'match', 'session'],
        'key',
        'a guardrails entry cannot have a session condition: what a result is scanned for is about what is asked, whatever came before',
      );
    const written = typeof entry['id'] === 'string' && entry['id'] !== '' ? entry['id'] : undefined;
    entries.push({
      id: written ?? `${path.basename(ctx.file)}#guardrails${index + 1}`,
      match: matchConditions(ctx, [...keyPath, 'match'], match),
      settings: levelSettings(
        entry,
        keyPath,
        BUILT_IN,
        ctx.source.issues,
        'the built-in ones (see docs/guides/result-guardrails.md); your own patterns are set through "secrets"',
      ),
      source: sourceOf(ctx, keyPath),
    });
  });
  return entries;
}

/** A `principal` condition: subject globs and claim globs, each checked like any glob. */
function principalCondition(ctx: Context, keyPath: KeyPath, value: unknown): PrincipalCondition | null {
  const record = asRecord(value);
  if (record === undefined) return null; // absent, or reported by the schema
  const claims: Record<string, string[]> = {};
  for (const [name, written] of Object.entries(asRecord(record['claims']) ?? {})) {
    const list = globs(ctx, [...keyPath, 'claims', name], written);
    if (list !== null) claims[name] = list;
  }
  return compilePrincipalCondition({
    subject: globs(ctx, [...keyPath, 'subject'], record['subject']),
    claims: Object.keys(claims).length === 0 ? null : claims,
  });
}

/** A glob or list of globs, each compiled once here so a bad one is reported at load time. */
function globs(ctx: Context, keyPath: KeyPath, value: unknown): string[] | null {
  if (value === undefined) return null;
  const list = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  const result: string[] = [];
  list.forEach((glob: unknown, index) => {
    if (typeof glob !== 'string' || glob === '') return; // reported by the schema
    try {
      compileGlob(glob);
      result.push(glob);
    } catch (error) {
      const where = typeof value === 'string' ? keyPath : [...keyPath, index];
      ctx.source.issues.add(where, 'value', error instanceof Error ? error.message : String(error));
    }
  });
  return result;
}

/** One kind or a list of them (the schema reports anything else). */
function kinds(value: unknown): RequestKind[] | null {
  if (value === undefined) return null;
  const list = Array.isArray(value) ? value : [value];
  return list.filter((k): k is RequestKind => REQUEST_KINDS.includes(k as RequestKind));
}

/**
 * Resource globs are compared with normalised URIs, so they are normalised the same way when
 * loaded: `file:///etc/../etc/*` and `FILE:///etc/*` mean what a request's URI would.
 */
function resourceGlobs(ctx: Context, keyPath: KeyPath, value: unknown): string[] | null {
  const list = globs(ctx, keyPath, value);
  return list === null ? null : list.map(normalizeResourceGlob);
}

function annotations(value: unknown): Partial<Record<HintName, boolean>> | null {
  const record = asRecord(value);
  if (record === undefined) return null;
  const wanted: Partial<Record<HintName, boolean>> = {};
  for (const hint of HINT_NAMES) {
    const expected = record[hint];
    if (typeof expected === 'boolean') wanted[hint] = expected;
  }
  return wanted;
}

function argumentCondition(ctx: Context, keyPath: KeyPath, value: unknown): ArgumentCondition | null {
  const schema = asRecord(value);
  if (schema === undefined) return null; // absent, or reported by the schema
  const compiled = ctx.compiler().compile(schema);
  if (compiled.kind === 'ready') return compiled.condition;
  for (const problem of compiled.problems) {
    ctx.source.issues.add([...keyPath, ...problem.path], problem.at, problem.message);
  }
  return null;
}

/**
 * A `paths` condition. Each folder is checked on its own, so every bad one is reported with its
 * place; the schema has already reported wrong types.
 */
function pathCondition(ctx: Context, keyPath: KeyPath, value: unknown): PathCondition | null {
  const record = asRecord(value);
  if (record === undefined || !Array.isArray(record['under'])) return null;
  const under = (record['under'] as unknown[]).filter((f): f is string => typeof f === 'string' && f !== '');
  let ok = true;
  under.forEach((folder, index) => {
    const problem = folderProblem(folder);
    if (problem !== null) {
      ctx.source.issues.add([...keyPath, 'under', index], 'value', problem);
      ok = false;
    }
  });
  const names = record['pathArguments'];
  const spec: PathConditionSpec = {
    under,
    includingAncestors: record['includingAncestors'] === true,
    pathArguments: Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : null,
    every: record['every'] === true,
  };
  if (!ok || under.length === 0) return null;
  try {
    return compilePathCondition(spec);
  } catch (error) {
    ctx.source.issues.add(
      [...keyPath, 'under'],
      'value',
      error instanceof Error ? error.message : String(error),
    );
    return null;
  }
}

function sourceOf(ctx: Context, keyPath: KeyPath): PolicySource {
  const { line, column } = ctx.source.locator.position(keyPath, 'key');
  return { file: ctx.file, line, column };
}

function asEffect(value: unknown): Effect | undefined {
  return value === 'allow' || value === 'deny' || value === 'confirm' ? value : undefined;
}

function asRecord(value: unknown): Readonly<Record<string, unknown>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Readonly<Record<string, unknown>>)
    : undefined;
}
