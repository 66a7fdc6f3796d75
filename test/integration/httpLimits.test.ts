/**
 * HTTP upstreams are held to gateway.maxMessageSize like stdio ones: a huge JSON body or an SSE
 * event that never ends fails that call with an error naming the server and the limit, and
 * everything else keeps working.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture } from '../fixtures/http-fixture-server.mjs';
import { connectHost, FAST_GATEWAY, fixture, writeConfig, type HostSession } from './harness.js';

let server: Awaited<ReturnType<typeof startHttpFixture>>;
let host: HostSession;

beforeAll(async () => {
  server = await startHttpFixture();
  const config = writeConfig({
    gateway: { ...FAST_GATEWAY, maxMessageSize: '1MiB' },
    servers: { remote: { url: `http://127.0.0.1:${server.port}/mcp` }, local: fixture() },
  });
  host = await connectHost(config);
});

afterAll(async () => {
  await host?.close();
  await server?.close();
});

async function callText(name: string, args: Record<string, unknown> = {}) {
  const result = await host.client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
  return { isError: result.isError === true, text: (result.content as { text: string }[])[0]!.text };
}

describe('HTTP upstreams and gateway.maxMessageSize', () => {
  it.each([
    ['remote__huge_json', 'response body'],
    ['remote__endless_sse', 'SSE event'],
  ])('%s fails with an error naming the server and the limit', async (tool, what) => {
    const outcome = await callText(tool);
    expect(outcome.isError).toBe(true);
    expect(outcome.text).toContain('Upstream server "remote"');
    expect(outcome.text).toContain(`${what} over the limit of 1048576 bytes (gateway.maxMessageSize)`);
    // The same server and the others still serve.
    expect(await callText('remote__echo', { text: 'still here' })).toEqual({
      isError: false,
      text: 'echo: still here',
    });
    expect((await callText('local__echo', { text: 'hi' })).isError).toBe(false);
  });
});
