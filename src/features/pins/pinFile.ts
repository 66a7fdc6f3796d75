/**
 * The pins file: per server and upstream tool name, the SHA-256 of the tool's pinned definition,
 * the definition itself (so a change can be shown, not just detected) and when it was pinned.
 *
 * ```json
 * {
 *   "pins": {
 *     "<server>": {
 *       "<tool>": { "definition": { ... }, "pinnedAt": "2026-01-31T12:00:00.000Z", "sha256": "<64 hex>" }
 *     }
 *   },
 *   "version": 1
 * }
 * ```
 *
 * Written pretty-printed with every object's keys sorted, so it reads and diffs well in version
 * control, and atomically (a temporary file in the same folder renamed over it): a reader, or a
 * gateway watching it, never sees half a file. Several gateways (one per host) may share one
 * file: each write re-reads the file and changes only the entries its writer is pinning, so what
 * another wrote in the meantime is kept (two writes in the very same instant can still lose one
 * side's additions; the gateway that lost them pins them again when it sees the file change).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type ConfigIssue } from '../../config/issues.js';
import { parseJsonText, type Locator } from '../../config/jsonSource.js';
import { unknownKeyMessage, describeValue } from '../../config/schemaErrors.js';
import { formatKeyPath } from '../../config/interpolate.js';
import type { KeyPath } from '../../config/interpolate.js';
import { isHash } from '../../lib/hash.js';
import { definitionHash, PINNED_FIELDS, type PinnedDefinition } from './toolDefinitionHash.js';

/** The format written; a file of another version is refused rather than misread. */
export const PIN_FILE_VERSION = 1;

export interface ToolPin {
  /** SHA-256 (hex) of the canonical JSON of `definition` (toolDefinitionHash.ts). */
  readonly sha256: string;
  /** When it was pinned, ISO 8601 UTC. */
  readonly pinnedAt: string;
  readonly definition: PinnedDefinition;
}

/** Server name → upstream tool name → pin. Maps: the names come from upstreams and the file. */
export type PinSet = ReadonlyMap<string, ReadonlyMap<string, ToolPin>>;

export const NO_PINS: PinSet = new Map();

/** One entry to write. */
export interface PinEntry {
  readonly server: string;
  readonly tool: string;
  readonly pin: ToolPin;
}

export function pinOf(pins: PinSet, server: string, tool: string): ToolPin | undefined {
  return pins.get(server)?.get(tool);
}

/** A pin of `definition` made now. */
export function newPin(definition: PinnedDefinition, now = new Date()): ToolPin {
  return { sha256: definitionHash(definition), pinnedAt: now.toISOString(), definition };
}

/**
 * The file's pins and its text; a missing file is no pins (it is created on first use). Throws
 * `ConfigError` naming the file (and line, where the problem has one) when it cannot be read or
 * is not a valid pins file.
 */
export function readPinFile(file: string): { pins: PinSet; text: string | undefined } {
  const text = readPinText(file);
  return { pins: text === undefined ? NO_PINS : parsePinText(text, file), text };
}

/** The text of the pins file, undefined when there is none; `ConfigError` when it cannot be read. */
export function readPinText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError([issue(file, 0, 0, [], `cannot read pins file: ${(error as Error).message}`)]);
  }
}

