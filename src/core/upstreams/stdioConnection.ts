import { createInterface } from 'node:readline';
import type { StdioServerConfig } from '../../config/types.js';
import { describeError } from '../../lib/describeError.js';
import { brokenCacheHint, launcherOf } from '../../lib/launchers.js';
import { UpstreamFailedError } from '../errors.js';
import type { Logger } from '../logger.js';
import { truncateForEcho } from '../protocol/jsonRpc.js';
import { spawnChild, type ChildHandle, type CommandWrapper } from '../transports/childProcess.js';
import type { OversizeLine } from '../transports/lineDecoder.js';
import { StreamTransport } from '../transports/streamTransport.js';
import { stdioSpawnOptions } from './childEnvironment.js';
import { makePrincipalHome } from './principalServers.js';
import {
  ConnectionBase,
  describeTarget,
  STOP_GRACE_MS,
  type ConnectionFactory,
  type ConnectOptions,
  type UpstreamConnection,
} from './connection.js';

/** How long a closed stdout waits for the process's own exit to explain it. */
const STDOUT_CLOSE_GRACE_MS = 250;
/** Lines of a child's stderr kept to explain a failed start. */
/** How long an exit's report waits for the rest of the process's stderr. */
const STDERR_DRAIN_MS = 200;
const STDERR_TAIL_LINES = 5;
/**
 * Lines of a launcher's stderr kept to tell a broken cache (its stack names the cached package's
 * folder, often well above the last lines).
 */
const LAUNCHER_LINES = 40;

export interface StdioConnectionsOptions {
  /** Live children, so a last-resort exit handler can kill their groups synchronously. */
  readonly children: Set<ChildHandle>;
  /** The server's entry: how a process spawned ahead is stopped depends on its command. */
  readonly config: StdioServerConfig;
  /**
   * The server's process, spawned ahead (earlySpawn.ts) and already in `children`: the first
   * connection speaks to it instead of spawning one. A spawn that failed is reported by that
   * attempt, as if it had failed then.
   */
  readonly spawned?: Promise<ChildHandle>;
  /** What runs the server's command confined, when its entry asks for a sandbox. */
  readonly wrap?: CommandWrapper;
}

/** Connections to a stdio server: a child process, spoken to over its stdin and stdout. */
export class StdioConnections implements ConnectionFactory {
  private spawned: Promise<ChildHandle> | undefined;

  constructor(private readonly options: StdioConnectionsOptions) {
    this.spawned = options.spawned;
  }

  async connect(options: ConnectOptions): Promise<UpstreamConnection> {
    const { config } = options;
    if (config.transport !== 'stdio') throw new Error(`${config.name} is not a stdio server`);
    const what = describeTarget(config);
    const spawned = this.spawned;
    this.spawned = undefined;
    let child: ChildHandle;
    try {
      if (config.principalHome !== undefined) await makePrincipalHome(config.principalHome);
      child = await (spawned ?? spawnChild(stdioSpawnOptions(config, this.options.wrap)));
    } catch (error) {
      throw new UpstreamFailedError(config.name, `failed to start (${what}): ${describeError(error)}`);
    }
    this.options.children.add(child);
    return new StdioConnection(child, what, options, this.options.children);
  }

  /** A process spawned ahead that no connection attempt took (stopped before the host came). */
  async release(): Promise<void> {
    const spawned = this.spawned;
    this.spawned = undefined;
    const { config } = this.options;
    const child = await spawned?.catch(() => undefined);
    if (child === undefined) return;
    await child.stop(stopOptions(launcherOf(config.command, config.args)));
    this.options.children.delete(child);
  }
}

/**
 * How a server's process is stopped: SIGTERM to its group, then SIGKILL after the grace. A
 * launcher's group is given the whole grace to leave, even once the launcher itself has: the
 * package manager or the server it started may still be writing to its cache, and a SIGKILL
 * there leaves a package half installed, broken on every later start.
 */
function stopOptions(launcher: string | undefined): { graceMs: number; drainGroup: boolean } {
  return { graceMs: STOP_GRACE_MS, drainGroup: launcher !== undefined };
}

