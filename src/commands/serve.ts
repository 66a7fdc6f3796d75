/**
 * `mcp-warden [serve] --config FILE [--http HOST:PORT]`: the gateway itself. In serve mode stdout
 * carries JSON-RPC only and everything else goes to stderr (or the log file).
 *
 * Modules are imported where they are needed (measured): serving spawns the upstreams
 * (earlySpawn.ts) before it loads the gateway's modules, so that the servers' own start-up
 * overlaps that loading, and a stdio gateway loads no HTTP code.
 */
import { randomUUID } from 'node:crypto';
import { homedir } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { formatConfigIssue } from '../config/issues.js';
import type { WardenConfig } from '../config/types.js';
import type { ManagedSettings } from '../config/managed.js';
import type { LiveConfig } from './configReload.js';
import type { AuditTrail } from '../features/audit/openTrail.js';
import type { TelemetryRuntime } from '../features/telemetry/runtime.js';
import type { ClosableLogger, Logger } from '../core/logger.js';
import type { StreamTransport } from '../core/transports/streamTransport.js';
import type { Gateway } from '../gateway/gateway.js';
import type { LiveStateWriter } from '../gateway/liveState.js';
import type { Listener } from '../http/listener.js';
import { codeCacheUse, writeCodeCache } from '../lib/codeCache.js';
import { currentServingFlags, flagSetsUsed, setServingFlags } from '../lib/v8Flags.js';
import { MissingPackageError } from '../lib/optionalPackage.js';
import { plural } from '../lib/plural.js';
import { rememberValidDocuments, validDocumentsFile } from '../lib/validDocuments.js';
import type { SharedStore } from '../lib/store/sharedStore.js';
import {
  loadConfigFile,
  loadPinsFile,
  loadPolicyFiles,
  openCommandCredentials,
  type Loaded,
} from './loading.js';
import { closeLogger, CommandError, UsageError, version, type CommandInput } from './support.js';

type LoadedFile = Omit<Loaded, 'policies'>;

export async function serve({ values, args }: CommandInput): Promise<undefined> {
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"`);
  await startServing({
    ...(values.config !== undefined && { config: values.config }),
    ...(typeof values.http === 'string' && { http: values.http }),
    process,
  });
  return undefined;
}

/** Where a serving gateway meets the world: the binary's own process, or a program that embeds it. */
export interface ServeOptions {
  /** The config file (else MCP_WARDEN_CONFIG). */
  readonly config?: string;
  /** `--http HOST:PORT`: serve Streamable HTTP there instead of stdio. */
  readonly http?: string;
  /** The host's side of stdio; the process's stdin and stdout when absent. */
  readonly stdio?: { readonly input: Readable; readonly output: Writable };
  /** Where log lines go (a configured log file gets them too); stderr when absent. */
  readonly log?: (line: string) => void;
  /**
   * The process the gateway owns: its signals stop the gateway, its exit kills the children,
   * and the gateway's stop ends it. Absent when the gateway is embedded (the in-process tests):
   * a stop then resolves `stopped` instead of exiting.
   */
  readonly process?: NodeJS.Process;
}

/** A started gateway, as `startServing` hands it back. */
export interface Serving {
  readonly config: WardenConfig;
  readonly gateway: Gateway;
  /** Stops as the host closing stdin or a signal would; resolves with the exit code. */
  stop(why: string): Promise<number>;
  /** Resolves with the exit code once the gateway has stopped, for whatever reason. */
  readonly stopped: Promise<number>;
}

/**
 * What can still stop a start with an error, before anything is served: the config read and
 * checked, its pins, its servers started, its policies loaded.
 */
