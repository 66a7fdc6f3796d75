/**
 * URL-mode elicitation through the built binary to a 2026-07-28 host over stdio, with
 * server-everything, which lists its `trigger-url-elicitation` tool only to a client that
 * declared URL mode: requests that declare it see the tool and are asked within the call. The
 * other scenarios, for both eras, run in-process in test/inprocess/urlElicitation.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startModernHost, type ModernHost } from '../fixtures/modernHost.js';
import { CLI, textOf } from './harness.js';
import { modernResult } from './modernWire.js';
import { config, TOOL, URL_ASKED } from './urlElicitationSetup.js';

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
});
