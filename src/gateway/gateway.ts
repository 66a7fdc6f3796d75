import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { diffServers, type ServerChanges } from '../config/configDiff.js';
import type { ServerConfig, WardenConfig } from '../config/types.js';
import { canonicalJson } from '../lib/canonicalJson.js';
import { describeError } from '../lib/describeError.js';
import { definitionRevision } from '../core/catalog/definitionCheck.js';
import type { NamedCatalog } from '../core/catalog/namedCatalog.js';
import { loggedDefinitions } from '../core/catalog/servedDefinitions.js';
import type { LifecycleEvent } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import type { RoutedMessage } from '../core/pipeline/types.js';
import { osPrincipal, principalKey, type Principal } from '../core/principal.js';
import type { Feature } from '../core/routing/feature.js';
import { FirstToolCall } from '../core/routing/firstToolCall.js';
import { SubjectTokens } from '../core/subjectTokens.js';
import type { MessageTransport } from '../core/rpc/transport.js';
import { TaskHandles } from '../core/tasks/handles.js';
import type { EarlyStart } from '../core/upstreams/earlySpawn.js';
import type { UpstreamSignIn } from '../core/upstreams/signIn.js';
import type { ListingStore } from '../core/upstreams/startPolicy.js';
import type { UpstreamPool } from '../core/upstreams/upstreamPool.js';
import type { AuditLog } from '../features/audit/auditWriter.js';
import type { Redactor } from '../features/audit/redact.js';
import { createListingCache, principalListingCache } from '../features/pins/listingCache.js';
import type { PinSet } from '../features/pins/pinFile.js';
import { fileSha256 } from '../features/policy/feature.js';
import type { PolicySet } from '../features/policy/types.js';
import type { TelemetryRuntime } from '../features/telemetry/runtime.js';
import { createSandboxes, grantsOf, type Sandboxes } from '../features/sandbox/index.js';
import { createUpstreamAuth } from '../features/upstreamAuth/index.js';
import type { CredentialStore } from '../lib/credentials/index.js';
import { ALL_LISTS, UpstreamConnections } from './connections.js';
import type { RunningUpstreams } from './liveState.js';
import {
  buildFeatures,
  managedPipeline,
  visible,
  type FeatureDependencies,
  type LifecycleEventWithoutSession,
  type ManagedPipeline,
} from './features.js';
import type { SharedStore } from '../lib/store/sharedStore.js';
import { sharedContinuations } from './sharedContinuations.js';
import { askHost, hostConnections } from './hostConnection.js';
import {
  firstOf,
  hostConnectionSet,
  type Connection,
  type ConnectOptions,
  type HostConnections,
} from './hosts.js';

