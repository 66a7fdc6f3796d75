import { catalogSources, ToolCatalog } from './catalog/toolCatalog.js';
import type { WardenConfig } from './config/types.js';
import type { Logger } from './logging/logger.js';
import { createConcurrencyLimitInterceptor } from './interceptors/concurrencyLimit.js';
import { createResultRepairInterceptor } from './interceptors/resultRepair.js';
import { createTimeoutInterceptor, timeoutLimitsFromConfig } from './interceptors/timeout.js';
import { compose } from './pipeline/compose.js';
import { orderStages } from './pipeline/order.js';
import { createOutputValidator } from './repairs/outputSchemaValidator.js';
import { createForwardCall } from './pipeline/forwardCall.js';
import type { Interceptor } from './pipeline/types.js';
import { Router } from './router.js';
import type { MessageTransport } from './transports/streamTransport.js';
import { UpstreamPool } from './upstreams/upstreamPool.js';

export interface GatewayOptions {
  readonly config: WardenConfig;
  readonly logger: Logger;
  /** The host connection (stdin/stdout in production, in-memory in tests). */
  readonly host: MessageTransport;
  readonly version: string;
  /**
   * On close, how long calls in flight may take to finish on their own before their upstreams
   * are stopped (which fails them). Shutdown must end within 2 s (issue 2). Default 500 ms.
   */
  readonly shutdownGraceMs?: number;
}

export interface Gateway {
  readonly pool: UpstreamPool;
  readonly catalog: ToolCatalog;
  start(): Promise<void>;
  /** Answers or fails what is in flight, stops every upstream, flushes the host connection. */
  close(): Promise<void>;
  /** Synchronous last resort: kill every child process group now. */
  killChildrenNow(): void;
}

/**
 * The call pipeline's stages for this config, in the order `orderStages` fixes. Audit, policy
 * and confirmation land with issues #6 and #5.
 */
export function buildPipelineStages(config: WardenConfig, logger: Logger): Interceptor[] {
  const repairs = new Map(config.servers.map((s) => [s.name, s.repair]));
  return orderStages({
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
  const catalog = new ToolCatalog(config.gateway.naming, (warning) => logger.warn(warning));
  const pool: UpstreamPool = new UpstreamPool({
    config,
    logger,
    clientInfo: { name: 'mcp-warden', version: options.version },
    onToolsChanged: () => {
      const changed = catalog.rebuild(catalogSources(pool.upstreams));
      // Only called once upstreams start, which is after `router` below exists.
      if (changed) router.toolsChanged();
    },
  });
  const callTool = compose(
    buildPipelineStages(config, logger),
    createForwardCall({ upstreams: pool.byName }),
  );
  const router = new Router({
    host,
    catalog,
    pool,
    callTool,
    logger,
    serverInfo: { name: 'mcp-warden', version: options.version },
  });

  let closing: Promise<void> | undefined;
  return {
    pool,
    catalog,
    async start() {
      router.start();
      await host.start();
    },
    close() {
      closing ??= (async () => {
        // Calls about to finish get a moment; then stopping the upstreams fails the rest at
        // once, which the router answers, so every request still gets a response.
        const drained = router.drain();
        await Promise.race([drained, delay(options.shutdownGraceMs ?? 500)]);
        await pool.stop();
        await drained;
        await host.close();
      })();
      return closing;
    },
    killChildrenNow: () => pool.killAllNow(),
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
