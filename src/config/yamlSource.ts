/**
 * What every YAML file mcp-warden reads has in common (the config and policy files): parsing
 * with positions, mapping key paths back to line and column, and collecting every problem found
 * as located `ConfigIssue`s. Moved here from load.ts unchanged so policies get the same errors.
 * A file written as JSON takes a faster path that gives the same results (jsonSource.ts); the
 * `yaml` package is loaded only when a file needs it.
 *
 * Longer than most modules because positions, key paths and issue collection for YAML documents
 * are one job that the config and policy loaders share.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Document, LineCounter, YAMLError } from 'yaml';
import { ConfigError, type ConfigIssue } from './issues.js';
import { describeValue } from './schemaErrors.js';
import { formatKeyPath, type KeyPath } from './interpolate.js';
import { parseJsonText, type Locator, type Position } from './jsonSource.js';
import { vendored } from '../lib/vendored.js';

export type { Locator, Position } from './jsonSource.js';

/**
 * Loaded on first use, synchronously (the package is CommonJS under Node): by the built gateway
 * from its bundled copy with V8's code cache (lib/vendored.ts), at every start with a YAML config.
 */
let yamlModule: typeof import('yaml') | undefined;
function yaml(): typeof import('yaml') {
  return (yamlModule ??=
    vendored<typeof import('yaml')>('yaml') ??
    (createRequire(import.meta.url)('yaml') as typeof import('yaml')));
}

/** A parsed YAML file with what is needed to report problems in it. */
export interface YamlSource {
  readonly locator: Locator;
  readonly issues: IssueList;
  /** What the document holds at its top level. */
  readonly top:
    { readonly kind: 'empty' | 'mapping' | 'list' } | { readonly kind: 'scalar'; readonly value: unknown };
  /** The document as plain data; throws for a document that expands too much. */
  readonly toJS: () => unknown;
}

/**
 * Reads a file as UTF-8 text. A file that cannot be read becomes a `ConfigError` naming it, e.g.
 * `cannot read policy file: ENOENT: no such file or directory`; `kind` is "config file" or
 * "policy file".
 */
export async function readSourceFile(absolute: string, kind: string): Promise<string> {
  try {
    return await readFile(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError([
      { file: absolute, line: 0, column: 0, path: '', message: `cannot read ${kind}: ${osReason(error)}` },
    ]);
  }
}

/**
 * Parses YAML (or JSON) text. Syntax errors and warnings are thrown at once as a `ConfigError`:
 * nothing after them can be trusted. `kind` names the file in messages ("config file").
 */
export function parseYamlSource(text: string, file: string, kind: string): YamlSource {
  const json = parseJsonText(text);
  if (json !== undefined) {
    return {
      locator: json.locator,
      issues: new IssueList(file, json.locator, kind),
      top: { kind: 'mapping' },
      toJS: () => json.data,
    };
  }
  if (!looksLikeJson(text, file)) return parseWithYaml(text, file, kind);
  // YAML reads more than JSON does (comments, trailing commas: VS Code's mcp.json is JSONC), so
  // a JSON file is still read with it; only when that fails too is the file reported, and then
  // in JSON's words, since a JSON file's author knows nothing of YAML's rules.
  try {
    return parseWithYaml(text, file, kind);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const problem = jsonSyntaxProblem(text);
    if (problem === undefined) throw error;
    // Without a position from JSON.parse, YAML's place for the same fault is the best guess.
    const first = error.issues[0];
    const position =
      problem.offset !== undefined
        ? lineColumn(text, problem.offset)
        : { line: first?.line ?? 0, column: first?.column ?? 0 };
    throw new ConfigError([{ file, ...position, path: '', message: `invalid JSON: ${problem.message}` }]);
  }
}

/** A file named `.json`, or whose text starts with `{`: what its author wrote as JSON. */
function looksLikeJson(text: string, file: string): boolean {
  return file.toLowerCase().endsWith('.json') || /^\s*\{/.test(text);
}

/**
 * What `JSON.parse` says is wrong with `text`, without the position it appends (given as
 * `offset` instead, when it says one), or undefined when `text` is valid JSON.
 */
function jsonSyntaxProblem(text: string): { message: string; offset?: number } | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const at = / in JSON at position (\d+)(?: \(line \d+ column \d+\))?$/.exec(message);
    if (at !== null) return { message: message.slice(0, at.index), offset: Number(at[1]) };
    if (/^Unexpected end of JSON input/.test(message))
      return { message: 'the text ends before the JSON does (a missing "}" or "]"?)', offset: text.length };
    return { message };
  }
}

