/**
 * Where desktop hosts keep their MCP server lists, and how to read one: the part of
 * `mcp-warden init` that finds a user's existing servers. Pure apart from reading files, and
 * told the home folder, platform, environment and working folder, so tests can point it anywhere.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The hosts whose files `init` reads, and `generic` for any other stdio host. */
export type HostKind = 'claude-desktop' | 'claude-code' | 'cursor' | 'vscode' | 'generic';

export const HOST_NAMES: Readonly<Record<HostKind, string>> = {
  'claude-desktop': 'Claude Desktop',
  'claude-code': 'Claude Code',
  cursor: 'Cursor',
  vscode: 'VS Code',
  generic: 'a stdio MCP host',
};

/** What the search is told about the machine. */
export interface Machine {
  readonly home: string;
  readonly platform: NodeJS.Platform;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The project folder: where `.vscode/mcp.json`, `.cursor/mcp.json` and `.mcp.json` are looked for. */
  readonly cwd: string;
}

/** A host config file that may hold servers, and which host it belongs to. */
export interface Candidate {
  readonly host: HostKind;
  readonly file: string;
}

/** One host's server list, as read from its file. */
export interface HostServers {
  readonly host: HostKind;
  readonly file: string;
  /** Server entries by name, as the host wrote them. */
  readonly servers: Readonly<Record<string, unknown>>;
}

/** A host file that exists but cannot be read as one. */
export class HostConfigError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'HostConfigError';
  }
}

/** The folder where per-user application settings live on this platform (Claude Desktop, VS Code). */
function appDataFolder(machine: Machine): string {
  if (machine.platform === 'darwin') return path.join(machine.home, 'Library', 'Application Support');
  if (machine.platform === 'win32')
    return machine.env.APPDATA ?? path.join(machine.home, 'AppData', 'Roaming');
  return machine.env.XDG_CONFIG_HOME ?? path.join(machine.home, '.config');
}

/** Every place a host keeps servers, in the order they are offered; whether each exists is not checked. */
export function candidateFiles(machine: Machine): Candidate[] {
  const appData = appDataFolder(machine);
  const join = machine.platform === 'win32' ? path.win32.join : path.join;
  return [
    { host: 'claude-desktop', file: join(appData, 'Claude', 'claude_desktop_config.json') },
    { host: 'claude-code', file: join(machine.cwd, '.mcp.json') },
    { host: 'claude-code', file: join(machine.home, '.claude.json') },
    { host: 'cursor', file: join(machine.cwd, '.cursor', 'mcp.json') },
    { host: 'cursor', file: join(machine.home, '.cursor', 'mcp.json') },
    { host: 'vscode', file: join(machine.cwd, '.vscode', 'mcp.json') },
    { host: 'vscode', file: join(appData, 'Code', 'User', 'mcp.json') },
    { host: 'vscode', file: join(appData, 'Code', 'User', 'settings.json') },
  ];
}

/** The host a file given with `--from` belongs to, told by its name and folder. */
export function hostOfFile(file: string): HostKind {
  const base = path.basename(file);
  const parent = path.basename(path.dirname(file));
  if (base === 'claude_desktop_config.json') return 'claude-desktop';
  if (base === '.claude.json' || base === '.mcp.json') return 'claude-code';
  if (parent === '.cursor') return 'cursor';
  if (parent === '.vscode' || (parent === 'User' && base === 'settings.json')) return 'vscode';
  if (parent === 'User' && base === 'mcp.json') return 'vscode';
  return 'generic';
}

/**
 * JSON with comments and trailing commas, as VS Code writes its settings: drops both (never
 * inside strings) and parses. Throws SyntaxError like JSON.parse.
 */
export function parseJsonWithComments(text: string): unknown {
  return JSON.parse(dropOutsideStrings(dropOutsideStrings(text, comment), trailingComma));
}

/** Where a comment starting at `i` ends (exclusive), or undefined if none starts there. */
function comment(text: string, i: number): number | undefined {
  if (text[i] !== '/') return undefined;
  if (text[i + 1] === '/') {
    const end = text.indexOf('\n', i);
    return end === -1 ? text.length : end;
  }
  if (text[i + 1] === '*') {
    const end = text.indexOf('*/', i + 2);
    return end === -1 ? text.length : end + 2;
  }
  return undefined;
}

