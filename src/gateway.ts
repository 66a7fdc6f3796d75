import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import type { ServerConfig, WardenConfig } from './config/types.js';
import { UI_EXTENSION } from './core/catalog/appUi.js';
import { rebuildCatalogs } from './core/catalog/catalogs.js';
import { NamedCatalog } from './core/catalog/namedCatalog.js';
import { ResourceCatalog } from './core/catalog/resourceCatalog.js';
import { loggedDefinitions } from './core/catalog/servedDefinitions.js';
import { definitionRevision } from './core/catalog/definitionCheck.js';
import { DeniedError, MalformedAnswerError, PeerRpcError } from './core/errors.js';
import type { LifecycleEvent } from './core/events.js';
import { foldVisibility, type Feature } from './core/routing/feature.js';
import type { Logger } from './core/logger.js';
import { compose } from './core/pipeline/compose.js';
import { createForward } from './core/pipeline/forward.js';
import { orderStages, type StageName } from './core/pipeline/order.js';
import type { RoutedMessage, Stage } from './core/pipeline/types.js';
import { fulfilInput } from './core/tasks/fulfilInput.js';
import { fixedRoots, refusedByConfig } from './core/routing/clientRequests.js';
import { askerOf, CallsInFlight } from './core/routing/questionRouting.js';
import type { Router } from './core/routing/router.js';
import { connectHost } from './core/routing/connectHost.js';
import { withAppVisibility } from './core/routing/toolResolution.js';
import { InitializedHostSession, type HostSession } from './core/host/hostSession.js';
import { osPrincipal, type Principal } from './core/principal.js';
import { TaskHandles } from './core/tasks/handles.js';
import type { TaskMemory } from './core/tasks/taskRouting.js';
import type { CancelSignal } from './core/rpc/cancellation.js';
import type { IncomingRequest } from './core/rpc/peer.js';
import {
  RpcErrorCode,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type Params,
} from './core/protocol/jsonRpc.js';
import type { MessageTransport } from './core/rpc/transport.js';
import { StreamTransport } from './core/transports/streamTransport.js';
import type { EarlyStart } from './core/upstreams/earlySpawn.js';
import type { ListKind, Upstream, UpstreamLifecycleEvent } from './core/upstreams/upstream.js';
import { UpstreamPool, type PoolView } from './core/upstreams/upstreamPool.js';
import {
  isolatedServers,
  loggerFor,
  PrincipalPools,
  PrincipalView,
  sharedServers,
} from './core/upstreams/principalPools.js';
import type { AuditLog } from './features/audit/auditWriter.js';
import { createAudit } from './features/audit/feature.js';
import type { Redactor } from './features/audit/redact.js';
import type { AuditStageOptions } from './features/audit/stage.js';
import { createConfirmation } from './features/confirmation/feature.js';
import type { ConfirmationOptions, HostAnswer } from './features/confirmation/stage.js';
import { createLimits } from './features/limits/feature.js';
import { createPrincipalLimits } from './features/limits/principalFeature.js';
import { createPins } from './features/pins/feature.js';
import type { PinSet } from './features/pins/pinFile.js';
import type { PinGuard } from './features/pins/pinGuard.js';
import { createPinStage } from './features/pins/stage.js';
import { createPolicy, fileSha256 } from './features/policy/feature.js';
import type { PolicySet } from './features/policy/types.js';
import { createRepair } from './features/repair/feature.js';
import { createTelemetry } from './features/telemetry/feature.js';
import type { TelemetryRuntime } from './features/telemetry/runtime.js';
import type { TelemetryStageOptions } from './features/telemetry/stage.js';
import { createTimeout } from './features/timeout/feature.js';
import { createValidate } from './features/validate/feature.js';

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
  readonly connectUpstream?: (server: ServerConfig) => MessageTransport | undefined;
  /** The started OpenTelemetry SDK, when the config has `telemetry:` (see features/telemetry/sdk.ts). */
  readonly telemetry?: TelemetryRuntime;
}

export interface ConnectOptions {
  /**
   * Whose tasks the connection's are: a handle is opened only by connections of the same owner.
   * By default the connection's own (a new id), which suits a connection that lasts; stateless
   * requests, each a connection of its own, name their principal instead, so a task one request
   * created can be polled by the next.
   */
  readonly taskOwner?: string;
  /**
   * The questions of the connection's tasks the gateway holds, when they must outlive it (the
   * stateless requests of one principal share them); the connection's own otherwise.
   */
  readonly taskMemory?: TaskMemory;
}