export interface GatewayOptions {
  readonly config: WardenConfig;
  readonly logger: Logger;
  /**
   * The host connection (stdin/stdout in production, in-memory in tests); absent when hosts
   * connect only over HTTP (see `Gateway.connect`).
   */
  readonly host?: MessageTransport;
  /** Who the process-wide principal is (the stdio host, the gateway's own records); default the OS user. */
  readonly principal?: Principal;
  readonly version: string;
  /** The policies loaded at start (an invalid set never gets this far). */
  readonly policies: PolicySet;
  /** Redacts what the gateway shows or records (confirmation questions, audit records). */
  readonly redactor: Redactor;
  /** The audit trail, opened by the caller when the config has `audit:`. */
  readonly audit?: AuditLog;
  /** This process's session id (its audit writer's records carry it too); default a fresh one. */
  readonly session?: string;
  /**
   * On close, how long calls in flight may take to finish on their own before their upstreams
   * are stopped (which fails them). Shutdown must end within 2 s. Default 500 ms.
   */
  readonly shutdownGraceMs?: number;
  /** Upstream processes already spawned for this config (`spawnEarly`), to be taken over. */
  readonly early?: EarlyStart;
  /**
   * The pins file as read at start, when the config has `pins:` (the CLI refuses to start with
   * an invalid one). Absent: the gateway reads it itself.
   */
  readonly pins?: { readonly pins: PinSet; readonly text: string | undefined };
  /**
   * A connection to an upstream instead of starting it as configured (undefined: start it). For
   * embedding the gateway in-process: tests connect in-memory servers this way.
   */
  readonly connectUpstream?: (server: ServerConfig, principal?: Principal) => MessageTransport | undefined;
  /**
   * How the user signs in to a server that may ask for it (the OAuth client); undefined for a
   * server that never does. Behind the listener each principal then signs in for themselves.
   */
  readonly signInFor?: (server: ServerConfig) => UpstreamSignIn | undefined;
  /** The started OpenTelemetry SDK, when the config has `telemetry:` (see features/telemetry/sdk.ts). */
  readonly telemetry?: TelemetryRuntime;
  /**
   * Where upstream sign-ins (OAuth tokens) are kept; default the OS credential store, else the
   * user-only file (lib/credentials), opened when an HTTP server first asks for a sign-in.
   */
  readonly credentials?: () => Promise<CredentialStore>;
  /** Called when an upstream's state or lists change: `Gateway.running` then says how. */
  readonly onUpstreamState?: () => void;
  /**
   * The store replicas share (`store:`), opened by the caller: rate-limit buckets, the one-time
   * use of sealed request states and pending confirmations live there. Absent: in memory.
   */
  readonly store?: SharedStore;
  /**
   * Where the servers' listings are kept between runs, for every principal; default the
   * config's own folder (features/pins/listingCache.ts). A gateway that must leave no file
   * behind (the call path rehearsal) gives a store of its own.
   */
  readonly listings?: ListingStore;
}

export interface Gateway {
  readonly pool: UpstreamPool;
  /** This process's session id, in its audit records; it names the replica to the others. */
  readonly session: string;
  /** The upstreams running now, shared and per principal (for the live state file). */
  running(): RunningUpstreams;
  /**
   * Resolves once, as the answer to the first `tools/call` of any host connection (stdio or the
   * listener's) has been handed to its transport: the gateway has then run its call path.
   */
  readonly firstToolCallAnswered: Promise<void>;
  readonly tools: NamedCatalog<Tool>;
  /**
   * Where the HTTP listener leaves each principal's verified bearer token, for the servers whose
   * tokens are exchanged for ones of their own (`oauth.tokenExchange`); read by nothing else.
   */
  readonly subjectTokens: SubjectTokens;
  /**
   * Serves one more host connection (an HTTP session) made by `principal`, beside the one given
   * as `host`. Config, policies, audit, features and upstreams are shared; the connection has
   * its own peer, host session and router. Close it through the returned connection.
   */
  connect(transport: MessageTransport, principal: Principal, options?: ConnectOptions): Connection;
  start(): Promise<void>;
  /** Answers or fails what is in flight, stops every upstream, flushes the host connection. */
  close(reason?: string): Promise<void>;
  /** Synchronous last resort: kill every child process group now. */
  killChildrenNow(): void;
  /**
   * Puts a changed `managed.yaml` in force while serving: its policy files (loaded first, for the
   * next call), and which servers may run (`servers`: every configured server, in config order,
   * with `blockedByManaged` as the new settings say). A server now blocked is stopped, its items
   * leave the host's lists and it is audited as `server_blocked`; one now allowed is started.
   * Throws `ConfigError` when the new policy files cannot be used: then nothing changes.
   */
  applyManaged(next: ManagedChange): Promise<void>;
  /**
   * Puts an edited config file in force while serving: servers added start, removed ones stop
   * and changed ones restart (their calls in flight fail naming the server and why), unchanged
   * ones are left running; the hosts are told which lists changed, and the call settings apply
   * from the next call. Throws `ReloadRefusedError` when the gateway cannot run the new servers
   * as they are configured: then nothing changes.
   */
  applyConfig(next: ConfigChange): Promise<ServerChanges>;
  /** Audits an edit of the config file that was refused (`error` says why); nothing changed. */
  reloadRefused(refusal: { readonly sha256?: string; readonly error: string }): void;
  /** Audits what the HTTP edge saw (a host's sign-in), for `principal`; a no-op without `audit:`. */
  record(event: LifecycleEventWithoutSession, principal?: Principal): void;
}

