/**
 * URL-mode elicitation through the gateway served in-process, with server-everything, which lists
 * its `trigger-url-elicitation` tool only to a client that declared URL mode: a 2025-11-25 host
 * declaring `elicitation.url` sees the tool and is asked to open the URL; one that supports form
 * mode only never sees it, nor is asked a URL question. A 2026-07-28 host (servedModern.ts) is
 * asked within the call, and a form-mode-only one is refused. One 2026-07-28 scenario with
 * server-everything stays with the built binary in test/integration/urlElicitation.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ModernHost } from '../fixtures/modernHost.js';
import { FAST_GATEWAY, fixture, textOf, writeConfig } from '../integration/harness.js';
import { modernResult } from '../integration/modernWire.js';
import { ASK, config, refusal, TOOL, URL_ASKED } from '../integration/urlElicitationSetup.js';
import { servedPerTest } from './perTest.js';

const served = servedPerTest();

describe('a 2025-11-25 host', () => {
  it('that declares URL mode sees the tool, is asked to open the URL, and its answer completes the call', async () => {
    const asked: unknown[] = [];
    const host = await served.connect(config(), {
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
    const host = await served.connect(config(), { capabilities: { elicitation: { form: {}, url: {} } } });
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
    const host = await served.connect(config(), { capabilities: { elicitation: {} } });
    const { tools } = await host.client.listTools();
    expect(tools.map((t) => t.name)).toContain('everything__echo');
    expect(tools.map((t) => t.name)).not.toContain(TOOL);
  });
});

describe('a 2026-07-28 host', () => {
  const URL_MODE = { capabilities: { elicitation: { form: {}, url: {} } } };

  /** The host accepts the URL question `key` and sends the call again, continuing `requestState`. */
  async function acceptAndRetry(
    modern: ModernHost,
    params: Record<string, unknown>,
    key: string,
    requestState: unknown,
  ) {
    return modernResult(
      'tools/call',
      await modern.request(
        'tools/call',
        { ...params, inputResponses: { [key]: { action: 'accept' } }, requestState },
        URL_MODE,
      ),
    );
  }

  it("is asked to open the URLs of a server's -32042 within the call, and the call is sent again once accepted", async () => {
    const modern = await served.modern(
      writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture(['--tools', 'basic,odd']) } }),
    );
    const params = { name: 'up__url_required', arguments: {} };
    const first = modernResult('tools/call', await modern.request('tools/call', params, URL_MODE));
    expect(first.resultType).toBe('input_required');
    const entries = Object.entries(
      first.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>,
    );
    expect(entries).toHaveLength(1);
    const [key, request] = entries[0]!;
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'url', url: 'https://example.com/connect', elicitationId: 'connect-1' },
    });
    const final = await acceptAndRetry(modern, params, key, first.requestState);
    expect(textOf(final)).toBe('signed in');
  });

  it("is not sent a server's notifications/elicitation/complete, and the log says how it learns instead", async () => {
    const modern = await served.modern(
      writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture(['--tools', 'basic,odd']) } }),
    );
    const result = modernResult(
      'tools/call',
      await modern.request(
        'tools/call',
        { name: 'up__notify', arguments: { method: 'notifications/elicitation/complete' } },
        URL_MODE,
      ),
    );
    expect(textOf(result)).toBe('notified');
    await expect
      .poll(() => modern.stderr())
      .toMatch(/did not forward notifications\/elicitation\/complete from up: .*answer to its retry/);
  });

  it('whose requests declare form mode only does not see the tool', async () => {
    const modern = await served.modern(config());
    const listed = modernResult(
      'tools/list',
      await modern.request('tools/list', {}, { capabilities: { elicitation: { form: {} } } }),
    );
    const names = (listed.tools as { name: string }[]).map((t) => t.name);
    expect(names).toContain('everything__echo');
    expect(names).not.toContain(TOOL);
  });
});

describe('a URL-mode question for a host that declared form mode only', () => {
  it('is refused for a 2025-11-25 host, which is never asked', async () => {
    const asked: unknown[] = [];
    const upConfig = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } });
    const host = await served.connect(upConfig, {
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

  it('is refused for a 2026-07-28 host, which is not asked within the call', async () => {
    const modern = await served.modern(writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }));
    const formOnly = { capabilities: { elicitation: { form: {} } } };
    const result = modernResult('tools/call', await modern.request('tools/call', ASK, formOnly));
    expect(result.resultType).not.toBe('input_required');
    expect(refusal(result)?.message).toContain('did not declare url-mode elicitation');
  });
});
