/**
 * MCP Apps (`io.modelcontextprotocol/ui`) through the gateway served in-process, with the two
 * official example App servers as upstreams: both serve `ui://get-time/mcp-app.html` and a
 * `get-time` tool.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  FAST_GATEWAY,
  fixture,
  NODE,
  readAudit,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';
import { connectServed } from './served.js';

const UI = 'io.modelcontextprotocol/ui';
/** A host that runs Apps declares the extension. */
const APPS_HOST = { extensions: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } } } as never;
const APP_URI = 'ui://get-time/mcp-app.html';

const app = (pkg: 'basic-vanillajs' | 'basic-react') => ({
  command: NODE,
  args: [serverBin(pkg), '--stdio'],
});

async function direct(pkg: 'basic-vanillajs' | 'basic-react'): Promise<Client> {
  const client = new Client({ name: 'direct-host', version: '1.0.0' }, { capabilities: APPS_HOST });
  await client.connect(new StdioClientTransport({ ...app(pkg), stderr: 'pipe' }));
  return client;
}

/** The error a call is rejected with (the SDK Client throws JSON-RPC errors). */
async function rejection(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: number; message: string };
  }
  throw new Error('the call was not rejected');
}

const byName = (tools: Tool[], name: string) => tools.find((t) => t.name === name);
const fromApp = (resourceUri: string) => ({ [UI]: { resourceUri } });

describe('two App servers behind one gateway', () => {
  let host: HostSession;
  beforeAll(async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { vanilla: app('basic-vanillajs'), react: app('basic-react') },
    });
    host = await shared.connect(config, { capabilities: APPS_HOST });
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it("each tool's resourceUri names its own server's App, in both meta keys", async () => {
    const { tools } = await host.client.listTools();
    for (const server of ['vanilla', 'react']) {
      const meta = byName(tools, `${server}__get-time`)?._meta;
      expect(meta?.ui).toEqual({ resourceUri: `ui://${server}/get-time/mcp-app.html` });
      expect(meta?.['ui/resourceUri']).toBe(`ui://${server}/get-time/mcp-app.html`);
    }
    const { resources } = await host.client.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual([
      'ui://react/get-time/mcp-app.html',
      'ui://vanilla/get-time/mcp-app.html',
    ]);
  });

  it("reading each tool's resourceUri gives its own server's HTML, as a direct read does", async () => {
    const { tools } = await host.client.listTools();
    const html: string[] = [];
    for (const [server, pkg] of [
      ['vanilla', 'basic-vanillajs'],
      ['react', 'basic-react'],
    ] as const) {
      const uri = (byName(tools, `${server}__get-time`)?._meta?.ui as { resourceUri: string }).resourceUri;
      const through = await host.client.readResource({ uri });
      const client = await direct(pkg);
      const straight = await client.readResource({ uri: APP_URI });
      await client.close();
      const [gateway, own] = [
        through.contents[0] as { text: string },
        straight.contents[0] as { text: string },
      ];
      expect(gateway.text).toBe(own.text);
      expect(through.contents[0]).toMatchObject({ uri, mimeType: 'text/html;profile=mcp-app' });
      html.push(gateway.text);
    }
    expect(html[0]).not.toBe(html[1]);
  });

  it('an un-namespaced get-time is refused with -32602 naming both candidates', async () => {
    const error = await rejection(host.client.callTool({ name: 'get-time', arguments: {} }));
    expect(error.code).toBe(-32602);
    expect(error.message).toContain('"vanilla__get-time", "react__get-time"');
  });

  it("an App's call, marked with its resource, resolves on its own server and may not name another's", async () => {
    const own = await host.client.callTool({
      name: 'get-time',
      arguments: {},
      _meta: fromApp('ui://react/get-time/mcp-app.html'),
    });
    expect(own.isError).toBeFalsy();
    expect(textOf(own)).toMatch(/^\d{4}-\d\d-\d\dT/);
    const other = await rejection(
      host.client.callTool({
        name: 'vanilla__get-time',
        arguments: {},
        _meta: fromApp('ui://react/get-time/mcp-app.html'),
      }),
    );
    expect(other.code).toBe(-32602);
    expect(other.message).toContain("an App may call only its own server's tools");
  });
});

describe('one App server', () => {
  it('an un-namespaced get-time (as the App calls it) works, as it does direct', async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        servers: { vanilla: app('basic-vanillajs') },
      },
      dir,
    );
    const host = await connectServed(config, { capabilities: APPS_HOST });
    try {
      const through = await host.client.callTool({ name: 'get-time', arguments: {} });
      const client = await direct('basic-vanillajs');
      const straight = await client.callTool({ name: 'get-time', arguments: {} });
      await client.close();
      expect(Object.keys(through.structuredContent ?? {})).toEqual(
        Object.keys(straight.structuredContent ?? {}),
      );
      expect((through.structuredContent as { time: string }).time).toMatch(/^\d{4}-\d\d-\d\dT/);
      // Resolved before the pipeline: the audit trail names the tool that was called.
      const record = readAudit(path.join(dir, 'audit.jsonl')).find((r) => r.type === 'call');
      expect(record).toMatchObject({
        tool: 'vanilla__get-time',
        server: 'vanilla',
        upstreamTool: 'get-time',
      });
    } finally {
      await host.close();
    }
  });
});

