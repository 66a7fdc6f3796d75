/**
 * Definition repair, served in-process (test/inprocess/served.ts, the fixture servers as real
 * processes): a server whose tool definitions a strict SDK host rejects. Direct, the SDK
 * Client's listTools throws for that server; through the gateway it succeeds, the repairable
 * definitions are served repaired, the unrepairable one is left out with a warning, and the
 * other server's tools are all there. What `mcp-warden tools` shows of the repairs is in
 * test/integration/definitionRepair.test.ts.
 */
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ModernHost } from '../fixtures/modernHost.js';
import { startServedModern } from './servedModern.js';
import { modernResult } from '../integration/modernWire.js';
import {
  FAST_GATEWAY,
  fixture,
  FIXTURE,
  NODE,
  readAudit,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

async function direct(args: string[]): Promise<Client> {
  const client = new Client({ name: 'direct-host', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: NODE, args: [FIXTURE, ...args], stderr: 'pipe' }));
  return client;
}

describe('definition repair', () => {
  let host: HostSession;
  let config: string;
  let auditFile: string;

  beforeAll(async () => {
    const dir = tempDir();
    auditFile = path.join(dir, 'audit.jsonl');
    config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        servers: { good: fixture(), bad: fixture(['--tools', 'badschema']) },
      },
      dir,
    );
    host = await shared.connect(config);
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('direct, the SDK Client cannot list the bad server at all', async () => {
    const client = await direct(['--tools', 'badschema']);
    try {
      await expect(client.listTools()).rejects.toThrow();
    } finally {
      await client.close();
    }
  });

  it('through the gateway the list parses, with every tool of the good server', async () => {
    const good = await direct([]);
    const goodNames = (await good.listTools()).tools.map((t) => `good__${t.name}`);
    await good.close();
    const { tools } = await host.client.listTools();
    const names = tools.map((t) => t.name);
    expect(goodNames.length).toBeGreaterThan(0);
    for (const name of goodNames) expect(names).toContain(name);
    const bool = tools.find((t) => t.name === 'bad__bool_subschema');
    expect(bool?.outputSchema?.properties).toEqual({ v: {}, never: { not: {} } });
    const noType = tools.find((t) => t.name === 'bad__no_type_input');
    expect(noType?.inputSchema).toEqual({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    expect(names).not.toContain('bad__string_input');
    await host.waitForStderr(/server "bad": tool "string_input" is left out: .*inputSchema\.type/);
  });

  it('the repaired tools work, and the host checks results against the repaired schema', async () => {
    const structured = await host.client.callTool({ name: 'bad__bool_subschema', arguments: {} });
    expect(structured.structuredContent).toEqual({ v: 1 });
    const echoed = await host.client.callTool({ name: 'bad__no_type_input', arguments: { text: 'hi' } });
    expect(textOf(echoed)).toBe('hi');
  });

  it('each repair is in the audit trail as tool_repaired', async () => {
    await host.client.listTools();
    const repaired = readAudit(auditFile).filter((r) => r.type === 'tool_repaired');
    expect(repaired.map((r) => [r.server, r.upstreamTool])).toEqual([
      ['bad', 'bool_subschema'],
      ['bad', 'no_type_input'],
    ]);
    expect(repaired[0]!.repairs).toEqual([
      'outputSchema.properties.v: true became {}',
      'outputSchema.properties.never: false became {"not":{}}',
    ]);
    expect(repaired[1]!.repairs).toEqual(['inputSchema.type: missing, set to "object"']);
  });
});

describe('definitions checked against the host’s revision', () => {
  let modern: ModernHost | undefined;
  afterEach(async () => {
    await modern?.close();
    modern = undefined;
  });

  it('a 2026-07-28 host is served boolean subschemas as the server sent them; the rest as before', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { good: fixture(), bad: fixture(['--tools', 'badschema']) },
    });
    modern = await startServedModern(config);
    const result = modernResult('tools/list', await modern.request('tools/list'));
    const tools = result.tools as Tool[];
    const names = tools.map((t) => t.name);
    // Its schema takes any JSON value as a property's schema: nothing to repair.
    expect(tools.find((t) => t.name === 'bad__bool_subschema')?.outputSchema?.properties).toEqual({
      v: true,
      never: false,
    });
    // An inputSchema is still an object schema in that revision.
    expect(tools.find((t) => t.name === 'bad__no_type_input')?.inputSchema.type).toBe('object');
    expect(names).not.toContain('bad__string_input');
    expect(names).toContain('good__echo');
  });
});