/** Parses and checks the text of a pins file; throws `ConfigError` listing every problem. */
export function parsePinText(text: string, file: string): PinSet {
  // An empty file (made with `touch`, say) holds no pins yet.
  if (text.trim() === '') return NO_PINS;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    const { line, column } = syntaxErrorPosition(text, error);
    throw new ConfigError([issue(file, line, column, [], `not valid JSON: ${(error as Error).message}`)]);
  }
  // Positions of keys and values, for messages; absent for odd but valid JSON (duplicate keys).
  // Found only once there is a problem to place: locating every node of a large, valid file
  // (10,000 tools make about 8 MiB) cost more time and memory than all the rest of reading it.
  let locator: Locator | undefined;
  let located = false;
  const problems: ConfigIssue[] = [];
  const report = (keyPath: KeyPath, message: string, at: 'key' | 'value' = 'value') => {
    if (!located) {
      located = true;
      locator = parseJsonText(text)?.locator;
    }
    const { line, column } = locator?.position(keyPath, at) ?? { line: 0, column: 0 };
    problems.push(issue(file, line, column, keyPath, message));
  };
  const pins = new Map<string, Map<string, ToolPin>>();
  const top = asObject(data);
  if (top === undefined) {
    report([], `expected a JSON object with "version" and "pins", got ${describeValue(data)}`);
  } else {
    for (const key of Object.keys(top))
      if (key !== 'version' && key !== 'pins')
        report([key], unknownKeyMessage(key, ['version', 'pins']), 'key');
    if (top['version'] !== PIN_FILE_VERSION)
      report(
        top['version'] === undefined ? [] : ['version'],
        top['version'] === undefined
          ? `missing required key "version" (${PIN_FILE_VERSION})`
          : `this mcp-warden reads pins files of version ${PIN_FILE_VERSION}, got ${describeValue(top['version'])}`,
      );
    const servers = asObject(top['pins']);
    if (servers === undefined)
      report(
        top['pins'] === undefined ? [] : ['pins'],
        expected('"pins"', 'an object of servers', top['pins']),
      );
    for (const [server, tools] of Object.entries(servers ?? {})) {
      const toolsObject = asObject(tools);
      if (toolsObject === undefined) {
        report(['pins', server], `expected an object of tools, got ${describeValue(tools)}`);
        continue;
      }
      const byTool = new Map<string, ToolPin>();
      pins.set(server, byTool);
      for (const [tool, entry] of Object.entries(toolsObject)) {
        const pin = checkPin(entry, tool, ['pins', server, tool], report);
        if (pin !== undefined) byTool.set(tool, pin);
      }
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return pins;
}

const PIN_KEYS = ['definition', 'pinnedAt', 'sha256'];

function checkPin(
  entry: unknown,
  tool: string,
  at: KeyPath,
  report: (keyPath: KeyPath, message: string, where?: 'key' | 'value') => void,
): ToolPin | undefined {
  const pin = asObject(entry);
  if (pin === undefined) {
    report(at, `expected an object with ${PIN_KEYS.join(', ')}, got ${describeValue(entry)}`);
    return undefined;
  }
  let valid = true;
  const fail = (keyPath: KeyPath, message: string, where?: 'key' | 'value') => {
    valid = false;
    report(keyPath, message, where);
  };
  for (const key of Object.keys(pin))
    if (!PIN_KEYS.includes(key)) fail([...at, key], unknownKeyMessage(key, PIN_KEYS), 'key');
  const { sha256, pinnedAt, definition } = pin;
  if (!isHash(sha256))
    fail(
      sha256 === undefined ? at : [...at, 'sha256'],
      expected('"sha256"', '64 lowercase hex digits', sha256),
    );
  if (typeof pinnedAt !== 'string' || Number.isNaN(Date.parse(pinnedAt)))
    fail(
      pinnedAt === undefined ? at : [...at, 'pinnedAt'],
      expected('"pinnedAt"', 'an ISO 8601 date and time', pinnedAt),
    );
  const fields = asObject(definition);
  if (fields === undefined) {
    fail(
      definition === undefined ? at : [...at, 'definition'],
      expected('"definition"', 'an object', definition),
    );
  } else {
    for (const key of Object.keys(fields))
      if (!(PINNED_FIELDS as readonly string[]).includes(key))
        fail([...at, 'definition', key], unknownKeyMessage(key, PINNED_FIELDS), 'key');
    if (fields['name'] !== tool)
      fail([...at, 'definition', 'name'], `must be the tool's name, "${tool}" (the key it is pinned under)`);
  }
  if (!valid) return undefined;
  const pinned = {
    sha256: sha256 as string,
    pinnedAt: pinnedAt as string,
    definition: fields as PinnedDefinition,
  };
  // An edited definition (or hash) would otherwise pin something else than what is shown.
  if (definitionHash(pinned.definition) !== pinned.sha256) {
    report(
      [...at, 'sha256'],
      'does not match the definition next to it (was one of them edited by hand?); accept the tool again with mcp-warden pins accept',
    );
    return undefined;
  }
  return pinned;
}

/**
 * The text of a pins file holding `pins`: pretty-printed, every object's keys sorted (servers,
 * tools and the definitions too), ending with a newline.
 */
export function formatPinFile(pins: PinSet): string {
  const servers: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const server of [...pins.keys()].sort()) {
    const tools: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    const byTool = pins.get(server)!;
    for (const tool of [...byTool.keys()].sort()) tools[tool] = byTool.get(tool);
    servers[server] = tools;
  }
  return `${JSON.stringify(sortKeys({ pins: servers, version: PIN_FILE_VERSION }), null, 2)}\n`;
}