/** The 1-based line and column of `offset` in `text`. */
function lineColumn(text: string, offset: number): Position {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - (before.lastIndexOf('\n') + 1) + 1 };
}

/** `parseYamlSource` without the JSON fast path (exported for the test that compares the two). */
export function parseWithYaml(text: string, file: string, kind: string): YamlSource {
  const { LineCounter, parseDocument, isMap, isScalar, isSeq } = yaml();
  const lineCounter = new LineCounter();
  // logLevel 'error': below 'warn' the library prints nothing (stdout carries JSON-RPC) and we
  // report its findings ourselves; 'silent' would also drop the error for a second `---` document.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, logLevel: 'error' });
  const locator = new YamlLocator(doc, lineCounter);
  const issues = new IssueList(file, locator, kind);

  // Warnings are fatal too: e.g. an unknown tag such as `!env X` silently becomes the string "X".
  for (const problem of [...doc.errors, ...doc.warnings]) issues.addYamlProblem(problem, locator);
  issues.throwIfAny();
  checkListItemIndentation(doc, text, issues, locator);
  issues.throwIfAny();
  const { contents } = doc;
  const top: YamlSource['top'] =
    contents === null
      ? { kind: 'empty' }
      : isMap(contents)
        ? { kind: 'mapping' }
        : isSeq(contents)
          ? { kind: 'list' }
          : { kind: 'scalar', value: isScalar(contents) ? contents.value : {} };
  return { locator, issues, top, toJS: () => doc.toJS({ maxAliasCount: 100 }) };
}

/**
 * Reports a list item indented deeper than the one above it. YAML reads such a line as more
 * text of the item above (`- two` then `  - three` is the one item "two - three"), so the
 * mistake would otherwise pass silently, changing a server's arguments or a rule's globs.
 * Quoted text is left alone: there a line starting with "- " was written on purpose.
 */
function checkListItemIndentation(
  doc: Document,
  text: string,
  issues: IssueList,
  locator: YamlLocator,
): void {
  const { visit, Scalar } = yaml();
  visit(doc, {
    Scalar(_key, node) {
      if (node.type !== Scalar.PLAIN || node.range == null) return;
      const [start, end] = node.range;
      const found = /\n([ \t]*)-(?=[ \t]|$)/m.exec(text.slice(start, end));
      if (found === null) return;
      const offset = start + found.index + 1 + (found[1]?.length ?? 0);
      issues.addAt(
        locator.lineCol(offset),
        `this "-" is indented deeper than the list item above it, so YAML reads it as more of that item's text (${JSON.stringify(String(node.value))}); indent it as far as the item above to make it an item of its own, or quote the text if the dash belongs to it`,
      );
    },
  });
}

/** The document as plain data. Throws a `ConfigError` for a document that expands too much. */
export function toPlainData(source: YamlSource): unknown {
  try {
    return source.toJS();
  } catch (error) {
    // Only the alias-expansion guard throws here (a "billion laughs" document).
    source.issues.add([], 'value', `invalid YAML: ${error instanceof Error ? error.message : String(error)}`);
    source.issues.throwIfAny();
    throw error; // unreachable: the issue above was thrown
  }
}

// ---------------------------------------------------------------------------------------------
// Positions

/** Maps key paths of the parsed data back to places in the YAML text. */
class YamlLocator implements Locator {
  constructor(
    private readonly doc: Document,
    private readonly lines: LineCounter,
  ) {}