class StdioConnection extends ConnectionBase implements UpstreamConnection {
  readonly transport: StreamTransport;
  private readonly stderrTail: string[] = [];
  /** More of a launcher's stderr, to tell a broken cache by; undefined for other commands. */
  private readonly launcherOutput: string[] | undefined;
  private readonly launcher: string | undefined;
  private readonly server: string;
  private readonly log: Logger;

  constructor(
    readonly child: ChildHandle,
    what: string,
    options: ConnectOptions,
    private readonly children: Set<ChildHandle>,
  ) {
    super(what);
    this.server = options.config.name;
    this.log = options.log;
    const { gateway, config } = options;
    this.launcher = config.transport === 'stdio' ? launcherOf(config.command, config.args) : undefined;
    this.launcherOutput = this.launcher === undefined ? undefined : [];
    const stderr = createInterface({ input: child.process.stderr });
    stderr.on('line', (line) => {
      this.log.info(`stderr: ${line}`);
      this.stderrTail.push(line);
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
      this.launcherOutput?.push(line);
      if ((this.launcherOutput?.length ?? 0) > LAUNCHER_LINES) this.launcherOutput?.shift();
    });
    const stderrRead = new Promise<void>((resolve) => stderr.once('close', resolve));
    this.transport = new StreamTransport({
      input: child.process.stdout,
      output: child.process.stdin,
      maxLineBytes: gateway.maxMessageBytes,
      maxUnreadBytes: gateway.maxMessageBytes,
      onJunk: (line, reason) =>
        this.log.warn(`ignored a line on stdout (${reason}): ${truncateForEcho(line)}`),
      onOversize: (info) => this.oversize(info, gateway.maxMessageBytes),
    });
    // A server that closes its stdout but keeps running can answer nothing more: that is a
    // disconnect, so calls in flight fail now and it is restarted, instead of every call waiting
    // out its timeout. A moment's grace first: when the process is exiting, its exit (with its
    // code and stderr) is the better explanation.
    this.transport.onclose = () =>
      setTimeout(
        () => this.end(new UpstreamFailedError(this.server, `closed its stdout ${this.phase} (${what})`)),
        STDOUT_CLOSE_GRACE_MS,
      ).unref();
    void child.exited.then(async ({ code, signal }) => {
      // A process spawned ahead may have exited before this connection began reading its stderr:
      // its last lines (why it died) are still in the pipe. Read them first, for a moment at most,
      // since something it started may hold its stderr open.
      await Promise.race([
        stderrRead,
        new Promise((resolve) => setTimeout(resolve, STDERR_DRAIN_MS).unref()),
      ]);
      const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
      const tail = this.stderrTail.length > 0 ? `; last stderr: ${this.stderrTail.join(' | ')}` : '';
      const broken = this.launcherOutput === undefined ? undefined : brokenCacheHint(this.launcherOutput);
      const hint = broken === undefined ? '' : `. ${broken}`;
      this.end(new UpstreamFailedError(this.server, `process ${how} ${this.phase} (${what})${tail}${hint}`));
    });
  }

  async close(): Promise<void> {
    await this.child.stop(stopOptions(this.launcher));
    this.children.delete(this.child);
  }

  /**
   * A line over the size bound. Our request ids are plain integers and JSON-RPC responses put
   * `id` first or last, so the edges of the line usually tell which call it answered; that call
   * fails and the connection lives on. Otherwise the stream's state is unknown: restart.
   */
  private oversize(info: OversizeLine, limit: number): void {
    const message = `sent a message of ${info.bytes} bytes, over the limit of ${limit} bytes (gateway.maxMessageSize)`;
    const id =
      /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d+)/.exec(info.head)?.[1] ??
      /"id"\s*:\s*(\d+)\s*\}\s*$/.exec(info.tail)?.[1];
    this.log.warn(message);
    if (id !== undefined && this.peer?.failById(Number(id), new UpstreamFailedError(this.server, message)))
      return;
    this.end(new UpstreamFailedError(this.server, `${message}; restarting it`));
  }
}
