/**
 * The fast path for config and policy files written as JSON (a Claude Desktop config, the
 * benchmark's files): `JSON.parse` plus a scan that records where each key and value starts,
 * so that loading them needs no YAML parser (loading `yaml` is about 25 ms and 4 MB of every
 * start-up, measured). It gives exactly what the YAML path gives for such a file: the same data
 * and the same line and column for every key path (a unit test compares the two). Anything it
 * does not mirror exactly is left to the YAML path: text `JSON.parse` rejects (whose errors the
 * YAML parser locates), a top level that is not an object, duplicate keys (an error in YAML,
 * last-one-wins in JSON), and line breaks other than \n and \r\n.
 */
import type { KeyPath } from './interpolate.js';

export interface Position {
  readonly line: number;
  readonly column: number;
}

/** Maps key paths of the parsed data back to places in the text. */
export interface Locator {
  /**
   * Where `keyPath` is written. `value` points at the value; `key` at the key, or at the value
   * of a list item. A path that does not (fully) exist in the text falls back to the deepest
   * part that does.
   */
  position(keyPath: KeyPath, at: 'key' | 'value'): Position;
  /** Keys of the mapping at `keyPath` in file order: JS objects put integer-like keys first. */
  orderedKeys(keyPath: KeyPath, data: Readonly<Record<string, unknown>>): string[];
}

interface JsonNode {
  /** Offset of the value's first character. */
  readonly start: number;
  /** An object's members in file order: offset of the key's opening quote, and the value. */
  readonly members?: Map<string, { readonly keyStart: number; readonly value: JsonNode }>;
  readonly items?: JsonNode[];
}

/** The parsed document and its locator, or undefined when the YAML path must read the text. */
export function parseJsonText(text: string): { data: unknown; locator: Locator } | undefined {
  if (!/^\s*\{/.test(text) || /\r(?!\n)/.test(text)) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  const root = new JsonScanner(text).document();
  return root === undefined ? undefined : { data, locator: new JsonLocator(root, text) };
}

/** Walks text that `JSON.parse` accepted; undefined when an object repeats a key. */
class JsonScanner {
  private at = 0;
  constructor(private readonly text: string) {}

  document(): JsonNode | undefined {
    try {
      return this.value();
    } catch (error) {
      if (error === DUPLICATE_KEY) return undefined;
      throw error;
    }
  }

  private value(): JsonNode {
    this.skipSpace();
    const start = this.at;
    const char = this.text[start];
    if (char === '{') return this.object(start);
    if (char === '[') return this.array(start);
    if (char === '"') this.string();
    else while (this.at < this.text.length && !/[\s,\]}]/.test(this.text[this.at]!)) this.at++;
    return { start };
  }

  private object(start: number): JsonNode {
    const members = new Map<string, { keyStart: number; value: JsonNode }>();
    this.at++; // {
    this.skipSpace();
    while (this.text[this.at] !== '}') {
      const keyStart = this.at;
      const key = JSON.parse(this.text.slice(keyStart, this.string())) as string;
      if (members.has(key)) throw DUPLICATE_KEY;
      this.skipSpace();
      this.at++; // :
      members.set(key, { keyStart, value: this.value() });
      this.skipSpace();
      if (this.text[this.at] === ',') this.at++;
      this.skipSpace();
    }
    this.at++; // }
    return { start, members };
  }

  private array(start: number): JsonNode {
    const items: JsonNode[] = [];
    this.at++; // [
    this.skipSpace();
    while (this.text[this.at] !== ']') {
      items.push(this.value());
      this.skipSpace();
      if (this.text[this.at] === ',') this.at++;
      this.skipSpace();
    }
    this.at++; // ]
    return { start, items };
  }

  /** Skips a string starting at the current quote; returns the offset just after it. */
  private string(): number {
    this.at++;
    while (this.text[this.at] !== '"') this.at += this.text[this.at] === '\\' ? 2 : 1;
    return ++this.at;
  }

  private skipSpace(): void {
    while (/\s/.test(this.text[this.at] ?? '')) this.at++;
  }
}

const DUPLICATE_KEY = new Error('duplicate key');

class JsonLocator implements Locator {
  /** Offsets at which lines start, as the YAML path's line counter records them. */
  private readonly lineStarts: number[] = [0];

  constructor(
    private readonly root: JsonNode,
    text: string,
  ) {
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) this.lineStarts.push(i + 1);
  }

  // Mirrors the YAML path's Locator.position: in JSON every value "points well" (scalars are
  // never empty, objects and arrays are flow collections).
  position(keyPath: KeyPath, at: 'key' | 'value'): Position {
    let node = this.root;
    let keyStart: number | undefined;
    let complete = true;
    for (const segment of keyPath) {
      const member = node.members?.get(String(segment));
      const item = typeof segment === 'number' ? node.items?.[segment] : undefined;
      if (member !== undefined) {
        keyStart = member.keyStart;
        node = member.value;
      } else if (item !== undefined) {
        keyStart = undefined;
        node = item;
      } else {
        complete = false;
        break;
      }
    }
    if (complete && (at === 'value' || keyStart === undefined)) return this.lineCol(node.start);
    return this.lineCol(keyStart ?? node.start);
  }

  orderedKeys(keyPath: KeyPath, data: Readonly<Record<string, unknown>>): string[] {
    let node: JsonNode | undefined = this.root;
    for (const segment of keyPath) node = node?.members?.get(String(segment))?.value;
    const order = new Map([...(node?.members?.keys() ?? [])].map((key, index) => [key, index]));
    return Object.keys(data).sort((a, b) => (order.get(a) ?? Infinity) - (order.get(b) ?? Infinity));
  }

  private lineCol(offset: number): Position {
    let low = 0;
    let high = this.lineStarts.length - 1;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (this.lineStarts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return { line: low + 1, column: offset - this.lineStarts[low]! + 1 };
  }
}