async function prepare(options: ServeOptions) {
  // A config and policy files served before, unchanged, skip the validators' load and run.
  rememberValidDocuments({ file: validDocumentsFile(process.env, homedir()) });
  const loaded = await loadConfigFile(options.config, {
    badServers: 'mark-failed',
    listening: options.http !== undefined,
  });
  // From the config layer, not the listener's module: a stdio gateway loads no HTTP code.
  const { listenFrom } = await import('../config/team.js');
  const listening = listenFrom(loaded.config, options.http);
  if (typeof listening === 'string') throw new UsageError(listening);
  const config = listening;
  // Like an invalid config, an invalid pins file stops us before any server is started.
  const pins = config.pins === undefined ? undefined : await loadPinsFile(config);
  // The config is valid: start the upstream processes now, and load the policies and the
  // gateway's modules while they boot. Should a policy file be invalid, they are killed with
  // the exit that reports it, before any of them was spoken to.
  const { spawnEarly } = await import('../core/upstreams/earlySpawn.js');
  const { sharedServers } = await import('../core/upstreams/principalPools.js');
  // Per-principal servers start on their principal's first use, never ahead; lazy servers on
  // the first request that needs them (or, never listed yet, when the pool starts).
  const early = spawnEarly(sharedServers(config).filter((server) => server.start !== 'lazy'));
  const stdio = options.stdio ?? { input: process.stdin, output: process.stdout };
  const shutdown = new Shutdown(config, {
    output: stdio.output,
    ...(options.process && { process: options.process }),
  });
  shutdown.killOnExit(early.children);
  let policies: Awaited<ReturnType<typeof loadPolicyFiles>>;
  try {
    policies = await loadPolicyFiles(config);
  } catch (error) {
    // Embedded, nothing else would stop the servers started above.
    if (options.process === undefined) for (const child of early.children) child.killNow();
    throw error;
  }
  return { loaded, config, pins, early, stdio, shutdown, policies };
}

/**
 * Loads the config, starts the upstreams and serves: the whole of `mcp-warden --config FILE`
 * except what belongs to the process (V8's flags, and with `process` absent, signals and exit).
 */
export async function startServing(options: ServeOptions): Promise<Serving> {
  const { loaded, config, pins, early, stdio, shutdown, policies } = await prepare(options);
  // V8's flags are the whole process's: only a gateway that owns its process sets them. Not
  // before the config and policies are read: V8 refuses a code cache made under other flags, so
  // their generated validators would be compiled under V8's own flags each time (lib/v8Flags.ts),
  // switching the flags back and forth at every start.
  if (options.process !== undefined)
    setServingFlags({ youngGeneration: 'held', keepBytecode: currentServingFlags().keepBytecode });
  const [{ createGateway }, logger] = await Promise.all([
    import('../gateway/gateway.js'),
    openLogger(config, loaded, options.log),
  ]);
  const telemetry = await startTelemetryIfConfigured(config, logger);
  /** One id per gateway process: every audit record of this session carries it. */
  const session = randomUUID();
  const trail = await openTrail(config, { loaded, logger, telemetry, session });
  const host = await hostTransport(config, logger, stdio);
  const store = await openStoreIfConfigured(config, logger);
  const servesStdio = config.listen === undefined || config.listen.stdio;
  // What `mcp-warden server list` reads of this gateway: made once the gateway is, told of each change.
  const stateFile: { state?: LiveStateWriter } = {};
  // Told of each upstream's change of state, once the gateway exists: see rehearseWhileWaiting.
  const rehearsal: { upstreamChanged?: () => void } = {};
  const gateway = createGateway({
    config,
    policies,
    redactor: loaded.redactor,
    logger,
    ...(servesStdio && { host }),
    // Hosts over HTTP have calls in flight when a replica is stopped: give them time to finish.
    ...(config.listen && { shutdownGraceMs: 5000 }),
    version: version(),
    early,
    credentials: openCommandCredentials,
    ...(trail?.log && { audit: trail.log }),
    ...(pins && { pins }),
    ...(telemetry && { telemetry }),
    ...(store && { store }),
    session,
    onUpstreamState: () => {
      stateFile.state?.changed();
      rehearsal.upstreamChanged?.();
    },
  });
  if (options.process !== undefined) {
    keepCodeCache(gateway, logger);
    // Only a gateway that owns its process, as for the code cache: an embedding program's first
    // calls are its own business.
    rehearsal.upstreamChanged = rehearseWhileWaiting(gateway, { config, loaded, logger });
  }
  const { writeLiveState } = await import('../gateway/liveState.js');
  const liveState = writeLiveState({ configFile: config.file, running: () => gateway.running(), logger });
  stateFile.state = liveState;
  // However the process ends short of SIGKILL, the file goes with it.
  options.process?.on('exit', () => liveState.close());
  // What both kinds of edit (of the config file, of managed.yaml) start from.
  const live: LiveConfig = { text: loaded.text, config, managed: loaded.managed };
  const managedWatcher =
    loaded.managed === undefined
      ? undefined
      : await watchManagedWhileServing({ managed: loaded.managed, loaded, live, gateway, trail, logger });
  const { watchConfigWhileServing } = await import('./configReload.js');
  const configWatcher = watchConfigWhileServing({
    live,
    gateway,
    logger,
    ...(options.http !== undefined && { http: options.http }),
  });
  shutdown.serving({
    logger,
    gateway,
    trail,
    telemetry,
    store,
    watchers: [managedWatcher, configWatcher, liveState],
  });
  shutdown.watch(servesStdio ? host : undefined);
  logger.info(
    `mcp-warden ${version()} serving ${plural(config.servers.length, 'upstream')} from ${config.file}`,
  );
  if (options.process !== undefined) servingFlagsOnceStarted(config, gateway);
  await gateway.start();
  if (config.listen !== undefined) await listen(config, gateway, logger, shutdown, store);
  return {
    config,
    gateway,
    stop: async (why) => {
      await shutdown.stop(why, 0);
      return shutdown.stopped;
    },
    stopped: shutdown.stopped,
  };
}