describe('app-only visibility', () => {
  const servers = { fx: fixture(['--tools', 'apps', '--name', 'fx']), other: fixture(['--tools', 'apps']) };
  const each = servedPerTest();

  it('a host without the Apps extension is not given app-only tools, and a call of one is refused', async () => {
    const dir = tempDir();
    const host = await each.connect(
      writeConfig({ gateway: FAST_GATEWAY, audit: { file: './audit.jsonl' }, servers }, dir),
    );
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('fx__app_show');
    expect(names).toContain('fx__app_model_only');
    expect(names).not.toContain('fx__app_refresh');
    const error = await rejection(host.client.callTool({ name: 'fx__app_refresh', arguments: {} }));
    expect(error.code).toBe(-32602);
    expect(error.message).toContain('lets only its App call this tool');
    // Refused before the pipeline, and still in the audit trail, under the tool it names.
    const refusal = readAudit(path.join(dir, 'audit.jsonl')).find((r) => r.type === 'call');
    expect(refusal).toMatchObject({
      tool: 'fx__app_refresh',
      server: 'fx',
      upstreamTool: 'app_refresh',
      outcome: 'protocol_error',
    });
  });

  it('a host with the extension lists them (it hides them from its model); App calls are held to the rules', async () => {
    const host = await each.connect(writeConfig({ gateway: FAST_GATEWAY, servers }), {
      capabilities: APPS_HOST,
    });
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('fx__app_refresh');
    const ownApp = fromApp('ui://fx/fx/app.html');
    const refreshed = await host.client.callTool({ name: 'app_refresh', arguments: {}, _meta: ownApp });
    expect(textOf(refreshed)).toContain('Refreshes the App');
    const modelOnly = await rejection(
      host.client.callTool({ name: 'fx__app_model_only', arguments: {}, _meta: ownApp }),
    );
    expect(modelOnly.message).toContain('does not let its App call this tool');
    const crossServer = await rejection(
      host.client.callTool({ name: 'other__app_refresh', arguments: {}, _meta: ownApp }),
    );
    expect(crossServer.message).toContain("an App may call only its own server's tools");
  });
});

describe('pins hold _meta.ui', () => {
  it('a tool pointed at another App resource is unlisted and refused until accepted', async () => {
    const dir = tempDir();
    const describeFile = path.join(dir, 'describe.json');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        pins: { file: './tool-pins.json' },
        audit: { file: './audit.jsonl' },
        servers: { fx: fixture(['--tools', 'apps', '--name', 'fx', '--describe-from', describeFile]) },
      },
      dir,
    );
    const host = await connectServed(config);
    try {
      expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('fx__app_show');
      writeFileSync(
        describeFile,
        JSON.stringify({ app_show: { _meta: { ui: { resourceUri: 'ui://fx/elsewhere.html' } } } }),
      );
      const changed = new Promise<void>((resolve) =>
        host.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      await host.client.callTool({ name: 'fx__relist', arguments: {} });
      await changed;
      expect((await host.client.listTools()).tools.map((t) => t.name)).not.toContain('fx__app_show');
      const refused = await host.client.callTool({ name: 'fx__app_show', arguments: {} });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('(_meta)');
    } finally {
      await host.close();
    }
    const records = readAudit(path.join(dir, 'audit.jsonl'));
    expect(records).toContainEqual(
      expect.objectContaining({ type: 'tool_changed', upstreamTool: 'app_show', fields: ['_meta'] }),
    );
  });
});

describe('App resource templates', () => {
  it('are served under their server’s name, and each expansion reads from its own server', async () => {
    const flags = (name: string) => ['--resources', '--ui-templates', '--name', name];
    const straight = new Client({ name: 'direct-host', version: '1.0.0' }, { capabilities: APPS_HOST });
    await straight.connect(new StdioClientTransport({ ...fixture(flags('one')), stderr: 'pipe' } as never));
    const directTemplates = (await straight.listResourceTemplates()).resourceTemplates;
    const directRead = await straight.readResource({ uri: 'ui://widgets/7.html' });
    await straight.close();
    expect(directTemplates.map((t) => t.uriTemplate)).toEqual(['ui://widgets/{id}.html']);

    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { one: fixture(flags('one')), two: fixture(flags('two')) },
    });
    const host = await connectServed(config, { capabilities: APPS_HOST });
    try {
      const { resourceTemplates } = await host.client.listResourceTemplates();
      // Both servers serve the same template: the host is given two, one per server.
      expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
        'ui://one/widgets/{id}.html',
        'ui://two/widgets/{id}.html',
      ]);
      expect(resourceTemplates[0]).toMatchObject({ name: 'widget', mimeType: directTemplates[0]!.mimeType });
      const one = await host.client.readResource({ uri: 'ui://one/widgets/7.html' });
      const two = await host.client.readResource({ uri: 'ui://two/widgets/7.html' });
      expect(one.contents).toEqual([{ ...directRead.contents[0], uri: 'ui://one/widgets/7.html' }]);
      expect(two.contents[0]).toMatchObject({
        uri: 'ui://two/widgets/7.html',
        text: '<p>widget 7 from two</p>',
      });
    } finally {
      await host.close();
    }
  });
});
