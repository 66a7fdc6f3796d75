import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import type { Socket } from 'node:net';
import path from 'node:path';
import { findDescendants, killDescendants } from './descendants.js';

export interface SpawnChildOptions {
  readonly command: string;
  readonly args: readonly string[];
  /** The child's complete environment (we never pass the gateway's own through implicitly). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Runs the command inside something else (a sandbox); undefined: as it is. */
  readonly wrap?: CommandWrapper;
}

/** A command to start: its resolved program, its arguments, its environment and folder. */
export interface CommandLine {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
}

/** What a wrapper starts in place of the command, and what it lets go of once the child exits. */
export interface WrappedCommand {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Called once the child has exited, or when it could not be started. */
  readonly release?: () => void;
}

/**
 * Turns a command into the command that runs it confined (a sandbox). Given the program already
 * found on PATH, so that it can grant what the program needs. Throws `SpawnError` when it cannot
 * confine it: the command is then not started at all.
 */
export type CommandWrapper = (command: CommandLine) => Promise<WrappedCommand>;

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Why a child could not be started, worded for the user who wrote the config. */
export class SpawnError extends Error {
  override readonly name = 'SpawnError';
}

export interface StopOptions {
  /** Between SIGTERM and SIGKILL. */
  readonly graceMs: number;
  /**
   * Wait, within the grace, for the whole process group to leave, not just the direct child
   * (for a package launcher, whose helpers may still be writing to its cache). Otherwise what is
   * left of the group is SIGKILLed as soon as the direct child has exited.
   */
  readonly drainGroup?: boolean;
}

export interface ChildHandle {
  readonly pid: number;
  readonly process: ChildProcessWithoutNullStreams;
  /** Settles when the direct child has exited. */
  readonly exited: Promise<ChildExit>;
  /**
   * Stops the child and everything it started: closes its stdin, sends SIGTERM to its process
   * group, and after `graceMs` SIGKILL to the group. The group kill is what reaches the real
   * server behind launchers such as `npx` or `sh -c`. On Linux, descendants that left the group
   * (`setsid`) but are still traceable through their parents are SIGKILLed too.
   */
  stop(options: StopOptions): Promise<void>;
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
 * us with a PATH that lacks the user's tools.
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

/**
 * How long the lifeline watcher waits between SIGTERM and SIGKILL to the group once the gateway
 * is gone: short, because a host that killed us expects everything we started to go with us.
 */
const LIFELINE_GRACE_S = 1;

/**
 * The lifeline: a child is started as `sh -c LIFELINE_SCRIPT`, which starts a watcher and then
 * execs the real command (same pid, so nothing else changes). The watcher blocks reading fd 3,
 * a pipe whose other end only the gateway holds. The kernel closes that end when the gateway
 * dies, however it dies (SIGKILL included), so the read returns and the watcher signals the
 * whole process group: SIGTERM, then SIGKILL after a short grace. Node cannot set
 * PR_SET_PDEATHSIG without native code, and one `sh` costs a millisecond or two where an extra
 * `node` would cost tens. The server itself gets neither fd 3 nor the watcher's ignored signals.
 *
 * Descendants that left the group (`setsid`) are found from /proc by parent pid, which works only
 * while the chain from the server down to them is intact: once a process exits, its children are
 * re-parented and no longer traceable to us. The gateway's death closes the server's stdin at the
 * same instant as the lifeline, and most servers exit at once on end of input, so the watcher's
 * first act is to stop (SIGSTOP) the server's whole group: nothing in it can exit, and so orphan
 * its children, while the watcher walks /proc. Then SIGTERM to the group and every descendant
 * found, SIGCONT (a stopped process acts on SIGTERM only once continued), and SIGKILL after the
 * grace. For that the watcher runs in a session of its own (util-linux `setsid`), or it would stop
 * itself; without `setsid` it stays in the group and only signals it, as it does where there is
 * no /proc (macOS), and a descendant that left the group there survives the gateway's SIGKILL.
 *
 * The watcher is `/bin/sh -c LIFELINE_WATCHER mcp-warden-lifeline SERVER_PID own|shared`; it is
 * the server's child (`setsid` execs it without forking), which it checks before walking, so that
 * a reused pid is never walked.
 */
const LIFELINE_WATCHER = [
  "trap '' TERM INT HUP",
  'server=$1 group=$2',
  'read _ <&3',
  '[ "$group" = own ] && kill -STOP -$server 2>/dev/null',
  'read -r self 2>/dev/null </proc/self/stat',
  'set -- ${self##*") "}',
  'all=',
  // Only while the server is alive and still our parent: a reused pid must not be walked.
  'if [ "$2" = "$server" ]; then',
  '  parents=$server',
  '  while [ -n "$parents" ]; do',
  '    found=',
  '    for f in /proc/[0-9]*/stat; do',
  '      read -r line 2>/dev/null <"$f" || continue',
  '      set -- ${line##*") "}',
  '      pid=${f#/proc/}; pid=${pid%/stat}',
  '      [ "$pid" = "$$" ] && continue',
  '      for parent in $parents; do [ "$2" = "$parent" ] && found="$found $pid"; done',
  '    done',
  '    all="$all$found"; parents=$found',
  '  done',
  'fi',
  'kill -TERM -$server $all 2>/dev/null',
  '[ "$group" = own ] && kill -CONT -$server $all 2>/dev/null',
  `sleep ${LIFELINE_GRACE_S}`,
  'kill -KILL -$server $all 2>/dev/null',
].join('\n');

/**
 * `$1` is the watcher's script, the rest the command. The watcher is started as a simple command
 * in the background, so that it is the server's own child; `setsid` is looked for where
 * util-linux puts it, since the server's PATH is whatever its config says.
 */
const LIFELINE_SCRIPT = [
  'w=$1; shift; s=; g=shared',
  'for c in /usr/bin/setsid /bin/setsid; do [ -x "$c" ] && { s=$c; g=own; break; }; done',
  '$s /bin/sh -c "$w" mcp-warden-lifeline $$ $g </dev/null >/dev/null 2>&1 & exec 3<&-; exec "$@"',
].join('\n');

/** `sh` exports PWD whether or not it was given one; a child must see only the environment we chose. */
const LIFELINE_SCRIPT_NO_PWD = `unset PWD; ${LIFELINE_SCRIPT}`;

function lifelineArgs(
  file: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): string[] {
  const script = env.PWD === undefined ? LIFELINE_SCRIPT_NO_PWD : LIFELINE_SCRIPT;
  // After the script, `sh -c` takes $0 (a name for `ps`), then the watcher's script, the command
  // and its arguments.
  return ['-c', script, 'mcp-warden-lifeline', LIFELINE_WATCHER, file, ...args];
}

/** How often a stopping group is looked at while it is given time to leave. */
const DRAIN_POLL_MS = 50;

/** Resolves once no process of group `pid` is left, or at `until` (a Date.now() time). */
async function groupGone(pid: number, until: number): Promise<void> {
  for (;;) {
    try {
      process.kill(-pid, 0);
    } catch {
      return; // ESRCH: the group is empty
    }
    if (Date.now() >= until) return;
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
  }
}

/** Starts `command` as a child in a group of its own, behind the lifeline where there is one. */
async function startProcess(
  command: WrappedCommand,
  cwd: string,
): Promise<{ child: ChildProcessWithoutNullStreams; exited: Promise<ChildExit> }> {
  const lifeline = process.platform !== 'win32';
  const child = spawn(
    lifeline ? '/bin/sh' : command.file,
    lifeline ? lifelineArgs(command.file, command.args, command.env) : [...command.args],
    {
      cwd,
      env: { ...command.env },
      // fd 3 is the lifeline: its other end lives only in this process (see LIFELINE_SCRIPT).
      stdio: lifeline ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
      // Its own process group, so the whole tree can be signalled at once.
      detached: lifeline,
      windowsHide: true,
    },
  ) as ChildProcessWithoutNullStreams;
  const exited = new Promise<ChildExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (error) =>
      reject(new SpawnError(`cannot start "${command.file}": ${error.message}`)),
    );
  });
  return { child, exited };
}

