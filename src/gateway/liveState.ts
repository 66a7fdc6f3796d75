/**
 * What a serving gateway tells `mcp-warden server list` about its servers now: a small file per
 * gateway process, in the user's state folder under a name made from the config file's absolute
 * path, so every gateway serving one config (one per host) writes its own and the command finds
 * them all. The file is written atomically (a temporary file renamed over it), readable by its
 * user only, rewritten shortly after a server's state or lists change, and removed when the
 * gateway stops cleanly. One left behind by a gateway that was killed names a process that is
 * gone: readers treat it as stale.
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import type { Logger } from '../core/logger.js';
import type { Upstream, UpstreamState } from '../core/upstreams/upstream.js';
import { describeError } from '../lib/describeError.js';
import { sha256Hex } from '../lib/hash.js';
import { stateFolder } from '../lib/stateFolder.js';

/** The format written; a file of another version is shown as unreadable, never guessed at. */
const LIVE_STATE_VERSION = 1;

/** How long after a change the file is rewritten: a burst of changes (a start of 20 servers) is one write. */
const WRITE_DELAY_MS = 100;

/** Bounds on what one file holds, whatever the config: servers listed, and each error's length. */
const MAX_SERVERS = 1000;
const MAX_ERROR_CHARS = 500;

/** A server's state as people read it (the supervisor's states, in fewer words). */
export type LiveServerState =
  | 'running'
  | 'asleep'
  | 'starting'
  | 'restarting'
  | 'needs sign-in'
  | 'failed'
  | 'disabled'
  | 'not started'
  | 'stopped'
  | 'per principal';

export interface LiveServer {
  readonly name: string;
  readonly state: LiveServerState;
  /** When it entered that state (ISO 8601). */
  readonly since: string;
  /** Its process while one runs. */
  readonly pid?: number;
  /** Tools it lists now (from its cached listing while asleep). */
  readonly tools: number;
  readonly lazy: boolean;
  readonly idleTimeoutMs?: number;
  /** Its last failure, while it is not running. */
  readonly lastError?: string;
  /** A server run once per principal (behind the HTTP listener): how many of its processes run. */
  readonly processes?: number;
}

/** One gateway's file. */
export interface LiveStateFile {
  readonly version: number;
  readonly pid: number;
  /** The config file it serves (absolute). */
  readonly config: string;
  readonly startedAt: string;
  readonly updatedAt: string;
  readonly servers: readonly LiveServer[];
}

/** The upstreams a gateway runs now: the shared ones, and each principal's own. */
export interface RunningUpstreams {
  readonly shared: readonly Upstream[];
  /** Per principal, the upstreams of the servers it runs its own process of. */
  readonly principals: readonly (readonly Upstream[])[];
  /** Every configured server's name, in config order. */
  readonly names: readonly string[];
}

/** The folder of the state files of every gateway serving `configFile`. */
export function liveStateFolder(configFile: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(stateFolder(env), `gateways-${sha256Hex(realPath(configFile)).slice(0, 16)}`);
}

/** The file's path with every link followed, so a config named through a symlink is the same config. */
function realPath(file: string): string {
  try {
    return realpathSync(path.resolve(file));
  } catch {
    return path.resolve(file);
  }
}

export interface LiveStateWriter {
  /** Something changed: the file is rewritten shortly (changes close together make one write). */
  changed(): void;
  /** Removes the file (the gateway stops cleanly); nothing is written after. */
  close(): void;
}

/**
 * Keeps this gateway's state file up to date from `running()`. Files in the folder left by
 * gateways that are gone are removed when it starts. A file that cannot be written is logged
 * once, never fatal: serving does not depend on it.
 */
