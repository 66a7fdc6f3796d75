/**
 * Telemetry through the built binary: what needs the gateway's own process, the exit code when
 * the OTLP protocol asked for is refused at start, and which modules it loads with telemetry off
 * and on. Traces and metrics themselves run in-process in test/inprocess/telemetry.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  ownModulesLoaded,
  runCli,
  tempDir,
  writeConfig,
  type HostSession,
} from './harness.js';

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

describe('traces', () => {
  it('gRPC is refused at start with what to use instead', async () => {
    const config = writeConfig(
      { gateway: FAST_GATEWAY, telemetry: { traces: true }, servers: { up: fixture() } },
      tempDir(),
    );
    const run = await runCli(['--config', config], { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported');
    expect(run.stderr).toContain('http/protobuf');
  });
});

describe('with telemetry off', () => {
  const RECORDER = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/recordImports.mjs');

  /** The modules a gateway resolved while serving one call. */
  async function importsWhileServing(telemetry: object | undefined): Promise<string> {
    const dir = tempDir();
    const imports = path.join(dir, 'imports.txt');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, ...(telemetry && { telemetry }), servers: { up: fixture() } },
      dir,
    );
    host = await connectHost(config, {
      env: {
        NODE_OPTIONS: `--import ${RECORDER}`,
        WARDEN_IMPORTS_FILE: imports,
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    });
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'x' } });
    await host.close();
    host = undefined;
    return readFileSync(imports, 'utf8');
  }

  it('loads no OpenTelemetry module at all (and with it on, it does)', async () => {
    const off = await importsWhileServing(undefined);
    expect(ownModulesLoaded(off)).toContain('dist/gateway/gateway.js');
    expect(off).not.toContain('@opentelemetry');
    // A section with every signal off loads nothing either.
    expect(await importsWhileServing({ traces: false, metrics: false })).not.toContain('@opentelemetry');
    const on = await importsWhileServing({ traces: true });
    expect(on).toContain('@opentelemetry/sdk-trace-base');
    expect(on).toContain('@opentelemetry/exporter-trace-otlp-proto');
    // Only the chosen encoding's exporter is loaded.
    expect(on).not.toContain('@opentelemetry/exporter-trace-otlp-http');
  });
});
