import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import { rebuildCatalogs } from './core/catalog/catalogs.js';
import { NamedCatalog } from './core/catalog/namedCatalog.js';
import { ResourceCatalog } from './core/catalog/resourceCatalog.js';
import { HostRequester } from './core/hostRequester.js';
import type { WardenConfig } from './config/types.js';
import type { Logger } from './core/logger.js';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { AuditLog } from './features/audit/auditWriter.js';
import type { LifecycleEvent } from './core/events.js';
import { sha256Hex } from './lib/hash.js';
import type { Redactor } from './features/audit/redact.js';
import { hiddenByPolicy } from './features/policy/visibility.js';
import { createAuditInterceptor, type AuditInterceptorOptions } from './features/audit/stage.js';
import { createConcurrencyLimitInterceptor } from './features/limits/stage.js';
import { createConfirmationInterceptor, type ConfirmationOptions } from './features/confirmation/stage.js';
import { createPinInterceptor } from './features/pins/stage.js';
import { createPolicyInterceptor } from './features/policy/stage.js';
import { PinGuard } from './features/pins/pinGuard.js';
import { readPinFile, type PinSet } from './features/pins/pinFile.js';
import { watchFiles } from './lib/watchFiles.js';
import { createPolicyEngine, type PolicyEngine, type PolicySet } from './features/policy/index.js';
import { watchPolicies } from './features/policy/policyWatcher.js';
import { createResultRepairInterceptor } from './features/repair/stage.js';
import { createTimeoutInterceptor, timeoutLimitsFromConfig } from './features/timeout/stage.js';
import { compose } from './core/pipeline/compose.js';
import { orderStages } from './core/pipeline/order.js';
import { createOutputValidator } from './features/repair/outputSchemaValidator.js';
import { createForwardCall } from './core/pipeline/forwardCall.js';
import type { Interceptor } from './core/pipeline/types.js';
import { Router } from './core/router.js';
import type { MessageTransport } from './core/transports/streamTransport.js';
import type { UpstreamLifecycleEvent } from './core/upstreams/upstream.js';
import type { EarlyStart } from './core/upstreams/earlySpawn.js';
import { UpstreamPool } from './core/upstreams/upstreamPool.js';

export interface GatewayOptions {
  readonly config: WardenConfig;
  readonly logger: Logger;
  /** The host connection (stdin/stdout in production, in-memory in tests). */
  readonly host: MessageTransport;
  readonly version: string;
  /** The policies loaded at start (an invalid set never gets this far). */
  readonly policies: PolicySet;
  /** Redacts what the gateway shows or records (confirmation questions, audit records). */
  readonly redactor: Redactor;
  /** The audit trail, opened by the caller when the config has `audit:`. */
  readonly audit?: AuditLog;
  /**
   * On close, how long calls in flight may take to finish on their own before their upstreams
   * are stopped (which fails them). Shutdown must end within 2 s (issue 2). Default 500 ms.
   */
  readonly shutdownGraceMs?: number;
  /** Upstream processes already spawned for this config (`spawnEarly`), to be taken over. */
  readonly early?: EarlyStart;
  /**
   * The pins file as read at start, when the config has `pins:` (the CLI refuses to start with
   * an invalid one). Absent: the gateway reads it itself.
   */
  readonly pins?: { readonly pins: PinSet; readonly text: string | undefined };
}

export interface Gateway {
  readonly pool: UpstreamPool;
  readonly tools: NamedCatalog<Tool>;
  start(): Promise<void>;
  /** Answers or fails what is in flight, stops every upstream, flushes the host connection. */
  close(reason?: string): Promise<void>;
  /** Synchronous last resort: kill every child process group now. */
  killChildrenNow(): void;
}

/** What the pipeline's stages need from the gateway around them. */
export interface PipelineDependencies {
  readonly config: WardenConfig;
  readonly logger: Logger;
  /** The policy engine in force (policies are reloaded while serving). */
  readonly engine: () => PolicyEngine;
  /** Asks the host through elicitation; undefined when it cannot. */
  readonly askHost: ConfirmationOptions['askHost'];
  readonly redact: (value: unknown) => unknown;
  /** Present when the config has `audit:`. */
  readonly audit?: Omit<AuditInterceptorOptions, 'logger'>;
  /** Present when the config has `pins:`: the guard that knows which tools are blocked. */
  readonly pins?: PinGuard;
}