/** A comma at `i` with only blanks between it and a closing bracket: its end, or undefined. */
function trailingComma(text: string, i: number): number | undefined {
  if (text[i] !== ',') return undefined;
  const closing = /\s*[}\]]/y;
  closing.lastIndex = i + 1;
  return closing.test(text) ? i + 1 : undefined;
}

/** The text without the runs `drop` finds, looking only outside JSON strings. */
function dropOutsideStrings(text: string, drop: (text: string, i: number) => number | undefined): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    const end = drop(text, i);
    if (end === undefined) out += text[i++];
    else i = end;
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The servers a host file holds: `mcpServers` (Claude Desktop, Cursor, Claude Code's `.mcp.json`),
 * `servers` (VS Code's mcp.json), `mcp.servers` (VS Code's settings.json), and for Claude Code's
 * `~/.claude.json` also the servers it keeps for the project folder `cwd`. Undefined when the file
 * does not exist; an empty list when it holds no servers.
 */
export function readHostServers(file: string, host: HostKind, cwd: string): HostServers | undefined {
  if (!existsSync(file)) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new HostConfigError(file, `cannot read it: ${(error as Error).message}`);
  }
  let data: unknown;
  try {
    data = text.trim() === '' ? {} : parseJsonWithComments(text);
  } catch (error) {
    throw new HostConfigError(file, `not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(data)) throw new HostConfigError(file, 'expected a JSON object');
  const servers: Record<string, unknown> = {};
  const take = (list: unknown) => {
    if (isObject(list)) Object.assign(servers, list);
  };
  take(data.mcpServers);
  take(data.servers);
  if (isObject(data.mcp)) take(data.mcp.servers);
  take(data['mcp.servers']);
  if (path.basename(file) === '.claude.json' && isObject(data.projects)) {
    const project = data.projects[cwd];
    if (isObject(project)) take(project.mcpServers);
  }
  return { host, file, servers };
}

/** A server entry as mcp-warden will hold it, or why it was left out. */
export type ConvertedServer =
  | {
      readonly name: string;
      readonly entry: Record<string, unknown>;
      readonly notes: readonly string[];
      /** A remote server (`url`): it may need a sign-in, which goes through the gateway. */
      readonly remote?: boolean;
      /**
       * Header values taken out of the entry because they look secret: the entry holds
       * `${keychain:NAME}` in their place, and init stores each value under NAME (or, where it
       * cannot, writes an environment variable reference instead).
       */
      readonly secrets?: readonly MovedSecret[];
    }
  | { readonly name: string; readonly skipped: string };

/** A secret header value moved out of a converted entry. */
export interface MovedSecret {
  /** The secret's name, as in `${keychain:NAME}` (and as an environment variable's name). */
  readonly name: string;
  readonly header: string;
  readonly value: string;
}

/**
 * Headers whose values are credentials: an `Authorization` header and the usual API-key and
 * token headers. Their values never go into the written config.
 */
const SECRET_HEADER = /authorization|token|key|secret|password|cookie|session|auth/i;

/** `Bearer abc` keeps its scheme in the config; only the credential after it is moved. */
const AUTH_SCHEME = /^(Bearer|Basic|Token|Bot)\s+(\S[\s\S]*)$/i;

/** The keys of a host's server entry that mean the same to mcp-warden; others are left out with a note. */
const KEPT_KEYS = ['type', 'command', 'args', 'env', 'envFile', 'cwd', 'url', 'headers', 'disabled'];

/** Whether an entry starts mcp-warden itself (a host already set up with it). */
function runsWarden(entry: Record<string, unknown>): boolean {
  const words = [entry.command, ...(Array.isArray(entry.args) ? entry.args : [])];
  return words.some((w) => typeof w === 'string' && /(^|[/\\])mcp-warden(@[^/\\]*)?([/\\]|$)/.test(w));
}

/** A name mcp-warden accepts for a server: letters, digits, `_` and `-`, at most 64 characters. */
function serverName(name: string, taken: ReadonlySet<string>): string {
  const base = name.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 60) || 'server';
  let candidate = base;
  for (let n = 2; taken.has(candidate); n++) candidate = `${base}_${n}`;
  return candidate;
}

/** Every string in `value`, recursively, passed through `map`. */
function mapStrings(value: unknown, map: (s: string) => string): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, map));
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, map)]));
  return value;
}

/**
 * Turns a host's server entries into mcp-warden's, saying what was changed or left out and why.
 * `${workspaceFolder}` is written out as the folder it meant in the host's file (`workspaceFolder`),
 * since in the new config it would mean the new config's folder.
 */
export function convertServers(
  servers: Readonly<Record<string, unknown>>,
  options: { workspaceFolder?: string } = {},
): ConvertedServer[] {
  const taken = new Set<string>();
  const converted: ConvertedServer[] = [];
  for (const [original, value] of Object.entries(servers)) {
    if (!isObject(value)) {
      converted.push({ name: original, skipped: 'its entry is not an object' });
      continue;
    }
    if (runsWarden(value)) {
      converted.push({ name: original, skipped: 'it runs mcp-warden itself' });
      continue;
    }
    const remote = typeof value.url === 'string' && value.command === undefined;
    if (value.type === 'sse' && !remote) {
      converted.push({ name: original, skipped: 'it has type "sse" but no url' });
      continue;
    }
    const name = serverName(original, taken);
    taken.add(name);
    const notes: string[] = [];
    if (name !== original)
      notes.push(`renamed from "${original}" (server names may use letters, digits, _ and -)`);
    let entry: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (KEPT_KEYS.includes(key)) entry[key] = v;
      else notes.push(`left out "${key}" (a setting of the host, not of the server)`);
    }
    let secrets: MovedSecret[] = [];
    if (remote) {
      if (value.type === 'sse')
        notes.push(
          'was type "sse" (the older HTTP+SSE transport, which mcp-warden does not speak): written as type http with the same url; if the server only speaks SSE, give its Streamable HTTP endpoint (often ending in /mcp) instead',
        );
      // Cursor writes no type for a url entry: saying it keeps the file plain to read.
      const { type: _type, ...rest } = entry;
      ({ entry, secrets } = moveSecretHeaders({ type: 'http', ...rest }, name));
    }
    const folder = options.workspaceFolder;
    if (folder !== undefined && JSON.stringify(entry).includes('${workspaceFolder')) {
      entry = mapStrings(entry, (s) =>
        s
          .replaceAll('${workspaceFolderBasename}', path.basename(folder))
          .replaceAll('${workspaceFolder}', folder),
      ) as Record<string, unknown>;
      notes.push(`\${workspaceFolder} written out as ${folder}`);
    }
    if (JSON.stringify(entry).includes('${input:'))
      notes.push(
        'uses ${input:…}, which only the editor can ask for: put the value in an environment variable and write ${env:NAME}',
      );
    converted.push({ name, entry, notes, ...(remote && { remote, secrets }) });
  }
  return converted;
}

/**
 * The entry with each secret-looking header value replaced by `${keychain:NAME}`, NAME made
 * from the server's and the header's names. A value that already refers to a variable
 * (`${env:TOKEN}`) is no secret in the file and stays as it is.
 */
function moveSecretHeaders(
  entry: Record<string, unknown>,
  server: string,
): { entry: Record<string, unknown>; secrets: MovedSecret[] } {
  const headers = entry.headers;
  if (!isObject(headers)) return { entry, secrets: [] };
  const secrets: MovedSecret[] = [];
  const kept: Record<string, unknown> = {};
  for (const [header, value] of Object.entries(headers)) {
    if (typeof value !== 'string' || value.includes('${') || !SECRET_HEADER.test(header)) {
      kept[header] = value;
      continue;
    }
    const name = `${server}_${header}`.replace(/[^A-Za-z0-9]+/g, '_').toUpperCase();
    const scheme = AUTH_SCHEME.exec(value);
    const credential = scheme === null ? value : scheme[2]!;
    kept[header] = scheme === null ? `\${keychain:${name}}` : `${scheme[1]} \${keychain:${name}}`;
    secrets.push({ name, header, value: credential });
  }
  return { entry: { ...entry, headers: kept }, secrets };
}
