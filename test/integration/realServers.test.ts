/**
 * The gateway in front of the official reference servers, with the SDK Client as host: what a
 * user sees after putting mcp-warden into Claude Desktop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EmptyResultSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { connectHost, NODE, serverBin, tempDir, writeConfig, type HostSession } from './harness.js';

describe('gateway in front of the reference servers', () => {
  let host: HostSession;
  let dataDir: string;

  beforeAll(async () => {
    const dir = tempDir();
    dataDir = path.join(dir, 'data');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'hello.txt'), 'hello from the filesystem server\n');
    const config = writeConfig(
      {
        mcpServers: {
          everything: { command: NODE, args: [serverBin('everything')] },
          memory: {
            command: NODE,
            args: [serverBin('memory')],
            env: { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') },
          },
          fs: { command: NODE, args: [serverBin('filesystem'), dataDir] },
        },
      },
      dir,
    );
    host = await connectHost(config);
  });
  afterAll(async () => {
    await host?.close();
  });

  it('lists every upstream tool under its namespace, definitions otherwise unchanged', async () => {
    const { tools } = await host.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('everything__echo');
    expect(names).toContain('memory__create_entities');
    expect(names).toContain('fs__read_text_file');
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);

    // Compare with a direct connection to one of them: only the name differs, and, for this host
    // without tasks, `execution` (mcp-warden runs a required task for it; see tasks.test.ts).
    const direct = new Client({ name: 'direct', version: '1' });
    await direct.connect(
      new StdioClientTransport({ command: NODE, args: [serverBin('everything')], stderr: 'ignore' }),
    );
    const directTools = (await direct.listTools()).tools;
    await direct.close();
    expect(directTools.some((t) => t.execution !== undefined)).toBe(true);
    const viaGateway = tools.filter((t) => t.name.startsWith('everything__'));
    expect(viaGateway.map((t: Tool) => ({ ...t, name: t.name.slice('everything__'.length) }))).toEqual(
      directTools.map(({ execution: _execution, ...t }) => t),
    );
  });

  it('routes calls to the owning upstream under its own tool name', async () => {
    const echo = await host.client.callTool({ name: 'everything__echo', arguments: { message: 'hi there' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'Echo: hi there' }]);

    const file = await host.client.callTool({
      name: 'fs__read_text_file',
      arguments: { path: path.join(dataDir, 'hello.txt') },
    });
    expect(JSON.stringify(file.content)).toContain('hello from the filesystem server');

    await host.client.callTool({
      name: 'memory__create_entities',
      arguments: { entities: [{ name: 'warden', entityType: 'gateway', observations: ['works'] }] },
    });
    const graph = await host.client.callTool({ name: 'memory__read_graph', arguments: {} });
    expect(JSON.stringify(graph.content)).toContain('warden');
  });

  it('answers an unknown tool with JSON-RPC -32602 naming the tool', async () => {
    await expect(host.client.callTool({ name: 'nope__missing', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool: nope__missing'),
    });
  });

  it('answers ping, and methods it does not serve with -32601', async () => {
    await expect(host.client.ping()).resolves.toEqual({});
    await expect(
      host.client.request({ method: 'foo/bar', params: {} }, EmptyResultSchema),
    ).rejects.toMatchObject({
      code: -32601,
    });
  });
});