/**
 * Rehearses the call path on a gateway of its own (gateway/rehearsal.ts) the first time the
 * gateway waits for a server to start, and only while it does. Returns what to call on each
 * change of an upstream's state.
 */
function rehearseWhileWaiting(
  gateway: Gateway,
  options: { readonly config: WardenConfig; readonly loaded: LoadedFile; readonly logger: Logger },
): () => void {
  const { config, loaded, logger } = options;
  const waiting = (): boolean => gateway.pool.upstreams.some((upstream) => upstream.state === 'connecting');
  let started = false;
  return () => {
    if (started || !waiting()) return;
    started = true;
    import('../gateway/rehearsal.js')
      .then(({ rehearseCallPath }) =>
        rehearseCallPath({
          version: version(),
          redactor: loaded.redactor,
          audit: config.audit !== undefined,
          waiting,
          logger,
        }),
      )
      .catch((error: unknown) => logger.debug(`call path rehearsal not run: ${(error as Error).message}`));
  };
}

/**
 * The store replicas share, when the config names one. Its client is loaded only then: a
 * gateway without `store:` (every stdio user) never loads it.
 */
async function openStoreIfConfigured(config: WardenConfig, logger: Logger): Promise<SharedStore | undefined> {
  const { store } = config;
  if (store === undefined) return undefined;
  const { openRedisStore } = await import('../lib/store/redisStore.js');
  const log = logger.child('store');
  const opened = await openRedisStore({
    ...store,
    warn: (message) => log.warn(message),
    info: (message) => log.info(message),
  });
  log.info(`sharing state with the other replicas through ${store.shown}`);
  return opened;
}

/** The log, and in it what the config file holds that was refused or left out. */
async function openLogger(
  config: WardenConfig,
  loaded: LoadedFile,
  write: ((line: string) => void) | undefined,
): Promise<ClosableLogger> {
  const { redactor, warnings, refusals } = loaded;
  const { createLogger } = await import('../core/logger.js');
  const logger = createLogger(config.gateway.log, {
    redact: { text: (t) => redactor.redactText(t), value: (v) => redactor.redactValue(v) },
    ...(write && { write }),
  });
  // stderr (or the log file) is where a host keeps what its servers say; the gateway serves anyway.
  for (const warning of warnings)
    if (refusals.includes(warning)) logger.error(formatConfigIssue(warning));
    else logger.warn(formatConfigIssue(warning));
  for (const server of config.servers)
    if (server.blockedByManaged !== undefined)
      logger.error(
        `server "${server.name}" is not started, it is blocked by managed settings: ${server.blockedByManaged}`,
      );
    else if (server.failedAtLoad !== undefined)
      logger.error(
        `server "${server.name}" is not started, its config entry has problems: ${server.failedAtLoad}`,
      );
  return logger;
}