/** The command as it is started: resolved on PATH, then wrapped when a wrapper is given. */
async function commandOf(options: SpawnChildOptions): Promise<WrappedCommand> {
  const cwdStat = await stat(options.cwd).catch(() => null);
  if (cwdStat === null || !cwdStat.isDirectory())
    throw new SpawnError(`working directory does not exist: ${options.cwd}`);
  const file = await resolveCommand(options.command, options.env, options.cwd);
  const command = { file, args: options.args, env: options.env, cwd: options.cwd };
  return options.wrap === undefined ? command : options.wrap(command);
}

export async function spawnChild(options: SpawnChildOptions): Promise<ChildHandle> {
  const command = await commandOf(options);
  const { child, exited } = await startProcess(command, options.cwd).catch((error: unknown) => {
    command.release?.();
    throw error;
  });
  void exited.then(() => command.release?.());
  // Writes to a child that already died must not crash the gateway.
  child.stdin.on('error', () => {});
  const pid = child.pid!;

  // Our end of the lifeline must not keep the gateway alive, and is closed once the server has
  // exited: the watcher then clears out whatever the server left behind in its group.
  const lifelineEnd = child.stdio[3] as Socket | null | undefined;
  lifelineEnd?.on('error', () => {});
  lifelineEnd?.unref();

  let exitedNow = false;
  /**
   * While a stop drains the group, the lifeline stays open: its watcher would otherwise stop
   * (SIGSTOP) and kill the rest of the group the moment the server itself exits.
   */
  let holdLifeline = false;
  void exited.then(() => {
    exitedNow = true;
    if (!holdLifeline) lifelineEnd?.destroy();
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
    async stop({ graceMs, drainGroup = false }) {
      const until = Date.now() + graceMs;
      holdLifeline = drainGroup && process.platform !== 'win32';
      // Taken first, while the tree is intact: processes that left the group (setsid) are found
      // by parentage alone, and parentage is lost once their parent exits.
      const descendants = exitedNow ? [] : await findDescendants(pid);
      child.stdin.end();
      signalGroup('SIGTERM');
      if (!exitedNow) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
        clearTimeout(timer);
      }
      if (holdLifeline) await groupGone(pid, until);
      // Even when the leader left politely, descendants it started may linger in the group.
      signalGroup('SIGKILL');
      lifelineEnd?.destroy();
      await killDescendants(descendants);
      await exited;
    },
  };
}
