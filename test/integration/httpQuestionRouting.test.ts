/**
 * A question an HTTP upstream asks during a call reaches the host whose call it is part of, and
 * no other: the upstream (built on the official SDK) sends it on the SSE stream of that call's
 * POST, while calls of two host connections are in flight at once on that one shared upstream,
 * so nothing but the stream tells whose question it is.
 */
import { OAuth2Server } from 'oauth2-mock-server';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAskingFixture, type AskingFixture } from '../fixtures/asking-http-server.mjs';
import { FAST_GATEWAY, textOf, writeConfig } from './harness.js';
import { connectHttpHost, startHttpGateway, type HttpGateway, type HttpHost } from './httpHarness.js';

const AUDIENCE = 'https://warden.test/mcp';
let issuer: OAuth2Server;
let upstream: AskingFixture;

beforeAll(async () => {
  issuer = new OAuth2Server();
  await issuer.issuer.keys.generate('RS256');
  await issuer.start(0, '127.0.0.1');
  upstream = await startAskingFixture({ together: 2 });
});
afterAll(async () => {
  await issuer.stop();
  await upstream.close();
});

let gateway: HttpGateway | undefined;
const hosts: HttpHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close().catch(() => {})));
  await gateway?.stop();
  gateway = undefined;
});

/** A host that answers every elicitation with its own name, and notes the questions it got. */
async function answeringHost(who: string, asked: string[], token?: string): Promise<HttpHost> {
  const host = await connectHttpHost(gateway!.url, {
    name: `${who}-host`,
    capabilities: { elicitation: {} },
    ...(token !== undefined && { token }),
    beforeConnect: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(`${who}: ${request.params.message}`);
        // The gateway's own mark of the stream never reaches a host.
        expect(JSON.stringify(request.params)).not.toContain('io.mcp-warden/postedFor');
        return { action: 'accept', content: { by: who } };
      }),
  });
  hosts.push(host);
  return host;
}

/** Both hosts call `ask` at once; each call's answer, as the upstream got it. */
async function askBoth(a: HttpHost, b: HttpHost) {
  const ask = (host: HttpHost, label: string) =>
    host.client
      .callTool({ name: 'asking__ask', arguments: { label } })
      .then(
        (result) => JSON.parse(textOf(result)) as { label: string; answer?: { content?: { by: string } } },
      );
  return Promise.all([ask(a, 'call-a'), ask(b, 'call-b')]);
}

describe("an HTTP upstream's question during concurrent calls", () => {
  it('reaches the principal whose call it is part of, each its own and no other', async () => {
    gateway = await startHttpGateway(
      writeConfig({
        gateway: FAST_GATEWAY,
        auth: { issuer: issuer.issuer.url, audience: AUDIENCE },
        servers: { asking: { url: upstream.url } },
      }),
    );
    const tokenOf = (sub: string) =>
      issuer.issuer.buildToken({
        scopesOrTransform: (_header, payload) => {
          payload.sub = sub;
          payload.aud = AUDIENCE;
        },
      });
    const [alice, bob] = [[] as string[], [] as string[]];
    const a = await answeringHost('alice', alice, await tokenOf('alice'));
    const b = await answeringHost('bob', bob, await tokenOf('bob'));
    const [fromA, fromB] = await askBoth(a, b);
    expect(fromA).toEqual({ label: 'call-a', answer: { action: 'accept', content: { by: 'alice' } } });
    expect(fromB).toEqual({ label: 'call-b', answer: { action: 'accept', content: { by: 'bob' } } });
    expect(alice).toEqual([expect.stringMatching(/^alice: .*question of call-a$/)]);
    expect(bob).toEqual([expect.stringMatching(/^bob: .*question of call-b$/)]);
  });

  it('reaches the session whose call it is part of, for two sessions of one principal', async () => {
    gateway = await startHttpGateway(
      writeConfig({ gateway: FAST_GATEWAY, servers: { asking: { url: upstream.url } } }),
    );
    const [first, second] = [[] as string[], [] as string[]];
    const a = await answeringHost('first', first);
    const b = await answeringHost('second', second);
    const [fromA, fromB] = await askBoth(a, b);
    expect(fromA.answer?.content?.by).toBe('first');
    expect(fromB.answer?.content?.by).toBe('second');
    expect(first).toEqual([expect.stringMatching(/question of call-a$/)]);
    expect(second).toEqual([expect.stringMatching(/question of call-b$/)]);
  });
});
