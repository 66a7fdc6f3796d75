/**
 * URL-mode elicitation through the built binary to a 2026-07-28 host over stdio, with
 * server-everything, which lists its `trigger-url-elicitation` tool only to a client that
 * declared URL mode: requests that declare it see the tool and are asked within the call; form
 * mode only never sees it. The 2025-11-25 host is in test/inprocess/urlElicitation.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startModernHost, type ModernHost } from '../fixtures/modernHost.js';
import { CLI, FAST_GATEWAY, fixture, textOf, writeConfig } from './harness.js';
import { modernResult } from './modernWire.js';
import { ASK, config, refusal, TOOL, URL_ASKED } from './urlElicitationSetup.js';

let modern: ModernHost | undefined;
afterEach(async () => {
  await modern?.close();
  modern = undefined;
});

describe('a 2026-07-28 host', () => {
  const URL_MODE = { capabilities: { elicitation: { form: {}, url: {} } } };

  /** The host accepts the URL question `key` and sends the call again, continuing `requestState`. */
  async function acceptAndRetry(params: Record<string, unknown>, key: string, requestState: unknown) {
    return modernResult(
      'tools/call',
      await modern!.request(
        'tools/call',
        { ...params, inputResponses: { [key]: { action: 'accept' } }, requestState },
        URL_MODE,
      ),
    );
  }

  it('whose requests declare URL mode sees the tool, and is asked to open the URL within the call', async () => {
    modern = startModernHost(CLI, config());
    const listed = modernResult('tools/list', await modern.request('tools/list', {}, URL_MODE));
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toContain(TOOL);
    const params = { name: TOOL, arguments: { url: URL_ASKED, elicitationId: 'e-2' } };
    const first = modernResult('tools/call', await modern.request('tools/call', params, URL_MODE));
    expect(first.resultType).toBe('input_required');
    const [key, request] = Object.entries(
      first.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>,
    )[0]!;
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'url', url: URL_ASKED, elicitationId: 'e-2' },
    });
    const final = await acceptAndRetry(params, key, first.requestState);
    expect(textOf(final)).toContain('User completed the URL elicitation flow');
  });

  it("is asked to open the URLs of a server's -32042 within the call, and the call is sent again once accepted", async () => {
    modern = startModernHost(
      CLI,
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
    const final = await acceptAndRetry(params, key, first.requestState);
    expect(textOf(final)).toBe('signed in');
  });

  it("is not sent a server's notifications/elicitation/complete, and the log says how it learns instead", async () => {
    modern = startModernHost(
      CLI,
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
      .poll(() => modern!.stderr())
      .toMatch(/did not forward notifications\/elicitation\/complete from up: .*answer to its retry/);
  });

  it('whose requests declare form mode only does not see the tool', async () => {
    modern = startModernHost(CLI, config());
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
  it('is refused for a 2026-07-28 host, which is not asked within the call', async () => {
    modern = startModernHost(CLI, writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }));
    const formOnly = { capabilities: { elicitation: { form: {} } } };
    const result = modernResult('tools/call', await modern.request('tools/call', ASK, formOnly));
    expect(result.resultType).not.toBe('input_required');
    expect(refusal(result)?.message).toContain('did not declare url-mode elicitation');
  });
});