/** The audit trail the config asks for, or undefined. */
async function openTrail(
  config: WardenConfig,
  options: {
    readonly loaded: LoadedFile;
    readonly logger: ClosableLogger;
    readonly telemetry: TelemetryRuntime | undefined;
    readonly session: string;
  },
): Promise<AuditTrail | undefined> {
  if (config.audit === undefined) return undefined;
  const { loaded, logger, session } = options;
  const { openAuditTrail } = await import('../features/audit/openTrail.js');
  const auditWrite = options.telemetry?.instruments?.auditWrite;
  let trail: AuditTrail;
  try {
    trail = await openAuditTrail(config.audit, {
      redactor: loaded.redactor,
      logger,
      session,
      version: version(),
      ...(auditWrite && { onWrite: (write: { ms: number }) => auditWrite.record(write.ms / 1000) }),
      // A managed edit may add sinks while serving.
      sinksMayChange: loaded.managed !== undefined,
    });
  } catch (error) {
    if (error instanceof MissingPackageError) throw error;
    // An unusable checkpoint key, or a sink's spool folder that cannot be made.
    throw new CommandError(`invalid config:\n${config.file}: audit: ${(error as Error).message}`);
  }
  const audit = trail.log;
  if (!audit.healthy && audit.lastError !== undefined) logger.error(`AUDIT: ${audit.lastError.message}`);
  return trail;
}

/** The host's side of stdio: JSON-RPC lines in on stdin, out on stdout. */
async function hostTransport(
  config: WardenConfig,
  logger: ClosableLogger,
  stdio: { readonly input: Readable; readonly output: Writable },
): Promise<StreamTransport> {
  const [{ HOST_MAX_DEPTH, truncateForEcho }, { StreamTransport }, { EnvelopeReuse }] = await Promise.all([
    import('../core/protocol/jsonRpc.js'),
    import('../core/transports/streamTransport.js'),
    import('../core/host/envelopeReuse.js'),
  ]);
  return new StreamTransport({
    input: stdio.input,
    output: stdio.output,
    maxLineBytes: config.gateway.maxMessageBytes,
    // The host is waiting on its requests: a malformed one is answered under its id.
    answerInvalid: true,
    maxDepth: HOST_MAX_DEPTH,
    // A modern host's envelope, the same text on every request, is parsed once.
    parse: new EnvelopeReuse().parse,
    onJunk: (line, reason) =>
      logger.warn(
        `host sent a line that is not a JSON-RPC message we serve (${reason})${line === '' ? '' : `: ${truncateForEcho(line)}`}`,
      ),
    onOversize: (info) =>
      logger.error(`host sent a message of ${info.bytes} bytes, over gateway.maxMessageSize; refused`),
  });
}

/** Team mode: the HTTP listener, or a stop with exit code 1 when it cannot listen. */
async function listen(
  config: WardenConfig,
  gateway: Gateway,
  logger: ClosableLogger,
  shutdown: Shutdown,
  store: SharedStore | undefined,
): Promise<void> {
  const { startHttp } = await import('../http/serveHttp.js');
  const { host, port } = config.listen!;
  try {
    shutdown.listener = await startHttp({ config, gateway, logger, ...(store && { store }) });
  } catch (error) {
    logger.error(`cannot listen on ${host}:${port}: ${(error as Error).message}`);
    await shutdown.stop('the HTTP listener could not start', 1);
  }
}

/** What is running once the gateway serves, stopped in this order. */
interface Running {
  readonly logger: ClosableLogger;
  readonly gateway: Gateway;
  readonly trail: AuditTrail | undefined;
  readonly telemetry: TelemetryRuntime | undefined;
  readonly store: SharedStore | undefined;
  /** The watchers of managed.yaml and of the config file, closed first. */
  readonly watchers: readonly ({ close(): void } | undefined)[];
}

/**
 * How a serving gateway ends: on the host closing stdin, a signal, or an internal error. It owns
 * the exit code, the hard stop inside the time a host gives us, and the child processes, which
 * never outlive us. Stops once, however many reasons arrive.
 */
export class Shutdown {
  listener: Listener | undefined;
  /** The exit code, once stopped. */
  readonly stopped: Promise<number>;
  private running: Running | undefined;
  private exiting = false;
  /** Hard stop well inside the 2 s a host gives us; an HTTP listener's hosts get longer. */
  private readonly hardStopMs: number;
  private readonly owner: NodeJS.Process | undefined;
  private readonly output: Writable;
  private end: (code: number) => void = () => {};