/** What a valid edit of the config file changes while serving (see `Gateway.applyConfig`). */
export interface ConfigChange {
  /** Every configured server, in config order, with `blockedByManaged` as the managed settings say. */
  readonly servers: readonly ServerConfig[];
  /** The new config: the settings the pipeline reads per call follow it from the next call on. */
  readonly settings: WardenConfig;
  /** For the audit record: the file's hash as read, and the settings only a restart applies. */
  readonly sha256: string;
  readonly restartNeeded: readonly string[];
}

/** An edit of the config that this gateway cannot put in force without a restart. */
export class ReloadRefusedError extends Error {
  override readonly name = 'ReloadRefusedError';
}

/** What a valid edit of the managed settings changes while serving (see `Gateway.applyManaged`). */
export interface ManagedChange {
  readonly policies: readonly string[];
  readonly servers: readonly ServerConfig[];
  /**
   * The config with the new managed locks and audit minimums in place (the user's file as read
   * at start): the settings the pipeline reads per call (argument validation, confirmation,
   * time limits, result repair, the audit's `onFailure`) follow it from the next call on.
   */
  readonly settings?: WardenConfig;
}

export type { Connection, ConnectOptions } from './hosts.js';

/** What a gateway changes while it serves. */
interface ServingState {
  /** Every configured server as the managed settings in force let it run or block it. */
  servers: readonly ServerConfig[];
  /** The same servers by name: one map, refilled in place by an edit of the config, that every reader holds. */
  readonly byName: Map<string, ServerConfig>;
  managedPolicies: readonly string[];
  /** The audit's `onFailure` in force: a managed edit may tighten it (or let it go back). */
  auditMode: NonNullable<WardenConfig['audit']>['onFailure'] | undefined;
  closing?: Promise<void>;
}

/** The parts of one gateway, as its start, close and managed edits use them. */
interface Parts {
  readonly options: GatewayOptions;
  readonly record: Recorder;
  readonly features: readonly Feature[];
  readonly policy: ReturnType<typeof buildFeatures>['policy'];
  readonly pipeline: ManagedPipeline;
  readonly upstreams: UpstreamConnections;
  readonly sandboxes: Sandboxes;
  readonly hosts: HostConnections;
  readonly state: ServingState;
  readonly startedAt: number;
  readonly session: string;
  readonly firstToolCall: FirstToolCall;
}

type Recorder = (event: LifecycleEventWithoutSession, principal?: Principal) => void;

