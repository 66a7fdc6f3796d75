/**
 * `startServing` loads the gateway's modules on demand, as the binary does. In the test process
 * each of them is transformed from TypeScript the first time a worker meets it, which on a busy
 * machine costs the first scenario of a file more than a test's time limit. Loading them in a
 * hook of its own, with a limit of its own, keeps that cost out of what the scenarios measure.
 * The workers share one module graph (`isolate: false`), so only the first file pays.
 */
import { beforeAll } from 'vitest';

/** Loads what serving a config (over stdio or HTTP) loads, before the file's first scenario. */
export function loadServingModulesFirst(): void {
  beforeAll(async () => {
    await Promise.all([
      import('../../src/commands/serve.js'),
      import('../../src/commands/configReload.js'),
      import('../../src/config/load.js'),
      import('../../src/config/yamlSource.js'),
      import('../../src/config/team.js'),
      import('../../src/core/upstreams/earlySpawn.js'),
      import('../../src/core/upstreams/principalPools.js'),
      import('../../src/core/transports/streamTransport.js'),
      import('../../src/features/audit/openTrail.js'),
      import('../../src/features/policy/loadPolicies.js'),
      import('../../src/gateway/gateway.js'),
      import('../../src/gateway/liveState.js'),
      import('../../src/http/serveHttp.js'),
    ]);
  }, 180_000);
}