/** What a write did: the pins now in the file, its text, and the entries that changed it. */
export interface PinWrite {
  readonly pins: PinSet;
  readonly text: string;
  readonly written: readonly PinEntry[];
}

/**
 * Adds `entries` to the pins file, atomically. The file is read again first and only these
 * entries change, so pins written meanwhile by another gateway or `pins accept` are kept.
 * `replace: false` (a gateway pinning on first sight) leaves an entry alone when the file
 * already has a pin for that tool: what is in the file was pinned first and stays the reference.
 * `replace: true` (accepting a change) overwrites it. Nothing is written when nothing changes.
 * Throws `ConfigError` when the file on disk is not a valid pins file (it is never overwritten
 * then), and the file system's error when it cannot be written.
 */
export function addPins(file: string, entries: readonly PinEntry[], options: { replace: boolean }): PinWrite {
  const current = readPinFile(file);
  const { pins, written } = mergePins(current.pins, entries, options);
  if (written.length === 0) return { pins, text: current.text ?? '', written };
  const text = formatPinFile(pins);
  writeAtomically(file, text);
  return { pins, text, written };
}

/** `pins` with `entries` added as `addPins` adds them, and the entries that changed something. */
export function mergePins(
  pins: PinSet,
  entries: readonly PinEntry[],
  options: { replace: boolean },
): { pins: PinSet; written: PinEntry[] } {
  const next = new Map([...pins].map(([server, tools]) => [server, new Map(tools)]));
  const written: PinEntry[] = [];
  for (const entry of entries) {
    const existing = next.get(entry.server)?.get(entry.tool);
    if (existing !== undefined && (!options.replace || existing.sha256 === entry.pin.sha256)) continue;
    const tools = next.get(entry.server) ?? new Map<string, ToolPin>();
    tools.set(entry.tool, entry.pin);
    next.set(entry.server, tools);
    written.push(entry);
  }
  return { pins: written.length === 0 ? pins : next, written };
}

/** Writes `text` to a temporary file in `file`'s folder (mode 0600) and renames it over `file`. */
export function writeAtomically(file: string, text: string): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true });
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** A copy of plain JSON data with every object's keys in sorted order (null-prototype objects). */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  const sorted = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value).sort())
    sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function expected(key: string, what: string, value: unknown): string {
  return value === undefined
    ? `missing required key ${key}`
    : `expected ${what}, got ${describeValue(value)}`;
}

function issue(file: string, line: number, column: number, keyPath: KeyPath, message: string): ConfigIssue {
  return { file, line, column, path: formatKeyPath(keyPath), message };
}

/**
 * Where `JSON.parse` stopped, from its message: V8 says `at position N` (Node 20) and may add
 * `(line L column C)` (later versions). Line 0 when it says neither.
 */
function syntaxErrorPosition(text: string, error: unknown): { line: number; column: number } {
  const message = error instanceof Error ? error.message : '';
  const lineColumn = /\(line (\d+) column (\d+)\)/.exec(message);
  if (lineColumn !== null) return { line: Number(lineColumn[1]), column: Number(lineColumn[2]) };
  const position = /at position (\d+)/.exec(message);
  if (position === null) return { line: 0, column: 0 };
  const before = text.slice(0, Number(position[1]));
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: before.length - lineStart + 1 };
}