export function createGateway(options: GatewayOptions): Gateway {
  const { config, logger, audit } = options;
  /** One id per gateway process: every audit record of this session carries it. */
  const session = options.session ?? randomUUID();
  /** Who the gateway's own records (start, stop, upstreams, config) are written for. */
  const principal = options.principal ?? osPrincipal();
  const record = recorder(audit, session, principal);
  const hosts = hostConnectionSet();
  const state: ServingState = {
    servers: config.servers,
    byName: new Map(config.servers.map((s) => [s.name, s])),
    managedPolicies: config.managed?.policies ?? [],
    auditMode: config.audit?.onFailure,
  };
  const { features, policy, settingsFeatures } = buildFeatures(
    featureDependencies(options, { record, session, principal, hosts, state }),
  );
  const lists = hostLists(features, hosts, logger, record, () => upstreams.relistAll(['tools']));
  const subjectTokens = new SubjectTokens();
  const { upstreamAuth, signInFor } = signIns(options, record, subjectTokens);
  const sandboxes = createSandboxes({
    policies: () => policy.set(),
    ...(audit && { record }),
    warn: (server, message) => logger.child(server).warn(message),
  });
  const upstreams = new UpstreamConnections({
    config,
    logger,
    ...(options.early && { early: options.early }),
    connections: hosts.all,
    principal,
    hooks: {
      logger,
      version: options.version,
      features,
      hosts,
      listening: config.listen !== undefined,
      ...(audit && { record }),
      ...(options.connectUpstream && { connectUpstream: options.connectUpstream }),
      ...(signInFor && { signInFor }),
      ...(upstreamAuth && { authorizationFor: upstreamAuth.authorizationFor }),
      ...(options.onUpstreamState && { onUpstreamState: options.onUpstreamState }),
    },
    lists,
    servers: () => state.servers,
    listings: options.listings ?? createListingCache(config, { logger }),
    principalListings: (who) =>
      options.listings ?? principalListingCache(config, { logger, principalKey: principalKey(who) }),
    wrapFor: sandboxes.wrapFor,
  });
  policy.onReload((before, after) => regrant(upstreams, state.servers, before, after, logger));
  const pipeline = managedPipeline(features, { config, audited: audit !== undefined, settingsFeatures });
  const firstToolCall = new FirstToolCall();
  const connect = hostConnections({
    config,
    logger,
    version: options.version,
    hosts,
    upstreams,
    features,
    pipeline: (terminal) => pipeline.compose(terminal),
    // One key for the process's task handles: each handle names its owner, which is what keeps
    // connections apart, and one key lets every stateless request of a principal open its tasks.
    taskHandles: new TaskHandles(),
    ...notServedNotes(config.gateway.naming.separator, () => state.servers),
    revisionKnown: lists.revisionKnown,
    ...(audit && { record }),
    serversByName: state.byName,
    firstToolCall,
    ...(options.store !== undefined &&
      config.listen?.sessionKey !== undefined && {
        continuations: sharedContinuations(options.store, config.listen.sessionKey, session),
      }),
  });
  const relist = () => upstreams.relistAll(ALL_LISTS);
  const watchers = features.flatMap((f) =>
    f.watch ? [f.watch({ upstreams: () => upstreams.pool.upstreams, relist })] : [],
  );
  if (options.host !== undefined) connect(options.host, principal, { taskOwner: session });
  const parts: Parts = {
    options,
    record,
    features,
    policy,
    pipeline,
    upstreams,
    sandboxes,
    hosts,
    state,
    startedAt: Date.now(),
    session,
    firstToolCall,
  };
  return gatewayOf(parts, { connect, watchers, relist, subjectTokens });
}

/** The gateway its embedder holds: its parts, and the connections and watchers made for it. */
function gatewayOf(
  parts: Parts,
  made: {
    readonly connect: ReturnType<typeof hostConnections>;
    readonly watchers: readonly { close(): void }[];
    readonly relist: () => void;
    readonly subjectTokens: SubjectTokens;
  },
): Gateway {
  const { upstreams, hosts, state, record } = parts;
  const { config } = parts.options;
  const { connect, watchers, relist } = made;
  return {
    pool: upstreams.pool,
    session: parts.session,
    running: () => ({
      shared: upstreams.pool.upstreams,
      principals: (upstreams.principalPools?.all ?? []).map((view) =>
        view.upstreams.filter((u) => view.ownsServer(u.name)),
      ),
      names: state.servers.map((s) => s.name),
    }),
    firstToolCallAnswered: parts.firstToolCall.answered,
    tools: upstreams.main.catalogs.tools,
    subjectTokens: made.subjectTokens,
    connect: (transport, who, connectOptions) => {
      const connection = connect(transport, who, connectOptions);
      hosts.overHttp.add(connection.router.host);
      return connection;
    },
    start: () => start(parts),
    close: (reason = 'closed') => (state.closing ??= close(parts, watchers, reason)),
    killChildrenNow: () => upstreams.pool.killAllNow(),
    applyManaged: (next) => applyManaged(parts, next, relist),
    applyConfig: (next) => applyConfig(parts, next),
    record,
    reloadRefused: ({ sha256, error }) =>
      record({
        type: 'config_reload',
        file: config.file,
        applied: false,
        ...(sha256 !== undefined && { sha256 }),
        added: [],
        removed: [],
        changed: [],
        error,
      }),
  };
}

/**
 * How users sign in to HTTP servers: the OAuth client, made whatever the config holds now, since
 * an edit of the config may add a server that asks for a sign-in (the client is cheap until a
 * server first answers 401). An embedder that brings its own sign-in (tests) replaces it.
 */