export interface Gateway {
  readonly pool: UpstreamPool;
  readonly tools: NamedCatalog<Tool>;
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

/** What the features need from the gateway around them. */
export interface FeatureDependencies {
  readonly config: WardenConfig;
  readonly logger: Logger;
  /** The policies loaded at start. */
  readonly policies: PolicySet;
  /** Asks the host through elicitation; undefined when it cannot. */
  readonly askHost: ConfirmationOptions['askHost'];
  readonly redact: (value: unknown) => unknown;
  /** Writes a record to the audit trail, when there is one (never throws). */
  readonly record: (event: LifecycleEventWithoutSession) => void;
  /** Present when the config has `audit:`. */
  readonly audit?: Omit<AuditStageOptions, 'config' | 'logger'>;
  /** The pins file as read at start, when the config has `pins:`. */
  readonly pins?: { readonly pins: PinSet; readonly text: string | undefined };
  /** Present when the config has `telemetry:`. */
  readonly telemetry?: Omit<TelemetryStageOptions, 'redact'>;
}

type LifecycleEventWithoutSession = LifecycleEvent extends infer E
  ? E extends { session: string }
    ? Omit<E, 'session'>
    : never
  : never;

/**
 * Every feature this config turns on, each made by its own factory. The one place that knows
 * them all: the pipeline's stages, the host's tool list and the files watched are folded from
 * what these return.
 */
export function buildFeatures(deps: FeatureDependencies): {
  readonly features: readonly Feature[];
  readonly policy: ReturnType<typeof createPolicy>;
  /** The features of `SETTINGS_STAGES` made for other settings (a managed edit's). */
  readonly settingsFeatures: (config: WardenConfig) => Feature[];
} {
  const { config, logger } = deps;
  const servers = new Map(config.servers.map((s) => [s.name, s]));
  const policy = createPolicy(config, {
    policies: deps.policies,
    logger,
    record: deps.record,
    refusedByConfig: (message) => refusedByConfig(message, servers),
  });
  const { pins: pinsConfig } = config;
  const features: Feature[] = [
    ...(deps.telemetry ? createTelemetry({ ...deps.telemetry, redact: deps.redact }) : []),
    ...(deps.audit && config.audit ? [createAudit({ audit: config.audit }, { ...deps.audit, logger })] : []),
    ...(pinsConfig
      ? [
          createPins(
            { ...config, pins: pinsConfig },
            { logger, record: deps.record, ...(deps.pins && { initial: deps.pins }) },
          ),
        ]
      : []),
    ...settingsFeatures(config),
    policy,
    createLimits(config),
    createPrincipalLimits(config),
  ];
  return { features, policy, settingsFeatures };

  function settingsFeatures(settings: WardenConfig): Feature[] {
    return [
      createValidate(settings, { logger }),
      createConfirmation(settings, { askHost: deps.askHost, redact: deps.redact, logger }),
      createTimeout(settings),
      createRepair(settings, { logger }),
    ];
  }
}

/** How long the host may leave what was written to it unread before the log says so. */
const SLOW_HOST_MS = 1000;

/**
 * The stages that are nothing but settings (no state a call after another relies on): made
 * afresh from the config a managed edit gives, so a lock on what they read applies from the
 * next call, with the calls in flight finishing under the stage they started in.
 */
const SETTINGS_STAGES: readonly StageName[] = ['validate', 'confirmation', 'timeout', 'resultRepair'];

/**
 * `features` with each settings stage replaced by one that runs whatever `current` holds under
 * its name (passing the message on when it holds none, as a config without that stage would).
 */
function swappableSettings(features: readonly Feature[], current: ReadonlyMap<StageName, Stage>): Feature[] {
  return [
    ...features.filter((f) => f.stage === undefined || !SETTINGS_STAGES.includes(f.stage.name)),
    ...SETTINGS_STAGES.map((name): Feature => ({
      stage: {
        name,
        run: (message, next) => {
          const run = current.get(name);
          return run === undefined ? next(message) : run(message, next);
        },
      },
    })),
  ];
}

/** The settings stages among `features`, by name. */
function stagesByName(features: readonly Feature[]): Map<StageName, Stage> {
  return new Map(
    features.flatMap((f) =>
      f.stage && SETTINGS_STAGES.includes(f.stage.name) ? [[f.stage.name, f.stage.run] as const] : [],
    ),
  );
}

/** The pipeline's stages, in the order STAGE_ORDER fixes (see core/pipeline/order.ts). */
export function pipelineStages(features: readonly Feature[]): Stage[] {
  const stages: Partial<Record<StageName, Stage>> = {};
  for (const feature of features) if (feature.stage) stages[feature.stage.name] = feature.stage.run;
  const observe = stageObserver(features);
  if (observe !== undefined)
    for (const [name, run] of Object.entries(stages) as [StageName, Stage][])
      stages[name] = (message, next) => {
        observe(name, message);
        return run(message, next);
      };
  return orderStages(stages);
}

/** Every feature's stage observer as one; undefined (and no stage wrapped) when none has one. */
function stageObserver(features: readonly Feature[]): Feature['observeStage'] {
  const observers = features.flatMap((f) => (f.observeStage ? [f.observeStage] : []));
  if (observers.length <= 1) return observers[0];
  return (stage, message) => observers.forEach((observe) => observe(stage, message));
}

/**
 * The pipeline's stages for this config: audit only when `audit:` is set, pins only with
 * `pins:`. Kept for tests that look at the stages alone.
 */
export function buildPipelineStages(
  deps: Omit<FeatureDependencies, 'record' | 'policies' | 'pins'> & {
    readonly engine?: unknown;
    readonly pins?: PinGuard;
  },
): Stage[] {
  const { features } = buildFeatures({
    ...deps,
    config: { ...deps.config, pins: undefined },
    policies: { files: [] },
    record: () => {},
    pins: undefined,
  });
  // A given guard stands in for the one the pins feature would read from the pins file.
  const guard = deps.pins;
  const withPins =
    guard === undefined
      ? features
      : [
          ...features,
          { stage: { name: 'pins' as const, run: createPinStage({ refusal: guard.refusal.bind(guard) }) } },
        ];
  return pipelineStages(withPins);
}

export function createGateway(options: GatewayOptions): Gateway {
  const { config, logger, host } = options;
  const warn = (warning: string) => logger.warn(warning);
  const tools = new NamedCatalog<Tool>('tools', config.gateway.naming, warn);
  const prompts = new NamedCatalog<Prompt>('prompts', config.gateway.naming, warn);
  const resources = new ResourceCatalog(warn);
  const { audit, redactor } = options;
  /** One id per gateway process: every audit record of this session carries it. */
  const session = options.session ?? randomUUID();
  const startedAt = Date.now();
  /** Who the gateway's own records (start, stop, upstreams, config) are written for. */
  const processPrincipal = options.principal ?? osPrincipal();
  /**
   * Lifecycle records never stop the gateway: in `block` mode the audit stage refuses calls,
   * but a start, exit or reload must still happen (the writer reports the failure itself).
   */
  const record = (event: LifecycleEventWithoutSession, principal = processPrincipal): void => {
    try {
      audit?.append({ ...event, session, principal } as LifecycleEvent);
    } catch {
      // Already reported through the audit log's onStatus; calls are refused by the audit stage.
    }
  };
  /**
   * The host connections being served: stdio's one, and one per HTTP session. Everything above
   * this line (config, policies, audit, features, upstreams, catalogs) is shared by all of them;
   * each has its own peer, host session (capabilities, log level, lists seen) and router.
   */
  const connections = new Set<Connection>();
  /**
   * Which connection last sent each upstream a request: where that upstream's own requests go.
   * Keyed by server name, and by principal too for a principal's own processes (which are
   * replaced when they idle out, so the key must outlive them).
   */
  const lastUser = new Map<string, Connection>();
  const userKey = (server: string, view: PrincipalView | undefined): string =>
    view !== undefined && view.ownsServer(server) ? `${view.key}\u0000${server}` : server;
  /** Each connection's requests in flight on each upstream (keyed as `lastUser`). */
  const callsInFlight = new CallsInFlight<Connection>();
  /** The hosts connected through the HTTP listener (`connect`); the rest came over stdio. */
  const overHttp = new WeakSet<HostSession>();
  // One key for the process's task handles: each handle names its owner, which is what keeps
  // connections apart, and one key lets every stateless request of a principal open its tasks.
  const taskHandles = new TaskHandles();
  /** The connection whose host an upstream is told about when it connects: the first one set up. */
  const primary = (): Connection | undefined => firstOf(connections);
  /** The audit's `onFailure` in force: a managed edit may tighten it (or let it go back). */
  let auditMode = config.audit?.onFailure;
  const { features, policy, settingsFeatures } = buildFeatures({
    config,
    logger,
    policies: options.policies,
    askHost: (params, signal, call) => askHost(call.host ?? primary()?.router.host, params, signal, call),
    redact: (value) => redactor.redactValue(value),
    record,
    ...(audit && {
      audit: {
        log: audit,
        session,
        principal: processPrincipal,
        client: (call: RoutedMessage) => (call.host ?? primary()?.router.host)?.info,
        onFailure: () => auditMode ?? 'block',
      },
    }),
    ...(options.pins && { pins: options.pins }),
    ...(options.telemetry && {
      telemetry: {
        runtime: options.telemetry,
        protocolVersion: (message: RoutedMessage) =>
          (message.host ?? primary()?.router.host)?.protocolVersion,
        hostTransport: (message: RoutedMessage) =>
          message.host !== undefined && overHttp.has(message.host) ? 'tcp' : 'pipe',
        upstreamTransport: (server: string) => {
          const transport = serversByName.get(server)?.transport;
          return transport === undefined ? undefined : transport === 'stdio' ? 'pipe' : 'tcp';
        },
      },
    }),
  });
  const serversByName = new Map(config.servers.map((s) => [s.name, s]));
  // App-only tools are listed only to a host that runs Apps (see toolResolution.ts). The lists
  // are shared by every connection, so with several it is the first host that decides.
  const listed = withAppVisibility(
    foldVisibility(features),
    () => primary()?.router.host.declaresExtension(UI_EXTENSION) ?? false,
  );
  const definitions = loggedDefinitions(logger, record);
  // Definitions are checked against the revision the host negotiated; the lists are shared by
  // every connection, so with several it is the first host that decides, as for Apps above.
  const hostRevision = () => definitionRevision(primary()?.router.host.protocolVersion);
  let servedRevision = hostRevision();
  const served = (server: string, tools: readonly Tool[], runsTasks: boolean) =>
    definitions.tools(server, tools, (servedRevision = hostRevision()), runsTasks);
  /** Rebuilds the tool lists when a host's revision asks for other definitions than served. */
  const revisionKnown = () => {
    if (hostRevision() === servedRevision) return;
    for (const scope of allScopes()) relistScope(scope, ['tools']);
  };
  const lifecycle = features.flatMap((f) => (f.onUpstreamLifecycle ? [f.onUpstreamLifecycle] : []));
  /** The stages that record, for calls refused before the pipeline (see the router). */
  const recording = features.flatMap((f) => (f.stage?.name === 'audit' ? [f.stage.run] : []));
  // A call's record is in the audit file before its answer leaves (the writer batches per turn).
  const beforeWrite = features.flatMap((f) => (f.beforeHostWrite ? [f.beforeHostWrite] : []));
  // With an HTTP listener, isolated servers run per principal (see principalPools.ts); the
  // pool below holds only the servers every principal shares.
  const isolated = config.listen === undefined ? [] : isolatedServers(config.servers);
  /** Every configured server as the managed settings in force let it run or block it. */
  let servers = config.servers;
  let managedPolicies = config.managed?.policies ?? [];
  const pool: UpstreamPool = new UpstreamPool({
    config: isolated.length === 0 ? config : { ...config, servers: sharedServers(config) },
    ...(options.early && { early: options.early }),
    // Upstreams are shared by every host connection; they are told what the first host can do
    // (none yet when an HTTP listener starts them: then only what the config fixes).
    ...poolHooks({
      connections: () => connections,
      relist: (kinds) => {
        for (const scope of allScopes()) relistScope(scope, kinds);
      },
      principal: processPrincipal,
    }),
  });
  /**
   * What a pool's upstreams tell the gateway, delivered to `reach.connections` only: every
   * connection for the shared pool, one principal's for that principal's own processes.
   */
  function poolHooks(reach: {
    readonly view?: PrincipalView;
    readonly logger?: Logger;
    readonly connections: () => ReadonlySet<Connection>;
    readonly relist: (kinds: readonly ListKind[]) => void;
    readonly principal: Principal;
  }) {
    const first = () => firstOf(reach.connections());
    return {
      ...(options.connectUpstream && { connect: options.connectUpstream }),
      logger: reach.logger ?? logger,
      clientInfo: { name: 'mcp-warden', version: options.version },
      clientCapabilities: (server: ServerConfig) =>
        (first()?.router.host ?? NO_HOST).capabilitiesFor(server.clientRequests),
      onReady: (upstream: Upstream) => {
        for (const c of reach.connections()) c.router.upstreamReady(upstream);
      },
      prefersModern: () => first()?.router.dialect.prefersModern ?? false,
      onListsChanged: (upstream: Upstream, kinds: readonly ListKind[]) => {
        for (const feature of features) feature.onListsChanged?.(upstream, kinds);
        reach.relist(kinds);
      },
      onNotification: (upstream: Upstream, notification: JsonRpcNotification) => {
        for (const c of reach.connections()) c.router.upstreamNotification(upstream, notification);
      },
      // A server's question goes to the connection whose call caused it (questionRouting.ts).
      onRequest: (upstream: Upstream, request: IncomingRequest) => {
        const key = userKey(upstream.name, reach.view);
        const lastOrFirst = () => lastUser.get(key) ?? first();
        const to = askerOf({
          server: upstream.name,
          method: request.method,
          meta: request.meta,
          callers: callsInFlight.callers(key),
          reachable: [...reach.connections()],
          ownsTask: (c, taskId) => c.router.ownsUpstreamTask(upstream.name, taskId),
          // Without a listener there is one host; a principal's own process serves one user.
          fallback: config.listen === undefined || reach.view !== undefined ? lastOrFirst : undefined,
        });
        if (typeof to !== 'string') return to.router.upstreamRequest(upstream, request);
        if (reach.connections().size === 0)
          return request.fail({ code: -32603, message: 'no host is connected to mcp-warden' });
        (reach.logger ?? logger).warn(to);
        request.fail({ code: RpcErrorCode.InvalidRequest, message: to });
      },
      ...((audit || lifecycle.length > 0) && {
        onLifecycle: (event: UpstreamLifecycleEvent) => {
          record(event, reach.principal);
          for (const told of lifecycle) told(event);
        },
      }),
    };
  }
  /**
   * Every connection's view of the upstreams and its lists, when no server is per principal.
   * Otherwise no connection uses it (each has its principal's), and its lists hold the shared
   * servers only.
   */
  const mainScope: Scope = {
    view: pool,
    catalogs: { tools, prompts, resources },
    connections: isolated.length === 0 ? connections : new Set(),
  };
  const scopes = new WeakMap<PrincipalView, Scope>();
  const principalPools =
    isolated.length === 0
      ? undefined
      : new PrincipalPools({
          servers: config.servers,
          shared: pool,
          limits: config.listen!.perPrincipal,
          logger,
          makePool: (view) => principalPool(view),
        });
  /** The connections, view and lists of one principal (its own processes' tools among them). */
  function scopeOf(view: PrincipalView): Scope {
    let scope = scopes.get(view);
    if (scope === undefined) {
      scope = {
        view,
        catalogs: {
          tools: new NamedCatalog<Tool>('tools', config.gateway.naming, warn),
          prompts: new NamedCatalog<Prompt>('prompts', config.gateway.naming, warn),
          resources: new ResourceCatalog(warn),
        },
        connections: new Set(),
      };
      scopes.set(view, scope);
      rebuildCatalogs(scope.catalogs, view.upstreams, ALL_LISTS, { listed, served });
    }
    return scope;
  }
  function allScopes(): Scope[] {
    return [mainScope, ...(principalPools?.all.map(scopeOf) ?? [])];
  }
  function relistScope(scope: Scope, kinds: readonly ListKind[]): void {
    const changed = rebuildCatalogs(scope.catalogs, scope.view.upstreams, kinds, { listed, served });
    if (changed.length > 0) for (const c of scope.connections) c.router.listsChanged(changed);
  }
  /**
   * One principal's own processes of the isolated servers: what they send reaches only that
   * principal's connections, and their lifecycle records name that principal.
   */
  function principalPool(view: PrincipalView): UpstreamPool {
    return new UpstreamPool({
      config: { ...config, servers: isolatedServers(servers) },
      children: pool.children,
      ...poolHooks({
        view,
        logger: loggerFor(logger, view.principal),
        connections: () => scopeOf(view).connections,
        relist: (kinds) => relistScope(scopeOf(view), kinds),
        principal: view.principal,
      }),
    });
  }
  // With managed settings, their edits may change what the settings stages read: each runs the
  // stage made for the settings in force. Without them, nothing changes while serving.
  const settingsStages = stagesByName(features);
  /**
   * Set when a managed edit requires an audit trail and none was opened at start: a trail cannot
   * be opened under a running gateway, and serving unaudited calls would be the weaker state the
   * organisation forbade, so every call is refused (saying why) until a restart opens it.
   */
  let unaudited: string | undefined;
  const stages = pipelineStages(
    config.managed === undefined
      ? features
      : [
          ...swappableSettings(features, settingsStages),
          ...(audit === undefined
            ? [
                {
                  stage: {
                    name: 'audit' as const,
                    run: ((message, next) =>
                      unaudited === undefined
                        ? next(message)
                        : Promise.reject(new DeniedError(unaudited, null))) as Stage,
                  },
                },
              ]
            : []),
        ],
  );
  const observe = stageObserver(features);
  /** Why `server` is not served (blocked by managed settings, or a broken entry), if it is not. */
  const notServed = (server: ServerConfig): string | undefined =>
    server.blockedByManaged !== undefined
      ? `server "${server.name}" is blocked by managed settings: ${server.blockedByManaged}`
      : server.failedAtLoad === undefined
        ? undefined
        : `server "${server.name}" is not available, because its config entry has problems: ${server.failedAtLoad}`;
  // A host shows a server's stderr in a log few users open; the initialize answer's instructions
  // reach the host (and often the model) at once, so a server left out is not a mystery. Read from
  // the current server list, which a managed edit replaces.
  const notes = (): readonly string[] =>
    servers.flatMap((server) => {
      const why = notServed(server);
      return why === undefined ? [] : [`mcp-warden: ${why}`];
    });

  /**
   * A tool name in the namespace of a server that is not served: the error says why, so the host
   * (and the model) learn it is blocked or broken, not only that the name is unknown.
   */
  function whyUnknown(name: string): string | undefined {
    const prefix = (namespace: string) => namespace + config.gateway.naming.separator;
    const server = servers.find((s) => s.namespace !== null && name.startsWith(prefix(s.namespace)));
    return server === undefined ? undefined : notServed(server);
  }

  /** Serves one host connection: its own peer, host session and router over the shared rest. */
  function connect(
    transport: MessageTransport,
    principal: Principal,
    taskOwner?: string,
    taskMemory?: TaskMemory,
  ): Connection {
    const view = principalPools?.view(principal);
    const scope = view === undefined ? mainScope : scopeOf(view);
    if (transport instanceof StreamTransport && beforeWrite.length > 0)
      transport.beforeWrite =
        beforeWrite.length === 1 ? beforeWrite[0] : () => beforeWrite.forEach((f) => f());
    if (transport instanceof StreamTransport) {
      // Every answer larger than the pipe fills it for a moment (that is ordinary flow control),
      // so only a host that stays behind for SLOW_HOST_MS is logged, and then its catching up.
      let slow: NodeJS.Timeout | undefined;
      let warned = false;
      transport.onBackpressure = (congested) => {
        for (const upstream of scope.view.upstreams) upstream.setReading(!congested);
        if (congested) {
          slow = setTimeout(() => {
            warned = true;
            logger.warn(
              'the host is not reading what mcp-warden writes; reading from upstreams is paused until it does',
            );
          }, SLOW_HOST_MS).unref();
          return;
        }
        clearTimeout(slow);
        if (!warned) return;
        warned = false;
        logger.warn('the host reads again; reading from upstreams resumes');
      };
    }
    const forward = createForward({
      upstream: (server) => scope.view.byName.get(server),
      host: {
        requestOutcome: (method, params, options, origin) => router.host.ask(method, params, options, origin),
      },
      fulfilInput: (message, outcome, retry) =>
        fulfilInput({
          message,
          outcome,
          retry,
          ask: (method, params) => router.askHostFor(message.server, method, params, message.signal),
        }),
      answerLocally: (message) => fixedRoots(message, serversByName),
    });
    const shared = compose(
      stages,
      observe === undefined
        ? forward
        : (message) => {
            observe('forward', message);
            return forward(message);
          },
    );
    const router: Router = connectHost({
      host: transport,
      ...scope.catalogs,
      pool: scope.view,
      pipeline: (message) => {
        const answer = view === undefined ? shared(message) : view.run(message.server, () => shared(message));
        if (message.direction !== 'upstream') return answer;
        const key = userKey(message.server, view);
        lastUser.set(key, connection);
        return callsInFlight.track(key, connection, answer);
      },
      // What the gateway answers itself (a call refused at the edge, a host's answers to a task's
      // questions) is recorded, and nothing else: no other stage may judge it.
      record: (message, answer) => compose(recording, answer)(message),
      logger,
      serverInfo: { name: 'mcp-warden', version: options.version },
      notes,
      // Task handles are sealed to their owner: another host cannot read or cancel them.
      ...(taskOwner !== undefined && { taskOwner }),
      ...(taskMemory !== undefined && { taskMemory }),
      taskHandles,
      principal,
      revisionKnown,
      whyUnknown,
      // Behind the listener, a server not run per principal is everyone's: tasks stay apart.
      ...(config.listen !== undefined && {
        sharedServer: (server: string) => view === undefined || !view.ownsServer(server),
      }),
    });
    const connection: Connection = {
      router,
      transport,
      principal,
      beforeWrite: () => beforeWrite.forEach((f) => f()),
      continuesCall: (requestState) => router.continuesCall(requestState),
      retryWindowMs: () => router.retryWindowMs(),
      toolInputSchema: (name) => router.toolInputSchema(name),
      async close() {
        if (!connections.delete(connection)) return;
        if (scope !== mainScope && scope.connections.delete(connection) && view !== undefined)
          view.connections--;
        for (const [key, user] of lastUser) if (user === connection) lastUser.delete(key);
        await router.drain();
        await transport.close();
      },
    };
    connections.add(connection);
    if (scope !== mainScope && view !== undefined) {
      scope.connections.add(connection);
      view.connections++;
    }
    return connection;
  }

  /**
   * The gateway's own questions to the user (confirmations) go to the host as elicitation: a
   * request of its own to a legacy host, an InputRequiredResult of the call to a modern one.
   */
  function askHost(
    host: HostSession | undefined,
    params: Params,
    signal: CancelSignal,
    call: RoutedMessage,
  ): Promise<HostAnswer> | undefined {
    const origin = { hostRequest: call.signal };
    if (host === undefined || !host.can('elicitation', origin)) return undefined;
    return host.ask('elicitation/create', params, { signal }, origin).then(
      (outcome): HostAnswer => ({ result: outcome.result }),
      (error: unknown): HostAnswer =>
        error instanceof MalformedAnswerError
          ? { malformed: `${error.what} result` }
          : { error: errorObject(error) },
    );
  }

  const relist = () => {
    for (const scope of allScopes()) relistScope(scope, ALL_LISTS);
  };
  const watchers = features.flatMap((f) =>
    f.watch ? [f.watch({ upstreams: () => pool.upstreams, relist })] : [],
  );
  if (host !== undefined) connect(host, processPrincipal, session);

  let closing: Promise<void> | undefined;
  return {
    pool,
    tools,
    connect: (transport, principal, connectOptions) => {
      const connection = connect(transport, principal, connectOptions?.taskOwner, connectOptions?.taskMemory);
      overHttp.add(connection.router.host);
      return connection;
    },
    async start() {
      if (audit) {
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
        for (const feature of features) feature.started?.();
      }
      await host?.start();
    },
    close(reason = 'closed') {
      closing ??= (async () => {
        // Calls about to finish get a moment; then stopping the upstreams fails the rest at
        // once, which the router answers, so every request still gets a response.
        for (const watcher of watchers) watcher.close();
        const open = [...connections];
        const drained = Promise.all(open.map((c) => c.router.drain()));
        await Promise.race([drained, delay(options.shutdownGraceMs ?? 500)]);
        await Promise.all([pool.stop(), principalPools?.stop()]);
        await drained;
        if (audit) {
          record({ type: 'gateway_stop', reason, uptimeMs: Date.now() - startedAt });
          audit.close();
        }
        connections.clear();
        await Promise.all(open.map((c) => c.transport.close()));
      })();
      return closing;
    },
    killChildrenNow: () => pool.killAllNow(),
    async applyManaged(next) {
      // The policies first: a server this change lets run must not serve before their rules rule.
      if (JSON.stringify(next.policies) !== JSON.stringify(managedPolicies)) {
        await policy.retarget(next.policies);
        managedPolicies = next.policies;
      }
      const before = new Map(servers.map((s) => [s.name, s.blockedByManaged]));
      const changed = next.servers.filter(
        (s) => before.has(s.name) && before.get(s.name) !== s.blockedByManaged,
      );
      servers = next.servers;
      if (next.settings !== undefined) {
        settingsStages.clear();
        for (const [name, run] of stagesByName(settingsFeatures(next.settings)))
          settingsStages.set(name, run);
        auditMode = next.settings.audit?.onFailure ?? auditMode;
        unaudited =
          audit === undefined && next.settings.audit !== undefined
            ? `Calls are refused: the organisation's managed settings (${config.managed?.file ?? 'managed.yaml'}) now require an audit trail, which mcp-warden opens only when it starts. Restart mcp-warden (or the host) to go on.`
            : undefined;
      }
      // A gateway shutting down starts nothing more.
      if (changed.length === 0 || closing !== undefined) return;
      const stopping: Promise<void>[] = [];
      for (const server of changed) {
        const blocked = server.blockedByManaged;
        if (blocked !== undefined) {
          logger.error(
            `server "${server.name}" is stopped, it is now blocked by managed settings: ${blocked}`,
          );
          if (config.managed !== undefined)
            record({
              type: 'server_blocked',
              server: server.name,
              reason: blocked,
              managed: config.managed.file,
            });
        } else logger.info(`server "${server.name}" is now allowed by managed settings; starting it`);
        if (pool.byName.has(server.name))
          stopping.push(
            pool.replace(
              server,
              blocked === undefined
                ? 'the managed settings changed'
                : `it is now blocked by managed settings: ${blocked}`,
            ),
          );
      }
      // The swap is done (the old upstreams are only stopping): the hosts' lists lose their items now.
      principalPools?.reset(servers);
      relist();
      await Promise.all(stopping);
    },
  };
}

/**
 * What the connections of one principal share: their view of the upstreams (with their own
 * processes when hosts connect over HTTP) and the lists made from it.
 */
interface Scope {
  readonly view: PoolView;
  readonly catalogs: {
    readonly tools: NamedCatalog<Tool>;
    readonly prompts: NamedCatalog<Prompt>;
    readonly resources: ResourceCatalog;
  };
  readonly connections: Set<Connection>;
}

/** The first of a set of connections that has initialized, else the first. */
function firstOf(connections: ReadonlySet<Connection>): Connection | undefined {
  for (const c of connections) if (c.router.host.protocolVersion !== undefined) return c;
  return connections.values().next().value;
}

/** One host connection the gateway serves (see `Gateway.connect`). */
export interface Connection {
  readonly router: Router;
  readonly transport: MessageTransport;
  readonly principal: Principal;
  /** Flushes what must be written before an answer leaves (the audit records of this turn). */
  readonly beforeWrite: () => void;
  /** Whether `requestState` continues one of this connection's calls waiting for a host's retry. */
  continuesCall(requestState: unknown): boolean;
  /** How long this connection still waits for a host's retry, or undefined if it does not. */
  retryWindowMs(): number | undefined;
  /** The `inputSchema` of a tool this connection lists under `name` (its mirrored arguments). */
  toolInputSchema(name: string): unknown;
  /** Stops taking requests, waits for those in flight, closes the transport. */
  close(): Promise<void>;
}

/** The host session of nobody: what upstreams are told when no host has connected yet. */
const NO_HOST: Pick<HostSession, 'capabilitiesFor'> = new InitializedHostSession(undefined as never);

/** The JSON-RPC error object of a failed question to the host. */
function errorObject(error: unknown): JsonRpcErrorObject {
  if (error instanceof PeerRpcError)
    return {
      code: error.rpcCode,
      message: error.message,
      ...(error.data !== undefined && { data: error.data }),
    };
  return { code: -32603, message: error instanceof Error ? error.message : String(error) };
}

/** What a reload may change: every list the host sees. */
const ALL_LISTS = ['tools', 'prompts', 'resources', 'resourceTemplates'] as const;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
