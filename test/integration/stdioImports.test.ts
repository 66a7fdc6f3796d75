/**
 * A gateway served over stdio loads none of the HTTP listener's code (its web framework, the
 * token library, the SDK's server transport): they cost start-up time and memory that only
 * `--http` needs. Nor, while its servers send ordinary tool definitions, the SDK's zod schemas,
 * which only an unusual definition needs.
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
  tempDir,
  writeConfig,
  type HostSession,
} from './harness.js';

const RECORDER = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/recordImports.mjs');

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

describe('a stdio gateway', () => {
  it('loads no module of the HTTP listener, nor zod, nor the sandbox runtime', async () => {
    const dir = tempDir();
    const imports = path.join(dir, 'imports.txt');
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }, dir);
    host = await connectHost(config, {
      env: { NODE_OPTIONS: `--import ${RECORDER}`, WARDEN_IMPORTS_FILE: imports },
    });
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'x' } });
    await host.close();
    host = undefined;
    const loaded = readFileSync(imports, 'utf8');
    const own = ownModulesLoaded(loaded);
    expect(own).toContain('dist/gateway/gateway.js');
    expect(own.filter((module) => module.startsWith('dist/http/'))).toEqual([]);
    // Nor, without a sandboxed server, the sandbox runtime (it starts proxies and brings its own dependencies).
    expect(own).not.toContain('dist/features/sandbox/runtime.js');
    for (const module of [
      '/node_modules/jose/',
      '/node_modules/hono/',
      '/node_modules/@hono/',
      '/node_modules/zod/',
      '/node_modules/@anthropic-ai/sandbox-runtime/',
      '/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js',
    ])
      expect(loaded).not.toContain(module);
  });
});
