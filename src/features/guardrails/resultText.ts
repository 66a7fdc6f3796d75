import { Buffer } from 'node:buffer';
/**
 * The text in a result that reaches the model, as segments with the path each came from, and a
 * copy of the result with some of them replaced. Nothing here knows what a secret is.
 */

/** A key path into the result: member names and array indexes. */
export type ResultPath = readonly (string | number)[];

/** One string of the result and where it is. */
export interface Segment {
  readonly path: ResultPath;
  readonly text: string;
  /** `base64`: the result holds `text` base64-encoded (a text resource sent as a blob). */
  readonly encoding?: 'base64';
}

/** Which kinds of answer carry text for the model, and where. */
export type ScannedKind = 'tools/call' | 'tasks/result' | 'resources/read' | 'prompts/get';

/** How deep a structuredContent is walked; deeper values are not scanned (nor expected). */
const MAX_DEPTH = 64;

/**
 * The strings of `result` a host shows the model: text blocks and embedded resources' text
 * (`content`), every string in `structuredContent`, a read resource's text (`contents`), and a
 * prompt's messages, and a resource's `blob` whose MIME type says it is text (a server may send
 * a text file base64-encoded; the host decodes it for the model all the same). Other binary
 * (images, audio, blobs of other types) is not scanned.
 */
export function segmentsOf(kind: ScannedKind, result: object): Segment[] {
  const found: Segment[] = [];
  const r = result as Record<string, unknown>;
  if (kind === 'resources/read') resourceContents(r['contents'], ['contents'], found);
  else if (kind === 'prompts/get') {
    const messages = r['messages'];
    if (Array.isArray(messages))
      messages.forEach((m: unknown, i) => {
        if (isRecord(m)) contentBlock(m['content'], ['messages', i, 'content'], found);
      });
  } else {
    const content = r['content'];
    if (Array.isArray(content))
      content.forEach((block: unknown, i) => contentBlock(block, ['content', i], found));
    if ('structuredContent' in r) strings(r['structuredContent'], ['structuredContent'], 0, found);
  }
  return found;
}

function contentBlock(block: unknown, at: ResultPath, into: Segment[]): void {
  if (!isRecord(block)) return;
  if (block['type'] === 'text' && typeof block['text'] === 'string')
    into.push({ path: [...at, 'text'], text: block['text'] });
  else if (block['type'] === 'resource') resource(block['resource'], [...at, 'resource'], into);
}

function resourceContents(contents: unknown, at: ResultPath, into: Segment[]): void {
  if (!Array.isArray(contents)) return;
  contents.forEach((item: unknown, i) => resource(item, [...at, i], into));
}

/** A resource's contents: its `text`, or its `blob` when that is text. */
function resource(item: unknown, at: ResultPath, into: Segment[]): void {
  if (!isRecord(item)) return;
  if (typeof item['text'] === 'string') into.push({ path: [...at, 'text'], text: item['text'] });
  else if (typeof item['blob'] === 'string' && isTextType(item['mimeType'])) {
    const text = decodedText(item['blob']);
    if (text !== undefined) into.push({ path: [...at, 'blob'], text, encoding: 'base64' });
  }
}

/** MIME types a host would show as text: `text/*`, JSON, XML, YAML, JavaScript and their `+json`/`+xml` kin. */
function isTextType(mimeType: unknown): boolean {
  if (typeof mimeType !== 'string') return false;
  const type = mimeType.split(';')[0]!.trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    /^application\/(json|xml|yaml|x-yaml|javascript|x-sh|toml|x-www-form-urlencoded)$/.test(type) ||
    /\+(json|xml|yaml)$/.test(type)
  );
}

/** The UTF-8 text a base64 blob holds; undefined when it is not valid base64 of valid UTF-8. */
function decodedText(blob: string): string | undefined {
  const bytes = Buffer.from(blob, 'base64');
  // Node skips characters that are not base64: such a blob is not what it says it is.
  if (bytes.toString('base64').replace(/=+$/, '') !== blob.replace(/=+$/, '')) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** A segment's new text as the result holds it (encoded again, for a blob). */
export function encodedAs(segment: Segment, text: string): string {
  return segment.encoding === 'base64' ? Buffer.from(text, 'utf8').toString('base64') : text;
}

function strings(value: unknown, at: ResultPath, depth: number, into: Segment[]): void {
  if (typeof value === 'string') into.push({ path: at, text: value });
  else if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return;
  else if (Array.isArray(value))
    value.forEach((item: unknown, i) => strings(item, [...at, i], depth + 1, into));
  else for (const [key, item] of Object.entries(value)) strings(item, [...at, key], depth + 1, into);
}

/**
 * A copy of `result` with the strings at the given paths replaced: only the objects and arrays
 * on those paths are copied, the rest is shared (results are values, never edited in place).
 */
export function withStrings(
  result: object,
  replacements: readonly { path: ResultPath; text: string }[],
): object {
  let copy: unknown = result;
  for (const { path, text } of replacements) copy = setAt(copy, path, 0, text);
  return copy as object;
}

function setAt(value: unknown, path: ResultPath, index: number, text: string): unknown {
  if (index === path.length) return text;
  const key = path[index]!;
  if (Array.isArray(value)) {
    const copy = [...(value as unknown[])];
    copy[key as number] = setAt(copy[key as number], path, index + 1, text);
    return copy;
  }
  const record = value as Record<string, unknown>;
  return { ...record, [key]: setAt(record[key as string], path, index + 1, text) };
}

/**
 * A path as a reader writes it: `content[0].text`, `structuredContent.user["e-mail"]`. Audit
 * records and block messages name where something was found this way, never what.
 */
export function describePath(path: ResultPath): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