export function writeLiveState(options: {
  readonly configFile: string;
  readonly running: () => RunningUpstreams;
  readonly logger: Logger;
  readonly env?: NodeJS.ProcessEnv;
  readonly pid?: number;
}): LiveStateWriter {
  const folder = liveStateFolder(options.configFile, options.env);
  const pid = options.pid ?? process.pid;
  const file = path.join(folder, `${pid}.json`);
  const startedAt = new Date().toISOString();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let warned = false;
  removeStale(folder);
  const write = () => {
    timer = undefined;
    if (closed) return;
    const state: LiveStateFile = {
      version: LIVE_STATE_VERSION,
      pid,
      config: realPath(options.configFile),
      startedAt,
      updatedAt: new Date().toISOString(),
      servers: liveServers(options.running()).slice(0, MAX_SERVERS),
    };
    try {
      mkdirSync(folder, { recursive: true, mode: 0o700 });
      const temp = `${file}.${process.pid}.tmp`;
      writeFileSync(temp, JSON.stringify(state), { mode: 0o600 });
      renameSync(temp, file);
    } catch (error) {
      if (!warned)
        options.logger.warn(
          `cannot write the servers' live state to ${file} (mcp-warden server list will not show it): ${describeError(error)}`,
        );
      warned = true;
    }
  };
  const writer = {
    changed() {
      if (closed || timer !== undefined) return;
      timer = setTimeout(write, WRITE_DELAY_MS);
      timer.unref();
    },
    close() {
      closed = true;
      clearTimeout(timer);
      rmSync(file, { force: true });
    },
  };
  writer.changed();
  return writer;
}

/** What `running` holds, one entry per configured server, in config order. */
export function liveServers(running: RunningUpstreams): LiveServer[] {
  const shared = new Map(running.shared.map((u) => [u.name, u]));
  const own = new Map<string, Upstream[]>();
  for (const upstreams of running.principals)
    for (const u of upstreams) own.set(u.name, [...(own.get(u.name) ?? []), u]);
  return running.names.flatMap((name): LiveServer[] => {
    const upstream = shared.get(name);
    if (upstream !== undefined) return [liveServer(upstream)];
    const copies = own.get(name);
    if (copies === undefined) return [];
    // Per principal: counted, not listed (the file names no principal).
    const first = copies[0]!;
    return [
      {
        name,
        state: 'per principal',
        since: new Date(Math.max(...copies.map((u) => u.stateSince))).toISOString(),
        tools: first.tools.length,
        lazy: first.config.start === 'lazy',
        ...(first.config.idleTimeoutMs !== undefined && { idleTimeoutMs: first.config.idleTimeoutMs }),
        processes: copies.filter((u) => u.pid !== undefined).length,
      },
    ];
  });
}

function liveServer(u: Upstream): LiveServer {
  const state = STATE_WORDS[u.state];
  const pid = u.pid;
  const error = u.lastError;
  return {
    name: u.name,
    state,
    since: new Date(u.stateSince).toISOString(),
    ...(pid !== undefined && { pid }),
    tools: u.tools.length,
    lazy: u.config.start === 'lazy',
    ...(u.config.idleTimeoutMs !== undefined && { idleTimeoutMs: u.config.idleTimeoutMs }),
    ...(state !== 'running' && error !== undefined && { lastError: error.slice(0, MAX_ERROR_CHARS) }),
  };
}

const STATE_WORDS: Readonly<Record<UpstreamState, LiveServerState>> = {
  idle: 'not started',
  connecting: 'starting',
  ready: 'running',
  restarting: 'restarting',
  failed: 'failed',
  stopped: 'stopped',
  disabled: 'disabled',
  asleep: 'asleep',
  'needs-sign-in': 'needs sign-in',
};

/** The state files of the gateways serving `configFile`, split into those running and those gone. */
export function readLiveStates(
  configFile: string,
  env: NodeJS.ProcessEnv = process.env,
): { readonly running: LiveStateFile[]; readonly stale: LiveStateFile[] } {
  const running: LiveStateFile[] = [];
  const stale: LiveStateFile[] = [];
  for (const state of statesIn(liveStateFolder(configFile, env)))
    (processRuns(state.pid) ? running : stale).push(state);
  const byPid = (a: LiveStateFile, b: LiveStateFile) => a.pid - b.pid;
  return { running: running.sort(byPid), stale: stale.sort(byPid) };
}

function statesIn(folder: string): LiveStateFile[] {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    if (!/^\d+\.json$/.test(name)) return [];
    try {
      const state = JSON.parse(readFileSync(path.join(folder, name), 'utf8')) as LiveStateFile;
      return state.version === LIVE_STATE_VERSION && Array.isArray(state.servers) ? [state] : [];
    } catch {
      return []; // removed while we looked, or not ours
    }
  });
}

/** Removes the files of gateways that are gone (killed: they could not remove their own). */
function removeStale(folder: string): void {
  for (const state of statesIn(folder))
    if (state.pid !== process.pid && !processRuns(state.pid))
      rmSync(path.join(folder, `${state.pid}.json`), { force: true });
}

/** Whether a process with this pid runs (one of another user's counts: it exists). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