  /**
   * Where `keyPath` is written. `value` points at a scalar or flow value; for a block mapping or
   * list (which starts on a later line) and for an empty value, the key is the clearer place.
   * A path that does not (fully) exist in the text — e.g. a key added by an alias — falls back
   * to the deepest part that does.
   */
  position(keyPath: KeyPath, at: 'key' | 'value'): Position {
    const { isAlias, isCollection, isMap, isScalar, isSeq } = yaml();
    let node: unknown = this.doc.contents;
    let key: unknown;
    let complete = true;
    for (const segment of keyPath) {
      const current = this.resolve(node);
      if (isMap(current)) {
        const pair = current.items.find((item) => keyText(item.key) === String(segment));
        if (pair === undefined) {
          complete = false;
          break;
        }
        key = pair.key;
        node = pair.value;
      } else if (isSeq(current) && typeof segment === 'number' && current.items[segment] !== undefined) {
        key = undefined;
        node = current.items[segment];
      } else {
        complete = false;
        break;
      }
    }
    const pointsWell =
      (isScalar(node) && node.range != null && node.range[0] < node.range[1]) ||
      (isCollection(node) && node.flow === true) ||
      isAlias(node);
    if (complete && (at === 'value' || key === undefined) && pointsWell) return this.at(node);
    if (key !== undefined) return this.at(key);
    return this.at(node);
  }

  /** Keys of the mapping at `keyPath` in file order: JS objects put integer-like keys first. */
  orderedKeys(keyPath: KeyPath, data: Readonly<Record<string, unknown>>): string[] {
    const { isMap } = yaml();
    let node: unknown = this.doc.contents;
    for (const segment of keyPath) {
      const current = this.resolve(node);
      node = isMap(current)
        ? current.items.find((item) => keyText(item.key) === String(segment))?.value
        : undefined;
    }
    const map = this.resolve(node);
    const order = new Map<string, number>();
    if (isMap(map)) map.items.forEach((item, index) => order.set(keyText(item.key) ?? '', index));
    return Object.keys(data).sort((a, b) => (order.get(a) ?? Infinity) - (order.get(b) ?? Infinity));
  }

  /** The key path of the mapping key that starts at `offset`, if any (for duplicate keys). */
  keyPathAt(offset: number): KeyPath | undefined {
    const { isMap, isScalar, isSeq } = yaml();
    const search = (node: unknown, prefix: KeyPath): KeyPath | undefined => {
      if (isMap(node)) {
        for (const item of node.items) {
          const text = keyText(item.key);
          if (text === undefined) continue;
          if (isScalar(item.key) && item.key.range?.[0] === offset) return [...prefix, text];
          const found = search(item.value, [...prefix, text]);
          if (found !== undefined) return found;
        }
      } else if (isSeq(node)) {
        for (const [index, item] of node.items.entries()) {
          const found = search(item, [...prefix, index]);
          if (found !== undefined) return found;
        }
      }
      return undefined;
    };
    return search(this.doc.contents, []);
  }

  lineCol(offset: number): Position {
    const { line, col } = this.lines.linePos(offset);
    return { line, column: col };
  }

  private at(node: unknown): Position {
    const range = (node as { range?: readonly number[] } | null | undefined)?.range;
    return this.lineCol(range?.[0] ?? 0);
  }

  private resolve(node: unknown): unknown {
    return yaml().isAlias(node) ? node.resolve(this.doc) : node;
  }
}