/**
 * The call pipeline's stages for this config, in the order `orderStages` fixes (see
 * src/pipeline/order.ts for why each sits where it does). Audit only when `audit:` is set.
 */
export function buildPipelineStages(deps: PipelineDependencies): Interceptor[] {
  const { config, logger } = deps;
  const repairs = new Map(config.servers.map((s) => [s.name, s.repair]));
  const trusted = new Map(config.servers.map((s) => [s.name, s.trusted]));
  return orderStages({
    ...(deps.audit && { audit: createAuditInterceptor({ ...deps.audit, logger }) }),
    ...(deps.pins && { pins: createPinInterceptor({ refusal: deps.pins.refusal.bind(deps.pins) }) }),
    policy: createPolicyInterceptor({
      engine: deps.engine,
      trusted: (server) => trusted.get(server) ?? false,
    }),
    confirmation: createConfirmationInterceptor({
      config: config.confirmation,
      askHost: deps.askHost,
      redact: deps.redact,
      logger,
    }),
    timeout: createTimeoutInterceptor({ limitsFor: timeoutLimitsFromConfig(config) }),
    resultRepair: createResultRepairInterceptor({
      repairFor: (server) => repairs.get(server) ?? config.gateway.repair,
      validator: createOutputValidator(),
      logger,
    }),
    concurrencyLimit: createConcurrencyLimitInterceptor({ servers: config.servers }),
  });
}