  constructor(
    config: WardenConfig,
    options: { readonly output: Writable; readonly process?: NodeJS.Process },
  ) {
    this.hardStopMs = config.listen === undefined ? 1900 : 10_000;
    this.owner = options.process;
    this.output = options.output;
    this.stopped = new Promise((resolve) => {
      let ended = false;
      this.end = (code) => {
        if (ended) return;
        ended = true;
        if (this.owner !== undefined) this.owner.exit(code);
        else resolve(code);
      };
    });
  }

  /** Whatever happens, no child process outlives us; the gateway's pool keeps its children here. */
  killOnExit(children: ReadonlySet<{ killNow(): void }>): void {
    this.owner?.on('exit', () => {
      for (const child of children) child.killNow();
    });
  }

  serving(running: Running): void {
    this.running = running;
  }

  /** Stops on the host closing stdin (when it serves stdio), on SIGTERM, SIGINT, SIGHUP, and on a crash. */
  watch(host: StreamTransport | undefined): void {
    const logger = this.running?.logger;
    if (host !== undefined) host.onclose = () => void this.stop('the host closed stdin', 0);
    const owner = this.owner;
    if (owner === undefined) return;
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
      owner.on(signal, () => void this.stop(signal, 0));
    owner.on('uncaughtException', (error) => {
      logger?.error(`uncaught exception: ${error.stack ?? error.message}`);
      void this.stop('an internal error', 1);
    });
    owner.on('unhandledRejection', (reason) => {
      logger?.error(
        `unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`,
      );
    });
  }

  async stop(why: string, code: number): Promise<void> {
    if (this.exiting || this.running === undefined) return;
    this.exiting = true;
    const { logger, gateway, trail, telemetry, store, watchers } = this.running;
    for (const watcher of watchers) watcher?.close();
    logger.info(`shutting down: ${why}`);
    const hardStop = setTimeout(() => {
      gateway.killChildrenNow();
      this.end(code);
    }, this.hardStopMs).unref();
    void this.stopped.then(() => clearTimeout(hardStop));
    try {
      // No new connections; requests in flight are answered (the routers drain), then sessions end.
      this.listener?.stopAccepting();
      await gateway.close(why);
      await this.listener?.close();
      // The last records (the stop, the final checkpoint) go to the sinks if they can in time.
      await trail?.drain(1000);
    } catch (error) {
      logger.error(`error while shutting down: ${String(error)}`);
    }
    // What the exporters still hold goes out now, within the hard stop above.
    if (telemetry !== undefined) await within(1000, telemetry.shutdown());
    if (store !== undefined) await within(500, store.close());
    await closeLogger(logger);
    // The last answers to the host are handed to the OS before we exit.
    await within(500, drained(this.output));
    this.end(code);
  }
}

/** Resolves once nothing waits to be written to `stream` (or it is closed). */
function drained(stream: Writable): Promise<void> {
  if (stream.writableLength === 0 || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('drain', resolve);
    stream.once('close', resolve);
  });
}

function within(ms: number, work: Promise<unknown>): Promise<unknown> {
  return Promise.race([work, new Promise((resolve) => setTimeout(resolve, ms).unref())]);
}

/**
 * The OpenTelemetry SDK, started when the config has `telemetry:` with a signal on. Its modules
 * are imported only then: without it, serving loads none of them. An OTEL_* setting it cannot
 * honour stops start-up like an invalid config; so does a missing OpenTelemetry package.
 */
async function startTelemetryIfConfigured(
  config: WardenConfig,
  logger: ClosableLogger,
): Promise<TelemetryRuntime | undefined> {
  const wanted = config.telemetry;
  if (wanted === undefined || (!wanted.traces && !wanted.metrics)) return undefined;
  const { startTelemetry, TelemetrySetupError } = await import('../features/telemetry/sdk.js');
  try {
    return await startTelemetry({ config: wanted, env: process.env, logger, version: version() });
  } catch (error) {
    if (error instanceof TelemetrySetupError)
      throw new CommandError(`invalid telemetry setting: ${error.message}`);
    throw error;
  }
}

/**
 * Puts each valid edit of `managed.yaml` in force while serving: the config file as read at
 * start is loaded again under the new settings (an edit that makes it invalid is refused, with
 * file:line, and the last good version stays), then the new policies, server lists, locked
 * settings and audit minimums apply. Each user setting the edit now overrides is logged like at
 * start; what cannot change in a running process is logged as an error naming key and file.
 */