function signIns(options: GatewayOptions, record: Recorder, subjectTokens: SubjectTokens) {
  const upstreamAuth =
    options.signInFor === undefined
      ? createUpstreamAuth({
          // Loaded with the store's first use: a gateway whose servers never ask for a sign-in
          // does not load the credential code at start.
          store:
            options.credentials ??
            once(async () => {
              const { openCredentialStore } = await import('../lib/credentials/index.js');
              return openCredentialStore({ logger: options.logger });
            }),
          logger: options.logger,
          subjectTokens,
          record: (event, who) => record(event, who),
        })
      : undefined;
  return { upstreamAuth, signInFor: options.signInFor ?? upstreamAuth?.signInFor };
}

/**
 * Writes the gateway's own records. Lifecycle records never stop the gateway: in `block` mode
 * the audit stage refuses calls, but a start, exit or reload must still happen (the writer
 * reports the failure itself).
 */
function recorder(audit: AuditLog | undefined, session: string, processPrincipal: Principal): Recorder {
  // A record about someone else's request (a rate limit's burst) names them itself.
  return (event, principal = event.principal ?? processPrincipal) => {
    try {
      audit?.append({ ...event, session, principal } as LifecycleEvent);
    } catch {
      // Already reported through the audit log's onStatus; calls are refused by the audit stage.
    }
  };
}

/** What the features are given: the gateway's questions, records and per-call facts. */
function featureDependencies(
  options: GatewayOptions,
  gateway: {
    readonly record: Recorder;
    readonly session: string;
    readonly principal: Principal;
    readonly hosts: HostConnections;
    readonly state: ServingState;
  },
): FeatureDependencies {
  const { config, audit, hosts } = { ...options, ...gateway };
  /** The host a call came from, or the one an upstream is told about: the first one set up. */
  const hostOf = (call: RoutedMessage) => call.host ?? firstOf(hosts.all)?.router.host;
  const serversByName = gateway.state.byName;
  return {
    config,
    serversByName,
    logger: options.logger,
    policies: options.policies,
    askHost: (params, signal, call) => askHost(hostOf(call), params, signal, call),
    redact: (value) => options.redactor.redactValue(value),
    record: gateway.record,
    lastHostRequest: () => hosts.callsInFlight.lastStarted,
    ...(options.store && { store: options.store }),
    ...(audit && {
      audit: {
        log: audit,
        session: gateway.session,
        principal: gateway.principal,
        client: (call: RoutedMessage) => hostOf(call)?.info,
        onFailure: () => gateway.state.auditMode ?? 'block',
      },
    }),
    ...(options.pins && { pins: options.pins }),
    ...(options.telemetry && {
      telemetry: {
        runtime: options.telemetry,
        protocolVersion: (message: RoutedMessage) => hostOf(message)?.protocolVersion,
        hostTransport: (message: RoutedMessage) =>
          message.host !== undefined && hosts.overHttp.has(message.host) ? 'tcp' : 'pipe',
        upstreamTransport: (server: string) => {
          const transport = serversByName.get(server)?.transport;
          return transport === undefined ? undefined : transport === 'stdio' ? 'pipe' : 'tcp';
        },
      },
    }),
  };
}

/**
 * What the host's lists show and the definitions they serve. The lists are shared by every
 * connection, so with several it is the first host that decides: whether app-only tools are
 * listed, and the revision definitions are checked against.
 */
function hostLists(
  features: readonly Feature[],
  hosts: HostConnections,
  logger: Logger,
  record: Recorder,
  relistTools: () => void,
) {
  const primary = () => firstOf(hosts.all)?.router.host;
  const definitions = loggedDefinitions(logger, record);
  const hostRevision = () => definitionRevision(primary()?.protocolVersion);
  let servedRevision = hostRevision();
  return {
    listed: visible(features, primary),
    served: (server: string, tools: readonly Tool[], runsTasks: boolean) =>
      definitions.tools(server, tools, (servedRevision = hostRevision()), runsTasks),
    /** Rebuilds the tool lists when a host's revision asks for other definitions than served. */
    revisionKnown: () => {
      if (hostRevision() !== servedRevision) relistTools();
    },
  };
}

