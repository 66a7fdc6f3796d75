/**
 * The operating system's sandbox, through @anthropic-ai/sandbox-runtime: bubblewrap on Linux,
 * Seatbelt on macOS, and an HTTP and SOCKS proxy in this process that filters by domain.
 *
 * The runtime keeps one configuration per process, but each server needs grants of its own. So
 * that configuration says only what every server shares (the network is filtered, nothing else
 * is granted), and each server's start passes its own filesystem rules with the wrap (the
 * runtime's per-command override) and registers its allowed domains under an unguessable id that
 * only its process is given (the proxy's per-command allow list). Loaded only when a server asks
 * for a sandbox: the runtime brings its own dependencies and starts proxies.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SandboxManager, type SandboxRuntimeConfig } from '@anthropic-ai/sandbox-runtime';
import { launcherOf } from '../../lib/launchers.js';
import { SpawnError, type CommandLine, type WrappedCommand } from '../../core/transports/childProcess.js';
import type { SandboxGrants } from './grants.js';

/** What to install where the platform lacks what the sandbox needs. */
const INSTALL_HINT =
  'install bubblewrap and socat (Debian/Ubuntu: apt-get install bubblewrap socat; Fedora: dnf install bubblewrap socat)';

export interface SandboxRuntimeOptions {
  /** A connection the proxy refused, or another violation the platform reported, by server. */
  readonly onDenied: (server: string, target: string, detail: string) => void;
}

/** One server's process, as it is wrapped: what it was granted on top of the grants asked for. */
export interface SandboxedStart extends WrappedCommand {
  /** Its private temp folder. */
  readonly temp: string;
}

export interface SandboxRuntime {
  wrap(server: string, grants: SandboxGrants, command: CommandLine): Promise<SandboxedStart>;
  /** Stops the proxies. */
  close(): Promise<void>;
}

/** Why this machine cannot sandbox, worded with what to do; undefined when it can. */
function platformProblem(): string | undefined {
  if (process.platform !== 'linux' && process.platform !== 'darwin')
    return `sandboxing is not available on ${process.platform} (only on Linux with bubblewrap, and on macOS); run this server without "sandbox:" or on one of those`;
  const { errors } = SandboxManager.checkDependencies();
  if (errors.length === 0) return undefined;
  return `cannot sandbox on this machine: ${errors.join('; ')}; ${INSTALL_HINT}`;
}

/** Quotes `word` for `sh`. */
const quote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The folder to grant so that `file` (a program or script) can run: the package it belongs to (the
 * nearest folder above it with a package.json or pyproject.toml, below the home folder), else its
 * own folder. Followed through links first: `npx` in a bin folder links into npm's package.
 */
function packageOf(file: string, home: string): string[] {
  const real = (() => {
    try {
      return realpathSync(file);
    } catch {
      return file;
    }
  })();
  const folders = new Set([path.dirname(file), path.dirname(real)]);
  for (let dir = path.dirname(real); dir.startsWith(`${home}${path.sep}`); dir = path.dirname(dir)) {
    if (['package.json', 'pyproject.toml'].some((name) => isFile(path.join(dir, name)))) {
      folders.add(dir);
      break;
    }
  }
  return [...folders];
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Where a package launcher keeps what it downloads: it must read and write there to start. */
function launcherCaches(command: CommandLine, home: string): string[] {
  const launcher = launcherOf(command.file, command.args);
  if (launcher === undefined) return [];
  if (launcher.startsWith('uv'))
    return [path.join(home, '.cache', 'uv'), path.join(home, '.local', 'share', 'uv')];
  return [command.env.npm_config_cache ?? path.join(home, '.npm')];
}

/** What a server must read to run: its program, the scripts its arguments name, their packages. */
function ownFiles(command: CommandLine, home: string): string[] {
  const files = [
    command.file,
    ...command.args.map((arg) => path.resolve(command.cwd, arg)).filter((file) => isFile(file)),
  ];
  return files.flatMap((file) => packageOf(file, home));
}

/** The runtime's per-server rules for `grants`, with the server's own files and temp folder. */
function serverConfig(
  grants: SandboxGrants,
  command: CommandLine,
  temp: string,
): Partial<SandboxRuntimeConfig> {
  const home = os.homedir();
  const homes = [...new Set([home, command.env.HOME ?? home])];
  const caches = homes.flatMap((h) => launcherCaches(command, h));
  return {
    filesystem: {
      denyRead: homes,
      allowRead: [...grants.read, ...homes.flatMap((h) => ownFiles(command, h))],
      allowWrite: [...grants.write, ...caches, temp],
      denyWrite: [],
    },
    // Always through the proxy: an empty list refuses every host, and each refusal is reported.
    network: { allowedDomains: [], deniedDomains: [] },
  };
}

/** The host and port a violation line names (`deny network-outbound example.org:80 (...)`). */
function targetOf(line: string): string {
  return /network-outbound\s+(\S+)/.exec(line)?.[1] ?? line;
}

/**
 * Starts the shared part of the runtime (its proxies) and returns what wraps each server's
 * command. Throws `SpawnError`, naming what to install, where the platform cannot sandbox.
 */
export async function openSandboxRuntime(options: SandboxRuntimeOptions): Promise<SandboxRuntime> {
  const problem = platformProblem();
  if (problem !== undefined) throw new SpawnError(problem);
  const servers = new Map<string, string>();
  const shared: SandboxRuntimeConfig = {
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
  };
  // A host no server's list allows is refused: the proxy asks us only about those.
  await SandboxManager.initialize(shared, () => Promise.resolve(false));
  const store = SandboxManager.getSandboxViolationStore();
  let seen = store.getTotalCount();
  const unsubscribe = store.subscribe((violations) => {
    const fresh = store.getTotalCount() - seen;
    seen = store.getTotalCount();
    for (const violation of fresh > 0 ? violations.slice(-fresh) : []) {
      const id = Buffer.from(violation.encodedCommand ?? '', 'base64').toString('utf8');
      const server = servers.get(id);
      if (server !== undefined) options.onDenied(server, targetOf(violation.line), violation.line);
    }
  });
  return {
    async wrap(server, grants, command) {
      const id = randomBytes(16).toString('base64url');
      const temp = mkdtempSync(path.join(os.tmpdir(), `mcp-warden-${server}-`));
      const release = () => {
        servers.delete(id);
        SandboxManager.unregisterCommandNetworkLists(id);
        rmSync(temp, { recursive: true, force: true });
      };
      try {
        const line = [
          `TMPDIR=${quote(temp)} TMP=${quote(temp)} TEMP=${quote(temp)}`,
          'exec',
          ...[command.file, ...command.args].map(quote),
        ].join(' ');
        const wrapped = await SandboxManager.wrapWithSandboxArgv(
          line,
          '/bin/sh',
          serverConfig(grants, command, temp),
          undefined,
          command.cwd,
          { commandId: id, commandText: `server ${server}` },
        );
        servers.set(id, server);
        if (grants.network !== false && grants.network.allow.length > 0)
          SandboxManager.registerCommandNetworkLists(id, { allowedDomains: [...grants.network.allow] });
        const [file, ...args] = wrapped.argv;
        if (file === undefined) throw new Error('the sandbox runtime gave no command');
        return { file, args, env: command.env, release, temp };
      } catch (error) {
        release();
        if (error instanceof SpawnError) throw error;
        throw new SpawnError(`cannot sandbox it: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
    async close() {
      unsubscribe();
      await SandboxManager.reset();
    },
  };
}