export function createGateway(options: GatewayOptions): Gateway {
  const { config, logger, host } = options;
  const warn = (warning: string) => logger.warn(warning);
  const tools = new NamedCatalog<Tool>('tools', config.gateway.naming, warn);
  const prompts = new NamedCatalog<Prompt>('prompts', config.gateway.naming, warn);
  const resources = new ResourceCatalog(warn);
  const hostRequests = new HostRequester(host);
  const { audit } = options;
  // A call's record is in the audit file before its answer leaves (the writer batches per turn).
  if (audit !== undefined) host.beforeWrite = () => audit.flush();
  /** One id per gateway process: every audit record of this session carries it. */
  const session = randomUUID();
  const startedAt = Date.now();
  /**
   * Lifecycle records never stop the gateway: in `block` mode the audit stage refuses calls,
   * but a start, exit or reload must still happen (the writer reports the failure itself).
   */
  const record = (event: LifecycleEvent): void => {
    try {
      audit?.append(event);
    } catch {
      // Already reported through the audit log's onStatus; calls are refused by the audit stage.
    }
  };
  let engine = createPolicyEngine(options.policies);
  const pins =
    config.pins &&
    new PinGuard({
      settings: config.pins,
      configFile: config.file,
      servers: config.servers,
      initial: options.pins ?? readPinFile(config.pins.file),
      logger,
      record: (event) => record({ ...event, session }),
    });
  const hiddenForPolicy = hiddenByPolicy(() => engine, config.servers);
  // A tool blocked by its pin is left out of the list like one the policy always denies.
  const hidden =
    pins === undefined
      ? hiddenForPolicy
      : (server: string, tool: Tool) => pins.isBlocked(server, tool.name) || hiddenForPolicy(server, tool);
  const { redactor } = options;
  const pool: UpstreamPool = new UpstreamPool({
    config,
    ...(options.early && { early: options.early }),
    logger,
    clientInfo: { name: 'mcp-warden', version: options.version },
    // The callbacks run only once upstreams start, which is after `router` below exists.
    clientCapabilities: () => router.clientCapabilitiesForUpstreams(),
    onReady: (upstream) => router.upstreamReady(upstream),
    onListsChanged: (upstream, kinds) => {
      // Before the catalog is rebuilt, so a changed tool is never listed, not even for a moment.
      if (pins !== undefined && kinds.includes('tools')) pins.review(upstream);
      const changed = rebuildCatalogs({ tools, prompts, resources }, pool.upstreams, kinds, { hidden });
      if (changed.length > 0) router.listsChanged(changed);
    },
    onNotification: (upstream, notification) => router.upstreamNotification(upstream, notification),
    onRequest: (upstream, request) => router.upstreamRequest(upstream, request),
    ...(audit && { onLifecycle: (event: UpstreamLifecycleEvent) => record({ ...event, session }) }),
  });
  const stages = buildPipelineStages({
    config,
    logger,
    engine: () => engine,
    askHost: (params, signal) => router.askHost(params, signal),
    redact: (value) => redactor.redactValue(value),
    ...(pins && { pins }),
    ...(audit &&
      config.audit && {
        audit: { log: audit, config: config.audit, session, client: () => router.hostInfo },
      }),
  });
  const callTool = compose(stages, createForwardCall({ upstreams: pool.byName }));
  const watcher =
    config.policies.length === 0
      ? undefined
      : watchPolicies({
          files: config.policies,
          onReload: (next, set, version) => {
            engine = next;
            recordPolicies(set);
            logger.info(`policies reloaded from ${config.policies.join(', ')}; in force: ${version}`);
            const changed = rebuildCatalogs({ tools }, pool.upstreams, ['tools'], { hidden });
            if (changed.length > 0) router.listsChanged(changed);
          },
          onReject: (message) => {
            logger.error(`a policy change was rejected; the previous policies stay in force:\n${message}`);
            record({
              type: 'policy_reject',
              session,
              file: config.policies.join(', '),
              error: message,
            });
          },
        });
  const pinsWatcher =
    pins &&
    config.pins &&
    watchPinsFile(config.pins.file, {
      // An accepted (or edited) pin: review every upstream's tools again; a tool that matches
      // its pin now is listed again, and the host is told the list changed.
      onChange: () => {
        if (!pins.reload()) return;
        for (const upstream of pool.upstreams) pins.review(upstream);
        const changed = rebuildCatalogs({ tools }, pool.upstreams, ['tools'], { hidden });
        if (changed.length > 0) router.listsChanged(changed);
      },
      onError: (message) => logger.error(message),
    });
  const router = new Router({
    host,
    tools,
    prompts,
    resources,
    pool,
    hostRequests,
    callTool,
    requestTimeoutMs: config.gateway.callTimeoutMs,
    logger,
    serverInfo: { name: 'mcp-warden', version: options.version },
  });

  function recordPolicies(set: PolicySet): void {
    for (const file of set.files)
      record({
        type: 'policy_load',
        session,
        file: file.file,
        sha256: file.sha256,
        rules: file.rules.length,
      });
  }

  let closing: Promise<void> | undefined;
  return {
    pool,
    tools,
    async start() {
      if (audit) {
        record({
          type: 'gateway_start',
          session,
          version: options.version,
          pid: process.pid,
          config: config.file,
        });
        record({
          type: 'config_load',
          session,
          file: config.file,
          sha256: fileSha256(config.file),
          servers: config.servers.map((s) => s.name),
        });
        recordPolicies(options.policies);
      }
      router.start();
      await host.start();
    },
    close(reason = 'closed') {
      closing ??= (async () => {
        // Calls about to finish get a moment; then stopping the upstreams fails the rest at
        // once, which the router answers, so every request still gets a response.
        watcher?.close();
        pinsWatcher?.close();
        const drained = router.drain();
        await Promise.race([drained, delay(options.shutdownGraceMs ?? 500)]);
        await pool.stop();
        await drained;
        if (audit) {
          record({ type: 'gateway_stop', session, reason, uptimeMs: Date.now() - startedAt });
          audit.close();
        }
        await host.close();
      })();
      return closing;
    },
    killChildrenNow: () => pool.killAllNow(),
  };
}

/** The content hash of a config or policy file, so the trail shows exactly which version ruled. */
function fileSha256(file: string): string {
  try {
    return sha256Hex(readFileSync(file, 'utf8'));
  } catch {
    return 'unreadable';
  }
}

/**
 * Watches the pins file for acceptances made while serving (`mcp-warden pins accept`). Its folder
 * is created first: the file itself appears only when the first pin is written, and a folder
 * that does not exist cannot be watched.
 */
function watchPinsFile(file: string, handlers: { onChange: () => void; onError: (message: string) => void }) {
  try {
    mkdirSync(path.dirname(file), { recursive: true });
  } catch {
    // Watching reports it.
  }
  return watchFiles({ files: [file], what: 'pins file changes', ...handlers });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
