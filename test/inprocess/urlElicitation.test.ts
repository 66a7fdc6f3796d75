/**
 * URL-mode elicitation through the gateway served in-process, with server-everything, which lists
 * its `trigger-url-elicitation` tool only to a client that declared URL mode: a 2025-11-25 host
 * declaring `elicitation.url` sees the tool and is asked to open the URL; one that supports form
 * mode only never sees it, nor is asked a URL question. The 2026-07-28 host over stdio is in
 * test/integration/urlElicitation.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { FAST_GATEWAY, fixture, textOf, writeConfig, type HostSession } from '../integration/harness.js';
import { ASK, config, refusal, TOOL, URL_ASKED } from '../integration/urlElicitationSetup.js';
import { connectServed } from './served.js';

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

describe('a 2025-11-25 host', () => {
  it('that declares URL mode sees the tool, is asked to open the URL, and its answer completes the call', async () => {
    const asked: unknown[] = [];
    host = await connectServed(config(), {
      capabilities: { elicitation: { form: {}, url: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params);
          return { action: 'accept' };
        }),
    });
    const { tools } = await host.client.listTools();
    expect(tools.map((t) => t.name)).toContain(TOOL);
    const result = await host.client.callTool({
      name: TOOL,
      arguments: { url: URL_ASKED, elicitationId: 'e-1' },
    });
    expect(asked).toEqual([expect.objectContaining({ mode: 'url', url: URL_ASKED, elicitationId: 'e-1' })]);
    expect(textOf(result)).toContain('User completed the URL elicitation flow');
  });

  it('gets a server’s URL-elicitation-required error (-32042) as the server sent it', async () => {
    host = await connectServed(config(), { capabilities: { elicitation: { form: {}, url: {} } } });
    const error = await host.client
      .callTool({ name: TOOL, arguments: { url: URL_ASKED, errorPath: true } })
      .then(
        () => undefined,
        (e: unknown) => e as { code: number; data?: { elicitations?: { mode: string; url: string }[] } },
      );
    expect(error?.code).toBe(-32042);
    expect(error?.data?.elicitations).toEqual([
      expect.objectContaining({ mode: 'url', url: 'https://modelcontextprotocol.io' }),
    ]);
  });

  it('that declares form mode only does not see the tool', async () => {
    host = await connectServed(config(), { capabilities: { elicitation: {} } });
    const { tools } = await host.client.listTools();
    expect(tools.map((t) => t.name)).toContain('everything__echo');
    expect(tools.map((t) => t.name)).not.toContain(TOOL);
  });
});

describe('a URL-mode question for a host that declared form mode only', () => {
  it('is refused for a 2025-11-25 host, which is never asked', async () => {
    const asked: unknown[] = [];
    const upConfig = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } });
    host = await connectServed(upConfig, {
      capabilities: { elicitation: {} },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params);
          return { action: 'accept' };
        }),
    });
    const result = await host.client.callTool(ASK);
    expect(refusal(result)?.message).toContain('did not declare url-mode elicitation');
    expect(asked).toEqual([]);
  });
});
