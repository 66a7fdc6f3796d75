/**
 * Edits of the `servers:` section of a config file that keep the rest of the file as the user
 * wrote it: comments, key order, blank lines, quoting and flow style of every other entry. The
 * YAML is parsed with the `yaml` package's Document API only to find where each entry is; the
 * edit itself replaces the text of that one entry (rendered from its nodes, so its own comments
 * stay), and everything around it is copied byte for byte. A JSON config is rewritten as JSON
 * with its own indentation (JSON has no comments to keep).
 *
 * Writing is atomic (a temp file beside it, then rename) and keeps the previous file as
 * `FILE.bak`; the caller validates the new text before anything is written.
 */
import { copyFileSync, existsSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Document, isMap, isScalar, parseDocument, YAMLMap, type Pair } from 'yaml';

/** The two sections a config may hold its servers in; new servers go to the first one present. */
const SECTIONS = ['servers', 'mcpServers'] as const;

/** A server entry's plain data, as the file holds it. */
export type ServerEntry = Record<string, unknown>;

/** The servers of a config file, editable in place; `text()` is the file after the edits. */
export interface ServersEdit {
  /** Every server name, in file order, with its section. */
  names(): { readonly name: string; readonly section: string }[];
  entry(name: string): ServerEntry | undefined;
  add(name: string, entry: ServerEntry): void;
  remove(name: string): void;
  /** Sets (true) or removes (false) the entry's `disabled: true`. */
  setDisabled(name: string, disabled: boolean): void;
  text(): string;
}

