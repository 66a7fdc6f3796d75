/**
 * `check`'s warnings for per-principal servers given a place on disk that every principal's
 * process shares: each user then gets their own process, yet reads and writes the others' files
 * (the memory server's file, the filesystem server's folder, a shared working folder).
 */
import path from 'node:path';
import type { ConfigIssue } from '../config/issues.js';
import { formatKeyPath } from '../config/interpolate.js';
import type { StdioServerConfig, WardenConfig } from '../config/types.js';

/** The servers known to write where their env or args say, by what their command line names. */
const MEMORY = /server-memory|mcp\/memory\b/;
const FILESYSTEM = /server-filesystem|mcp\/filesystem\b/;

/** What a per-principal server should be given instead of a shared place. */
const HOME_HINT = '${principal.home} (or a path with ${principal.id} in it)';

/**
 * Warnings for each per-principal stdio server (behind the listener, not `shared: true`) whose
 * `cwd` names no principal, and for the known writable servers given an absolute path (or, for
 * server-memory, no `MEMORY_FILE_PATH`) that names none: each says the server, the key and the fix.
 */
export function sharedWritablePaths(config: WardenConfig): ConfigIssue[] {
  // As loading decides for a command that does not serve: `listen:` or `auth:` means HTTP.
  if (config.listen === undefined && config.auth === undefined) return [];
  return config.servers
    .filter((s): s is StdioServerConfig => s.transport === 'stdio' && !s.shared && !s.disabled)
    .flatMap((server) => serverWarnings(server));
}

function serverWarnings(server: StdioServerConfig): ConfigIssue[] {
  const found: ConfigIssue[] = [];
  const warn = (keys: (string | number)[], message: string) =>
    found.push({
      file: server.source.file,
      line: server.source.line,
      column: 0,
      path: formatKeyPath(['servers', server.name, ...keys]),
      message: `server "${server.name}" runs one process per principal, ${message}`,
    });
  const templates = server.perPrincipal;
  // A per-principal entry without `cwd` was given the principal's folder when it was loaded.
  if (templates?.cwd === undefined)
    warn(
      ['cwd'],
      `and every one of them works in ${server.cwd}: what one user's process writes there, the others' can read. Leave out cwd (each principal then works in its own folder, \${principal.home}), or put ${HOME_HINT} in it`,
    );
  const commandLine = [server.command, ...server.args].join(' ');
  if (MEMORY.test(commandLine)) {
    const file = server.env.MEMORY_FILE_PATH;
    if (file === undefined)
      warn(
        ['env'],
        "and without MEMORY_FILE_PATH server-memory keeps its memory in its own package's folder, one file for every user: set env MEMORY_FILE_PATH: ${principal.home}/memory.jsonl",
      );
    else if (templates?.env.MEMORY_FILE_PATH === undefined)
      warn(
        ['env', 'MEMORY_FILE_PATH'],
        `and every one of them keeps its memory in ${file}, so each user reads the others': set it to \${principal.home}/memory.jsonl`,
      );
  }
  if (FILESYSTEM.test(commandLine))
    server.args.forEach((arg, index) => {
      if (templates?.args[index] !== undefined || FILESYSTEM.test(arg)) return;
      if (!path.isAbsolute(arg) && !arg.startsWith('~')) return;
      warn(
        ['args', index],
        `and every one of them may read and change ${arg}, so each user reaches the others' files there: give ${HOME_HINT} instead`,
      );
    });
  return found;
}