async function watchManagedWhileServing(options: {
  readonly managed: ManagedSettings;
  readonly loaded: LoadedFile;
  readonly live: LiveConfig;
  readonly gateway: Gateway;
  readonly trail: AuditTrail | undefined;
  readonly logger: ClosableLogger;
}): Promise<{ close(): void }> {
  const { managed, loaded, live, gateway, trail, logger } = options;
  const config = live.config;
  const [{ watchManaged }, { applyServerRules }, { managedSettingsNotes }] = await Promise.all([
    import('./managed.js'),
    import('../core/upstreams/managedServers.js'),
    import('../config/managedReload.js'),
  ]);
  let refused = new Set(loaded.refusals.map(formatConfigIssue));
  const { oneAtATime } = await import('./configReload.js');
  return watchManaged(managed, logger, (next, before) =>
    oneAtATime(live, () => applyManagedEdit(next, before)),
  );

  async function applyManagedEdit(next: ManagedSettings, before: ManagedSettings): Promise<void> {
    const inForce = live.config;
    // The config file as last put in force (an edit of it may have been applied since), its
    // servers judged afresh against the new lists.
    const reloaded = await loaded.reload(next, live.text);
    const servers = await applyServerRules(reloaded.config.servers, next, process.env);
    const notes = managedSettingsNotes({
      atStart: managed,
      before,
      after: next,
      startAudit: config.audit,
      audit: inForce.audit,
      nextAudit: reloaded.config.audit,
    });
    await gateway.applyManaged({ policies: next.policies, servers, settings: reloaded.config });
    if (trail !== undefined && reloaded.config.audit !== undefined) await trail.retune(reloaded.config.audit);
    for (const refusal of reloaded.refusals.map(formatConfigIssue))
      if (!refused.has(refusal)) logger.error(refusal);
    for (const line of notes.info) logger.info(line);
    for (const line of notes.errors) logger.error(line);
    refused = new Set(reloaded.refusals.map(formatConfigIssue));
    live.managed = next;
    // The listener as it was started (the `--http` flag gives it, not the file).
    live.config = Object.freeze({ ...reloaded.config, servers, listen: inForce.listen });
  }
}

/**
 * Says at debug level how start-up used the code cache of our own code (src/lib/codeCache.ts),
 * and writes that cache once the first tools/call of any host connection was answered: by then
 * V8 has compiled the call path, and the next start takes it all from the cache instead of
 * compiling it again. On an idle turn after that answer was sent, so no call waits on it.
 */
function keepCodeCache(gateway: Gateway, logger: Logger): void {
  const use = codeCacheUse();
  if (use === undefined) return;
  logger.debug(
    use.refused === undefined
      ? `code cache ${use.file}: ${use.fromCache} of ${use.chunks} chunks compiled from it`
      : `code cache ${use.file} not used: ${use.refused}`,
  );
  void gateway.firstToolCallAnswered.then(() => setImmediate(() => writeOurCodeCache(logger)));
}

/**
 * Writes the code cache of what this process has compiled so far, under each set of V8 flags it
 * compiled under; at most once per process (the cache module keeps to that). Takes the code at
 * once, on the calling turn: call it when no call is waiting.
 */
function writeOurCodeCache(logger: Logger): void {
  const serving = currentServingFlags();
  const writing = writeCodeCache({
    underEachFlagSet: (take) => {
      try {
        for (const flags of flagSetsUsed()) {
          setServingFlags(flags);
          take();
        }
      } finally {
        setServingFlags(serving);
      }
    },
  });
  void writing.then((written) => {
    if (written !== undefined)
      logger.debug(`code cache ${written.file} written (${Math.ceil(written.bytes / 1024)} KB)`);
  });
}

/**
 * V8's flags for serving, set once the upstreams' first lists are in; at the latest once their
 * start-up window has passed (no host has asked anything yet, or every server is started per
 * principal, later): the young generation grows again (in larger steps), and bytecode is kept.
 */
function servingFlagsOnceStarted(config: WardenConfig, gateway: Gateway): void {
  const serving = (): void => setServingFlags({ youngGeneration: 'serving', keepBytecode: true });
  const growAgain = setTimeout(serving, config.gateway.startupTimeoutMs);
  growAgain.unref();
  void gateway.pool.startedUp.then(() => {
    clearTimeout(growAgain);
    serving();
  });
}
