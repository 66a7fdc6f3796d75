/**
 * The gateway between protocol eras, through the built binary: what its own `mcp-warden tools`
 * shows of each server's era, and a modern-only Streamable HTTP upstream end to end. Every other
 * scenario between eras runs in-process, in test/inprocess/eras.test.ts.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MODERN } from '../fixtures/modernHost.js';
import { startModernHttpFixture } from '../fixtures/modern-http-server.mjs';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  NODE,
  ROOT,
  runCli,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';

const MODERN_SERVER = path.join(ROOT, 'test/fixtures/modern-server.mjs');

function modernServer(args: string[] = []): Record<string, unknown> {
  return { command: NODE, args: [MODERN_SERVER, ...args] };
}

let legacy: HostSession | undefined;
afterEach(async () => {
  await legacy?.close();
  legacy = undefined;
});

describe('a legacy host, a modern-only upstream', () => {
  it('mcp-warden tools shows each server’s era and version', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { m: modernServer(), up: fixture() } });
    const { stdout } = await runCli(['tools', '--config', config]);
    expect(stdout).toMatch(
      /^server m: ready, \d+ tools, modern-fixture 2\.0\.0, MCP 2026-07-28 \(modern\)$/m,
    );
    expect(stdout).toMatch(/^server up: ready, \d+ tools, fixture 1\.0\.0, MCP 2025-11-25 \(legacy\)$/m);
    const json = JSON.parse((await runCli(['tools', '--json', '--config', config])).stdout) as {
      servers: { name: string; era?: string; protocolVersion?: string }[];
    };
    expect(json.servers).toContainEqual(
      expect.objectContaining({ name: 'm', era: 'modern', protocolVersion: MODERN }),
    );
  });
});

describe('a modern-only Streamable HTTP upstream', () => {
  it('is probed with server/discover first and spoken to in the 2026-07-28 binding', async () => {
    const server = await startModernHttpFixture();
    try {
      const config = writeConfig({
        gateway: FAST_GATEWAY,
        servers: { h: { url: `http://127.0.0.1:${server.port}/mcp` } },
      });
      const host = (legacy = await connectHost(config));
      expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('h__echo');
      const result = await host.client.callTool({ name: 'h__echo', arguments: { text: 'over http' } });
      expect(textOf(result)).toBe('echo: over http');
      // No initialize: the probe answered, and every request carried the binding's headers.
      expect(server.seen[0]).toMatchObject({ method: 'server/discover', version: MODERN });
      expect(server.seen.map((r) => r.method)).not.toContain('initialize');
      for (const request of server.seen)
        expect(request).toMatchObject({ version: MODERN, mcpMethod: request.method });
      expect(server.seen.find((r) => r.method === 'tools/call')?.mcpName).toBe('echo');
      const { stdout } = await runCli(['tools', '--config', config]);
      expect(stdout).toMatch(
        /^server h: ready, 2 tools, modern-http-fixture 3\.0\.0, MCP 2026-07-28 \(modern\)$/m,
      );
    } finally {
      await legacy?.close();
      legacy = undefined;
      await server.close();
    }
  });
});
