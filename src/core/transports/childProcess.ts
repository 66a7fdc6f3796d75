import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';

export interface SpawnChildOptions {
  readonly command: string;
  readonly args: readonly string[];
  /** The child's complete environment (we never pass the gateway's own through implicitly). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
}

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Why a child could not be started, worded for the user who wrote the config. */
export class SpawnError extends Error {
  override readonly name = 'SpawnError';
}

export interface ChildHandle {
  readonly pid: number;
  readonly process: ChildProcessWithoutNullStreams;
  /** Settles when the direct child has exited. */
  readonly exited: Promise<ChildExit>;
  /**
   * Stops the child and everything it started: closes its stdin, sends SIGTERM to its process
   * group, and after `graceMs` SIGKILL to the group. The group kill is what reaches the real
   * server behind launchers such as `npx` or `sh -c` (FIELD_NOTES "Traps").
   */
  stop(options: { graceMs: number }): Promise<void>;
  /** Last-resort synchronous kill of the whole group, for process exit handlers. */
  killNow(): void;
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, process.platform === 'win32' ? fsConstants.F_OK : fsConstants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/**
 * Finds the command the way the child's own PATH would. Done ahead of `spawn` because the
 * ENOENT it raises says neither which command nor which PATH, and desktop hosts often launch
 * us with a PATH that lacks the user's tools (FIELD_NOTES "Configuration").
 */
export async function resolveCommand(command: string, env: Readonly<Record<string, string>>, cwd: string) {
  if (command.includes('/') || command.includes('\\')) {
    const file = path.resolve(cwd, command);
    if (await isExecutable(file)) return file;
    throw new SpawnError(`command not found or not executable: ${file}`);
  }
  const searchPath = env.PATH ?? env.Path ?? '';
  const extensions =
    process.platform === 'win32' ? (env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').concat(['']) : [''];
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir === '') continue;
    for (const ext of extensions) {
      const file = path.resolve(cwd, dir, command + ext);
      if (await isExecutable(file)) return file;
    }
  }
  throw new SpawnError(
    `command not found: "${command}" (searched PATH: ${searchPath === '' ? '<empty>' : searchPath}). ` +
      `Give an absolute path, or set PATH in this server's env.`,
  );
}

export async function spawnChild(options: SpawnChildOptions): Promise<ChildHandle> {
  const cwdStat = await stat(options.cwd).catch(() => null);
  if (cwdStat === null || !cwdStat.isDirectory())
    throw new SpawnError(`working directory does not exist: ${options.cwd}`);
  const file = await resolveCommand(options.command, options.env, options.cwd);

  const child = spawn(file, [...options.args], {
    cwd: options.cwd,
    env: { ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group, so the whole tree can be signalled at once.
    detached: process.platform !== 'win32',
    windowsHide: true,
  });
  const exited = new Promise<ChildExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (error) => reject(new SpawnError(`cannot start "${file}": ${error.message}`)));
  });
  // Writes to a child that already died must not crash the gateway.
  child.stdin.on('error', () => {});
  const pid = child.pid!;

  let exitedNow = false;
  void exited.then(() => {
    exitedNow = true;
  });

  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      if (process.platform === 'win32') child.kill(signal);
      else process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  };

  return {
    pid,
    process: child,
    exited,
    killNow: () => signalGroup('SIGKILL'),
    async stop({ graceMs }) {
      child.stdin.end();
      signalGroup('SIGTERM');
      if (!exitedNow) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
        clearTimeout(timer);
      }
      // Even when the leader left politely, descendants it started may linger in the group.
      signalGroup('SIGKILL');
      await exited;
    },
  };
}