/** Why servers are left out, for the initialize answer and for a tool name that is unknown. */
function notServedNotes(separator: string, servers: () => readonly ServerConfig[]) {
  /** Why `server` is not served (blocked by managed settings, or a broken entry), if it is not. */
  const notServed = (server: ServerConfig): string | undefined =>
    server.blockedByManaged !== undefined
      ? `server "${server.name}" is blocked by managed settings: ${server.blockedByManaged}`
      : server.failedAtLoad === undefined
        ? undefined
        : `server "${server.name}" is not available, because its config entry has problems: ${server.failedAtLoad}`;
  return {
    // A host shows a server's stderr in a log few users open; the initialize answer's
    // instructions reach the host (and often the model) at once, so a server left out is not a
    // mystery. Read from the current server list, which a managed edit replaces.
    notes: (): readonly string[] =>
      servers().flatMap((server) => {
        const why = notServed(server);
        return why === undefined ? [] : [`mcp-warden: ${why}`];
      }),
    /**
     * A tool name in the namespace of a server that is not served: the error says why, so the
     * host (and the model) learn it is blocked or broken, not only that the name is unknown.
     */
    whyUnknown: (name: string): string | undefined => {
      const server = servers().find((s) => s.namespace !== null && name.startsWith(s.namespace + separator));
      return server === undefined ? undefined : notServed(server);
    },
  };
}

async function start(parts: Parts): Promise<void> {
  const { options, record } = parts;
  const { config } = options;
  if (options.audit) {
    record({ type: 'gateway_start', version: options.version, pid: process.pid, config: config.file });
    record({
      type: 'config_load',
      file: config.file,
      sha256: fileSha256(config.file),
      servers: config.servers.map((s) => s.name),
    });
    for (const server of config.servers)
      if (server.blockedByManaged !== undefined && config.managed !== undefined)
        record({
          type: 'server_blocked',
          server: server.name,
          reason: server.blockedByManaged,
          managed: config.managed.file,
        });
    for (const feature of parts.features) feature.started?.();
  }
  await options.host?.start();
}

/**
 * Calls about to finish get a moment; then stopping the upstreams fails the rest at once, which
 * the router answers, so every request still gets a response.
 */
async function close(parts: Parts, watchers: readonly { close(): void }[], reason: string): Promise<void> {
  const { options, hosts } = parts;
  for (const watcher of watchers) watcher.close();
  const open = [...hosts.all];
  const drained = Promise.all(open.map((c) => c.router.drain()));
  await Promise.race([drained, delay(options.shutdownGraceMs ?? 500)]);
  await parts.upstreams.stop();
  await parts.sandboxes.close();
  await drained;
  if (options.audit) {
    parts.record({ type: 'gateway_stop', reason, uptimeMs: Date.now() - parts.startedAt });
    options.audit.close();
  }
  hosts.all.clear();
  await Promise.all(open.map((c) => c.transport.close()));
}

async function applyManaged(parts: Parts, next: ManagedChange, relist: () => void): Promise<void> {
  const { state } = parts;
  // The policies first: a server this change lets run must not serve before their rules rule.
  if (JSON.stringify(next.policies) !== JSON.stringify(state.managedPolicies)) {
    await parts.policy.retarget(next.policies);
    state.managedPolicies = next.policies;
  }
  const before = new Map(state.servers.map((s) => [s.name, s.blockedByManaged]));
  const changed = next.servers.filter((s) => before.has(s.name) && before.get(s.name) !== s.blockedByManaged);
  setServers(state, next.servers);
  if (next.settings !== undefined) {
    parts.pipeline.applySettings(next.settings);
    state.auditMode = next.settings.audit?.onFailure ?? state.auditMode;
  }
  // A gateway shutting down starts nothing more.
  if (changed.length === 0 || state.closing !== undefined) return;
  const stopping = changed.map((server) => switchServer(parts, server));
  // The swap is done (the old upstreams are only stopping): the hosts' lists lose their items now.
  parts.upstreams.principalPools?.reset(state.servers);
  relist();
  await Promise.all(stopping);
}