/** The edit view of a config file's text: JSON for `.json` files, YAML otherwise. */
export function editServers(text: string, file: string): ServersEdit {
  return path.extname(file).toLowerCase() === '.json' ? new JsonServers(text) : new YamlServers(text);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

class JsonServers implements ServersEdit {
  private readonly data: Record<string, unknown>;
  private readonly indent: string;

  constructor(private readonly original: string) {
    const parsed: unknown = JSON.parse(original);
    this.data = isRecord(parsed) ? parsed : {};
    this.indent = /^\{\s*\n([ \t]+)"/.exec(original)?.[1] ?? '  ';
  }

  private section(name: string): Record<string, unknown> | undefined {
    for (const key of SECTIONS) {
      const section = this.data[key];
      if (isRecord(section) && name in section) return section;
    }
    return undefined;
  }

  names() {
    return SECTIONS.flatMap((section) => {
      const entries = this.data[section];
      return isRecord(entries) ? Object.keys(entries).map((name) => ({ name, section })) : [];
    });
  }

  entry(name: string): ServerEntry | undefined {
    const value = this.section(name)?.[name];
    return isRecord(value) ? value : undefined;
  }

  add(name: string, entry: ServerEntry): void {
    const key = SECTIONS.find((s) => isRecord(this.data[s])) ?? 'servers';
    const section = isRecord(this.data[key]) ? this.data[key] : (this.data[key] = {});
    (section as Record<string, unknown>)[name] = entry;
  }

  remove(name: string): void {
    const section = this.section(name);
    if (section !== undefined) delete section[name];
  }

  setDisabled(name: string, disabled: boolean): void {
    const entry = this.entry(name);
    if (entry === undefined) return;
    if (disabled) entry['disabled'] = true;
    else delete entry['disabled'];
  }

  text(): string {
    const trailing = this.original.endsWith('\n') ? '\n' : '';
    return JSON.stringify(this.data, null, this.indent) + trailing;
  }
}

/** One replacement of the original text: [start, end) becomes `text`. */
interface Splice {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

class YamlServers implements ServersEdit {
  private readonly doc: Document;
  private readonly splices: Splice[] = [];
  /** Whether the file pads flow collections (`[ a ]` rather than `[a]`): new text follows suit. */
  private readonly padded: boolean;
  /** Set when an edit cannot be made by splicing (no block section): the whole document is rendered. */
  private rerender = false;

  constructor(private readonly original: string) {
    this.doc = parseDocument(original);
    this.padded = /[[{] \S/.test(original) && !/[[{][^\s\]}]/.test(original);
  }

  private sectionMap(key: string): YAMLMap | undefined {
    const node = this.doc.get(key, true);
    return isMap(node) ? node : undefined;
  }

  private find(name: string): { map: YAMLMap; pair: Pair; index: number } | undefined {
    for (const key of SECTIONS) {
      const map = this.sectionMap(key);
      const index = map?.items.findIndex((p) => isScalar(p.key) && p.key.value === name) ?? -1;
      if (map !== undefined && index !== -1) return { map, pair: map.items[index]!, index };
    }
    return undefined;
  }

  names() {
    return SECTIONS.flatMap((section) =>
      (this.sectionMap(section)?.items ?? []).map((p) => ({
        name: String(isScalar(p.key) ? p.key.value : p.key),
        section,
      })),
    );
  }

  entry(name: string): ServerEntry | undefined {
    const found = this.find(name);
    const value: unknown =
      found === undefined ? undefined : (found.pair.value as { toJSON?: () => unknown })?.toJSON?.();
    return isRecord(value) ? value : undefined;
  }

  add(name: string, entry: ServerEntry): void {
    const map = SECTIONS.map((s) => this.sectionMap(s)).find((m) => m !== undefined);
    const node = this.doc.createNode(entry) as YAMLMap;
    // Short lists read best on one line, as `args: [-y, package]`.
    for (const pair of node.items) {
      const value = pair.value as { flow?: boolean; items?: unknown[] } | null;
      if (value !== null && Array.isArray(value.items)) value.flow = true;
    }
    const pair = this.doc.createPair(name, node);
    const last = map?.items.at(-1);
    if (map === undefined || map.flow === true || last === undefined || this.rerender) {
      // No block section to add to: let the Document place it (the rest of the file is rendered too).
      if (map === undefined) this.doc.set('servers', new YAMLMap());
      (this.sectionMap('servers') ?? map)!.items.push(pair);
      this.rerender = true;
      return;
    }
    const end = this.pairEnd(last);
    const column = this.columnOf(last);
    const lead = this.original[end - 1] === '\n' || end === 0 ? '' : '\n';
    this.splices.push({ start: end, end, text: lead + this.render(pair, column, this.innerIndent(last)) });
  }

  remove(name: string): void {
    const found = this.find(name);
    if (found === undefined) return;
    if (found.map.flow === true || this.rerender) {
      found.map.items.splice(found.index, 1);
      this.rerender = true;
      return;
    }
    // The comment lines right above an entry describe it: they go with it.
    let start = this.lineStart(keyRange(found.pair)[0]);
    const column = this.columnOf(found.pair);
    for (;;) {
      const previous = this.lineStart(start - 1);
      const line = this.original.slice(previous, start - 1);
      if (start === 0 || !new RegExp(`^ {${column}}#`).test(line)) break;
      start = previous;
    }
    found.map.items.splice(found.index, 1);
    this.splices.push({ start, end: this.pairEnd(found.pair), text: '' });
  }

  setDisabled(name: string, disabled: boolean): void {
    const found = this.find(name);
    if (found === undefined) return;
    const value = found.pair.value;
    if (!isMap(value)) return;
    const index = value.items.findIndex((p) => isScalar(p.key) && p.key.value === 'disabled');
    const existing = value.items[index];
    if (found.map.flow === true || value.flow === true || this.rerender || value.items.length === 0) {
      // A one-line entry is rendered again with the change; the rest of the file is kept.
      if (disabled) value.set('disabled', true);
      else value.delete('disabled');
      if (found.map.flow === true || this.rerender) return void (this.rerender = true);
      this.replacePair(found.pair);
      return;
    }
    // A block entry: only the `disabled` line itself is written, added or taken out.
    const column = this.columnOf(value.items[0]!);
    const line = `${' '.repeat(column)}disabled: true\n`;
    if (existing !== undefined) {
      value.items.splice(index, 1);
      const start = this.lineStart(keyRange(existing)[0]);
      this.splices.push({ start, end: this.pairEnd(existing), text: disabled ? line : '' });
    } else if (disabled) {
      value.set('disabled', true);
      const end = this.pairEnd(found.pair);
      this.splices.push({ start: end, end, text: (this.original[end - 1] === '\n' ? '' : '\n') + line });
    }
  }

  /** Writes `pair` again where it stands, its leading comment left in place above it. */
  private replacePair(pair: Pair): void {
    const start = this.lineStart(keyRange(pair)[0]);
    const key = pair.key as { commentBefore?: string | null; spaceBefore?: boolean };
    const saved = { commentBefore: key.commentBefore, spaceBefore: key.spaceBefore };
    key.commentBefore = null;
    key.spaceBefore = false;
    const end = this.pairEnd(pair);
    // Written again as it was: `{ a: 1 }` stays padded, `{a: 1}` stays tight.
    const own = this.original.slice(start, end);
    const padded = /[[{] \S/.test(own) || (!/[[{][^\s\]}]/.test(own) && this.padded);
    const text = this.render(pair, this.columnOf(pair), this.innerIndent(pair), padded);
    Object.assign(key, saved);
    this.splices.push({ start, end, text });
  }

  text(): string {
    if (this.rerender) return this.doc.toString({ lineWidth: 0, flowCollectionPadding: this.padded });
    let out = this.original;
    for (const splice of [...this.splices].sort((a, b) => b.start - a.start))
      out = out.slice(0, splice.start) + splice.text + out.slice(splice.end);
    return out;
  }

  /** `pair` as YAML text, its key at `column`, nested levels `indent` spaces deeper each. */
  private render(pair: Pair, column: number, indent: number, padded = this.padded): string {
    const doc = new Document(new YAMLMap());
    (doc.contents as YAMLMap).items.push(pair);
    const text = doc.toString({ indent, lineWidth: 0, flowCollectionPadding: padded });
    const pad = ' '.repeat(column);
    return text.replace(/^(?=.)/gm, pad);
  }

  private lineStart(position: number): number {
    return position <= 0 ? 0 : this.original.lastIndexOf('\n', position - 1) + 1;
  }

  private columnOf(pair: Pair): number {
    const start = keyRange(pair)[0];
    return start - this.lineStart(start);
  }

  /** How much deeper than its key an entry's keys are written (2 when it cannot be told). */
  private innerIndent(pair: Pair): number {
    const value = pair.value;
    if (!isMap(value) || value.flow === true || value.range === undefined || value.range === null) return 2;
    const start = value.range[0];
    const inner = start - this.lineStart(start) - this.columnOf(pair);
    return inner > 0 ? inner : 2;
  }

  /** Where an entry's text ends: after its last line's newline (its trailing comment included). */
  private pairEnd(pair: Pair): number {
    const node = (pair.value as { range?: [number, number, number] | null } | null)?.range ?? keyRange(pair);
    let end = node[2];
    if (end > 0 && this.original[end - 1] !== '\n') {
      const newline = this.original.indexOf('\n', end);
      end = newline === -1 ? this.original.length : newline + 1;
    }
    return end;
  }
}

function keyRange(pair: Pair): [number, number, number] {
  return (pair.key as { range: [number, number, number] }).range;
}

/**
 * Writes `text` to `file` atomically (a temp file beside it, then rename), keeping the file's
 * mode, after copying the previous file to `backup` (default `FILE.bak`; none for a new file or
 * when `backup` is undefined).
 */
export function writeAtomically(
  file: string,
  text: string,
  options: { readonly backup: string | undefined } = { backup: `${file}.bak` },
): { backup?: string } {
  const exists = existsSync(file);
  const mode = exists ? statSync(file).mode & 0o777 : 0o644;
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  writeFileSync(temp, text, { mode });
  const backup = exists ? options.backup : undefined;
  if (backup !== undefined) copyFileSync(file, backup);
  renameSync(temp, file);
  return backup === undefined ? {} : { backup };
}
