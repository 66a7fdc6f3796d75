/**
 * What `init` proposes for the servers it recognises: servers whose needs are known (the reference
 * servers that work on the folders in their arguments, or on nothing) can run sandboxed with the
 * grants `sandbox: auto` derives. A server that needs hosts it cannot know (fetch) is left alone.
 */
import { statSync } from 'node:fs';
import path from 'node:path';

/** Packages (npm or PyPI) whose server needs only the folders its arguments name, and no network. */
const KNOWN = [
  '@modelcontextprotocol/server-filesystem',
  '@modelcontextprotocol/server-memory',
  '@modelcontextprotocol/server-sequential-thinking',
  '@modelcontextprotocol/server-everything',
  'mcp-server-git',
  'mcp-server-time',
];

/** The known package an entry runs, when it runs one (with or without a version). */
function knownPackage(entry: Readonly<Record<string, unknown>>): string | undefined {
  if (typeof entry['command'] !== 'string' || !Array.isArray(entry['args'])) return undefined;
  for (const arg of entry['args'])
    if (typeof arg === 'string') {
      const name = arg.replace(/(?<=.)@[^/]*$/, '').replace(/[=<>~]=?.*$/, '');
      if (KNOWN.includes(name)) return name;
    }
  return undefined;
}

/** Whether this machine can sandbox: macOS, or Linux with bubblewrap and socat on PATH. */
export function canSandboxHere(env: NodeJS.ProcessEnv = process.env, platform = process.platform): boolean {
  if (platform === 'darwin') return true;
  if (platform !== 'linux') return false;
  const dirs = (env.PATH ?? '').split(path.delimiter).filter((dir) => dir !== '');
  const found = (command: string) =>
    dirs.some((dir) => {
      try {
        return statSync(path.join(dir, command)).isFile();
      } catch {
        return false;
      }
    });
  return found('bwrap') && found('socat');
}

/**
 * `servers` with `sandbox: auto` on each recognised stdio server when this machine can sandbox;
 * `proposed` names them, and `deferred` those it would have sandboxed on a machine that could.
 */
export function proposeSandboxes(
  servers: Readonly<Record<string, Record<string, unknown>>>,
  canSandbox: boolean,
): { servers: Record<string, Record<string, unknown>>; proposed: string[]; deferred: string[] } {
  const out: Record<string, Record<string, unknown>> = {};
  const proposed: string[] = [];
  const deferred: string[] = [];
  for (const [name, entry] of Object.entries(servers)) {
    const known = entry['sandbox'] === undefined && knownPackage(entry) !== undefined;
    if (known) (canSandbox ? proposed : deferred).push(name);
    out[name] = known && canSandbox ? { ...entry, sandbox: 'auto' } : entry;
  }
  return { servers: out, proposed, deferred };
}
