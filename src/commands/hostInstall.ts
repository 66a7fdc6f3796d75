/**
 * `mcp-warden init --from A --from B` and `init --install HOST`: the servers of several host
 * files merged into one config, and mcp-warden registered in a host's own file in place of the
 * servers it now runs. The host file is changed only when something in it must change (a second
 * run changes nothing), after a timestamped backup beside it; what was done and how to undo it
 * is printed.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeAtomically } from './configEdit.js';
import {
  candidateFiles,
  HOST_NAMES,
  HostConfigError,
  parseJsonWithComments,
  type ConvertedServer,
  type HostKind,
  type HostServers,
  type Machine,
} from './hostConfigs.js';

/** The name mcp-warden's own entry has in a host's file (as the printed instructions say). */
export const WARDEN_ENTRY = 'warden';

/** One converted server with the host file it came from. */
export interface MergedServer {
  readonly source: HostServers;
  /** Its name in the host file. */
  readonly original: string;
  readonly converted: ConvertedServer;
  /** Said of it in the merge: renamed for a clash, or left out as the same as an earlier one. */
  readonly clash?: string;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The servers of several host files in one list, in the order the files were given. A name
 * already taken by an earlier file is kept for that one: the later server is left out when its
 * entry is the same (the same server set up in two hosts), else added as NAME_HOST (NAME_HOST_2,
 * ...), and either way the report says so.
 */
export function mergeServers(
  sources: readonly HostServers[],
  convert: (source: HostServers) => ConvertedServer[],
): { servers: Record<string, Record<string, unknown>>; merged: MergedServer[] } {
  const servers: Record<string, Record<string, unknown>> = {};
  const from = new Map<string, HostServers>();
  const merged: MergedServer[] = [];
  for (const source of sources) {
    // One converted server per entry of the host file, in its order.
    const originals = Object.keys(source.servers);
    for (const [index, converted] of convert(source).entries()) {
      const original = originals[index] ?? converted.name;
      if (!('entry' in converted)) {
        merged.push({ source, original, converted });
        continue;
      }
      const earlier = servers[converted.name];
      if (earlier === undefined) {
        servers[converted.name] = converted.entry;
        from.set(converted.name, source);
        merged.push({ source, original, converted });
        continue;
      }
      const first = from.get(converted.name)!;
      if (same(earlier, converted.entry)) {
        merged.push({
          source,
          original,
          converted: {
            name: converted.name,
            skipped: `the same server as "${converted.name}" from ${first.file}`,
          },
        });
        continue;
      }
      const base = `${converted.name}_${source.host.replace(/-/g, '_')}`.slice(0, 60);
      let name = base;
      for (let n = 2; servers[name] !== undefined; n++) name = `${base}_${n}`;
      servers[name] = converted.entry;
      from.set(name, source);
      merged.push({
        source,
        original,
        converted: { ...converted, name },
        clash: `renamed from "${converted.name}": ${first.file} has a different server of that name`,
      });
    }
  }
  return { servers, merged };
}

/** The file `--install HOST` writes: the host's own file a server was taken from, else its user file. */
export function installTarget(host: HostKind, sources: readonly HostServers[], machine: Machine): string {
  const given = sources.find((s) => s.host === host);
  if (given !== undefined) return given.file;
  // The user-wide file: Claude Desktop's one file, Claude Code's ~/.claude.json, Cursor's
  // ~/.cursor/mcp.json, VS Code's user mcp.json.
  const user = candidateFiles(machine).find(
    (c) =>
      c.host === host &&
      (path.basename(c.file) === 'claude_desktop_config.json' ||
        path.basename(c.file) === '.claude.json' ||
        c.file === path.join(machine.home, '.cursor', 'mcp.json') ||
        (path.basename(path.dirname(c.file)) === 'User' && path.basename(c.file) === 'mcp.json')),
  );
  if (user === undefined) throw new HostConfigError(host, 'mcp-warden knows no config file of this host');
  return user.file;
}

/**
 * The object a host file keeps its servers in, made if missing: VS Code's `servers` in its
 * mcp.json and `mcp.servers` in its settings.json, everyone else's `mcpServers`.
 */
function serverList(data: Record<string, unknown>, host: HostKind, file: string): Record<string, unknown> {
  const child = (parent: Record<string, unknown>, key: string): Record<string, unknown> => {
    const value = parent[key];
    if (isObject(value)) return value;
    const made: Record<string, unknown> = {};
    parent[key] = made;
    return made;
  };
  if (host !== 'vscode') return child(data, 'mcpServers');
  return path.basename(file) === 'settings.json'
    ? child(child(data, 'mcp'), 'servers')
    : child(data, 'servers');
}

/** What `installInto` did, for the report. */
export interface Installed {
  readonly file: string;
  /** undefined when nothing had to change. */
  readonly backup?: string;
  readonly created: boolean;
  readonly added: boolean;
  readonly removed: readonly string[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Puts mcp-warden's entry into the host file `file` (creating it if needed) and takes out the
 * servers `moved` (name → entry as read from this file) that now run inside mcp-warden. Nothing
 * is written when the file already is that way.
 */
export function installInto(options: {
  readonly file: string;
  readonly host: HostKind;
  readonly run: { readonly command: string; readonly args: readonly string[] };
  readonly moved: ReadonlyMap<string, unknown>;
  /** The project folder, for Claude Code's per-project servers in ~/.claude.json. */
  readonly cwd: string;
  readonly now: Date;
}): Installed {
  const { file, host, run, moved } = options;
  const created = !existsSync(file);
  let data: Record<string, unknown> = {};
  if (!created) {
    const text = readFileSync(file, 'utf8');
    let parsed: unknown;
    try {
      parsed = text.trim() === '' ? {} : parseJsonWithComments(text);
    } catch (error) {
      throw new HostConfigError(file, `not valid JSON, so it was not changed: ${(error as Error).message}`);
    }
    if (!isObject(parsed)) throw new HostConfigError(file, 'expected a JSON object; it was not changed');
    data = parsed;
  }
  const before = JSON.stringify(data);
  const removed: string[] = [];
  const mcp = data['mcp'];
  const projects = data['projects'];
  const project = isObject(projects) ? projects[options.cwd] : undefined;
  const lists = [
    data['mcpServers'],
    data['servers'],
    isObject(mcp) ? mcp['servers'] : undefined,
    data['mcp.servers'],
    isObject(project) ? project['mcpServers'] : undefined,
  ].filter(isObject);
  for (const list of lists)
    for (const [name, entry] of moved)
      if (name in list && same(list[name], entry)) {
        delete list[name];
        removed.push(name);
      }
  const list = serverList(data, host, file);
  const vscode = host === 'vscode';
  const entry = { ...(vscode && { type: 'stdio' }), command: run.command, args: [...run.args] };
  const added = !same(list[WARDEN_ENTRY], entry);
  if (added) list[WARDEN_ENTRY] = entry;
  if (JSON.stringify(data) === before) return { file, created: false, added: false, removed: [] };
  const text = `${JSON.stringify(data, null, 2)}\n`;
  if (created) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeAtomically(file, text, { backup: undefined });
    return { file, created, added, removed };
  }
  const stamp = options.now.toISOString().replace(/[:.]/g, '-');
  const { backup } = writeAtomically(file, text, { backup: `${file}.${stamp}.bak` });
  return { file, created, added, removed, ...(backup !== undefined && { backup }) };
}

/** What `--install` did and how to undo it, for the user. */
export function installReport(host: HostKind, installed: Installed): string {
  const name = HOST_NAMES[host];
  if (installed.backup === undefined && !installed.created)
    return `${name}: ${installed.file} already runs mcp-warden as "${WARDEN_ENTRY}"; nothing was changed.\n`;
  const lines = [
    `${name}: ${installed.created ? 'created' : 'changed'} ${installed.file}:`,
    ...(installed.added ? [`  + "${WARDEN_ENTRY}", which runs mcp-warden`] : []),
    ...installed.removed.map((n) => `  - "${n}" (mcp-warden runs it now)`),
    installed.backup === undefined
      ? `To undo: delete ${installed.file}.`
      : `The file as it was is kept as ${installed.backup}; to undo: cp '${installed.backup}' '${installed.file}'`,
    ...(host === 'claude-desktop' ? ['Then quit and restart Claude Desktop.'] : []),
  ];
  return `${lines.join('\n')}\n`;
}