/** The key as `toJS` spells it, for scalar keys (the only ones a valid config has). */
function keyText(key: unknown): string | undefined {
  return yaml().isScalar(key) ? String(key.value) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Issues

/**
 * Which problems need only stop one server when the config is loaded for serving: those that
 * come from the environment the host started us in (an unset variable, an env file that is
 * missing) or from a transport mcp-warden does not speak. `file` (the default): a mistake in the
 * file, which stops everything, as `check` would.
 */
export type IssueScope = 'file' | 'server';

/**
 * Every problem found in one file, located; thrown together as one `ConfigError`. Warnings (things
 * that do not stop the file being used, such as a key that is ignored) are kept apart: they never
 * throw, and the loader hands them back with its result.
 */
export class IssueList {
  private readonly issues: ConfigIssue[] = [];
  /**
   * The key path of each problem that need only stop the server whose entry it is in (see
   * `IssueScope`), for `takeWhere`.
   */
  private readonly serverScoped = new Map<ConfigIssue, KeyPath>();
  private readonly warned: ConfigIssue[] = [];
  private readonly unexpanded = new Set<string>();

  constructor(
    private readonly file: string,
    private readonly locator: Locator,
    /** How the file is named in messages: "config file", "policy file". */
    private readonly kind = 'config file',
  ) {}

  add(keyPath: KeyPath, at: 'key' | 'value', message: string, options: { scope?: IssueScope } = {}): void {
    const dotted = formatKeyPath(keyPath);
    // A value whose ${VAR} could not be expanded has already been reported; judging the
    // half-expanded text (as a duration, URL, ...) would only add a confusing second message.
    if (this.unexpanded.has(dotted)) return;
    const issue = this.push(dotted, this.locator.position(keyPath, at), message);
    if (issue !== undefined && options.scope === 'server') this.serverScoped.set(issue, keyPath);
  }

  /**
   * Removes the problems reported with scope `server` at a key path that `belongs` picks, and returns them
   * in file order grouped by what `belongs` returned (e.g. the server each is in).
   */
  takeWhere(belongs: (keyPath: KeyPath) => string | undefined): Map<string, ConfigIssue[]> {
    const taken = new Map<string, ConfigIssue[]>();
    for (const issue of inFileOrder(this.issues)) {
      const keyPath = this.serverScoped.get(issue);
      const group = keyPath === undefined ? undefined : belongs(keyPath);
      if (group === undefined) continue;
      this.issues.splice(this.issues.indexOf(issue), 1);
      taken.set(group, [...(taken.get(group) ?? []), issue]);
    }
    return taken;
  }

  warn(keyPath: KeyPath, at: 'key' | 'value', message: string): void {
    const position = this.locator.position(keyPath, at);
    this.warned.push({ file: this.file, ...position, path: formatKeyPath(keyPath), message });
  }

  /** The warnings so far, in file order. */
  warnings(): ConfigIssue[] {
    return inFileOrder(this.warned);
  }

  addUnexpanded(keyPath: KeyPath, message: string): void {
    // What the environment lacks, not a mistake in the file: it need only stop its own server.
    this.add(keyPath, 'value', message, { scope: 'server' });
    this.unexpanded.add(formatKeyPath(keyPath));
  }

  addYamlProblem(problem: YAMLError, locator: YamlLocator): void {
    const offset = problem.pos[0];
    if (problem.code === 'DUPLICATE_KEY') {
      const keyPath = locator.keyPathAt(offset);
      if (keyPath !== undefined) {
        this.push(
          formatKeyPath(keyPath),
          locator.lineCol(offset),
          `duplicate key "${String(keyPath.at(-1))}"`,
        );
        return;
      }
    }
    // The library's own wording for this one addresses programmers ("use parseAllDocuments()").
    const message =
      problem.code === 'MULTIPLE_DOCS'
        ? `the file holds more than one YAML document (a second "---"); a ${this.kind} must hold exactly one`
        : problem.message;
    this.push('', locator.lineCol(offset), `invalid YAML: ${message}`);
  }

  /** A problem at a place in the text that no key path names (e.g. inside a value). */
  addAt(position: Position, message: string): void {
    this.push('', position, message);
  }

  throwIfAny(): void {
    if (this.issues.length === 0) return;
    throw new ConfigError(inFileOrder(this.issues));
  }

  /** The issue added, or undefined when the same one was there already. */
  private push(dotted: string, position: Position, message: string): ConfigIssue | undefined {
    const duplicate = this.issues.some((issue) => issue.path === dotted && issue.message === message);
    if (duplicate) return undefined;
    const issue = { file: this.file, ...position, path: dotted, message };
    this.issues.push(issue);
    return issue;
  }
}

/** File order reads best; Array.prototype.sort is stable, so same-place issues keep their order. */
function inFileOrder(issues: readonly ConfigIssue[]): ConfigIssue[] {
  return [...issues].sort((a, b) => a.line - b.line || a.column - b.column);
}

/** `ENOENT: no such file or directory` without the `, open '/path'` tail: the path is shown already. */
export function osReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { syscall } = error as NodeJS.ErrnoException;
  return syscall === undefined
    ? error.message
    : error.message.replace(new RegExp(`, ${syscall}( '.*')?$`), '');
}

/**
 * Reports a document that is empty or not a mapping at the top level (both file kinds need a
 * mapping), naming the keys the reader should have written.
 */
export function requireTopLevelMapping(
  source: YamlSource,
  messages: { empty: string; expectedKeys: string },
): void {
  const { top, issues } = source;
  if (top.kind === 'empty') {
    issues.add([], 'value', messages.empty);
  } else if (top.kind !== 'mapping') {
    const got = top.kind === 'scalar' ? describeValue(top.value) : 'a list';
    issues.add([], 'value', `expected a mapping at the top level (${messages.expectedKeys}), got ${got}`);
  }
}