function setServers(state: ServingState, servers: readonly ServerConfig[]): void {
  state.servers = servers;
  state.byName.clear();
  for (const server of servers) state.byName.set(server.name, server);
}

async function applyConfig(parts: Parts, next: ConfigChange): Promise<ServerChanges> {
  const { state, upstreams } = parts;
  const changes = diffServers(state.servers, next.servers);
  const refused = upstreams.cannotRun(next.servers);
  if (refused !== undefined) throw new ReloadRefusedError(refused);
  // The settings first: a server this edit adds must not serve a call under the old ones.
  parts.pipeline.applySettings(next.settings);
  setServers(state, next.servers);
  for (const feature of parts.features) feature.serversChanged?.(next.servers);
  parts.record({
    type: 'config_reload',
    file: parts.options.config.file,
    applied: true,
    sha256: next.sha256,
    added: [...changes.added],
    removed: [...changes.removed],
    changed: [...changes.changed],
    ...(next.restartNeeded.length > 0 && { restartNeeded: [...next.restartNeeded] }),
  });
  // A gateway shutting down starts nothing more.
  if (state.closing !== undefined) return changes;
  const starting = new Set([...changes.added, ...changes.changed]);
  for (const server of next.servers)
    if (starting.has(server.name) && server.blockedByManaged !== undefined)
      noteBlocked(parts, server, server.blockedByManaged, 'is not started, it is');
  await upstreams.apply(next.servers, {
    changed: 'it was restarted because its entry in the config file changed',
    removed: 'it was removed from the config',
  });
  return changes;
}

/**
 * Restarts each running server whose sandbox derives its grants from the policies (`sandbox:
 * auto`) and whose grants differ under the policies now in force, so that it runs with what
 * the policies now let it touch: the grants of a process are fixed when it starts.
 */
function regrant(
  upstreams: UpstreamConnections,
  servers: readonly ServerConfig[],
  before: PolicySet,
  after: PolicySet,
  logger: Logger,
): void {
  for (const server of servers) {
    if (server.transport !== 'stdio' || server.sandbox?.auto !== true) continue;
    if (server.blockedByManaged !== undefined || !upstreams.pool.byName.has(server.name)) continue;
    const granted = (set: PolicySet) => canonicalJson(grantsOf(server, set) ?? null);
    if (granted(before) === granted(after)) continue;
    logger.info(`server "${server.name}": the policies changed what its sandbox grants; restarting it`);
    upstreams.pool
      .replace(server, 'the policies changed what its sandbox grants')
      .catch((error: unknown) =>
        logger.error(`server "${server.name}" could not be restarted: ${describeError(error)}`),
      );
  }
}

/** Logs and audits a server the managed settings do not let run. */
function noteBlocked(parts: Parts, server: ServerConfig, blocked: string, what: string): void {
  const { logger, config } = parts.options;
  logger.error(`server "${server.name}" ${what} blocked by managed settings: ${blocked}`);
  if (config.managed !== undefined)
    parts.record({
      type: 'server_blocked',
      server: server.name,
      reason: blocked,
      managed: config.managed.file,
    });
}

/** Stops a server the managed settings now block, or starts one they now allow. */
function switchServer(parts: Parts, server: ServerConfig): Promise<void> {
  const { logger } = parts.options;
  const blocked = server.blockedByManaged;
  if (blocked !== undefined) noteBlocked(parts, server, blocked, 'is stopped, it is now');
  else logger.info(`server "${server.name}" is now allowed by managed settings; starting it`);
  const { pool } = parts.upstreams;
  if (!pool.byName.has(server.name)) return Promise.resolve();
  return pool.replace(
    server,
    blocked === undefined
      ? 'the managed settings changed'
      : `it is now blocked by managed settings: ${blocked}`,
  );
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** `make`, called on first use only, its promise shared by every later use. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
}
