/**
 * Signing in through the host, end to end, served in-process (test/inprocess/served.ts, the same
 * `startServing` as `mcp-warden --config FILE`): the gateway with its real OAuth client, a real
 * authorization server (oauth2-mock-server: metadata, authorize redirect, token endpoint, signed
 * JWTs) and a resource server that answers 401 until a request carries one of its tokens
 * (test/fixtures/signin-http-server.mjs), beside a stdio server that must never wait for it.
 * The hosts are the SDK Client (with and without URL-mode elicitation) and a 2026-07-28 host
 * (test/fixtures/modernHost.ts); "opening" the sign-in URL is following its redirects, as a browser
 * would, back to the gateway's loopback redirect.
 */
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { OAuth2Server } from 'oauth2-mock-server';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startSignInFixture, type SignInFixture } from '../fixtures/signin-http-server.mjs';
import { FAST_GATEWAY, fixture, readAudit, tempDir, textOf, writeConfig } from '../integration/harness.js';
import { modernResult } from '../integration/modernWire.js';
import type { HttpHost } from '../integration/httpHarness.js';
import { servedPerTest } from './perTest.js';
import type { ServedHttp } from './served.js';

const SUBJECT = 'e2e-user';
/** The `sub` of the next upstream token the authorization server issues at its token endpoint. */
let upstreamSubject = SUBJECT;
let issuer: OAuth2Server;
let resource: SignInFixture;
/** The authorization server and the resource server, shared by the file's tests. */
const suite = servedPerTest({ closeAfter: 'all' });
/** What each test serves and connects. */
const served = servedPerTest();

beforeAll(async () => {
  issuer = new OAuth2Server();
  await issuer.issuer.keys.generate('RS256');
  await issuer.start(0, '127.0.0.1');
  suite.track({ close: () => issuer.stop() });
  issuer.service.on('beforeTokenSigning', (token) => {
    token.payload.sub = upstreamSubject;
  });
  resource = suite.track(await startSignInFixture({ authorizationServer: issuer.issuer.url! }));
});

/**
 * A config with the resource server and a stdio fixture; its own credentials file and audit. The
 * upstream tokens issued from here on are for SUBJECT until the test says otherwise.
 */
function setUp(extra: Record<string, unknown> = {}): {
  config: string;
  env: Record<string, string>;
  audit: string;
} {
  upstreamSubject = SUBJECT;
  const dir = tempDir('warden-signin-');
  const audit = path.join(dir, 'audit.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: audit },
      ...extra,
      servers: {
        remote: { url: `${resource.url}/mcp`, oauth: { clientId: 'mcp-warden-test' } },
        local: fixture(),
      },
    },
    dir,
  );
  const env = {
    MCP_WARDEN_CREDENTIALS: 'file',
    MCP_WARDEN_CREDENTIALS_FILE: path.join(dir, 'credentials.json'),
  };
  return { config, env, audit };
}

/** What a browser does with the sign-in URL: follows the redirects back to the gateway. */
async function openInBrowser(url: string): Promise<void> {
  const response = await fetch(url, { redirect: 'follow' });
  await response.text();
}

const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);

function nextListChanged(client: Client): Promise<void> {
  return new Promise((resolve) =>
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
  );
}

describe('a host that declared URL-mode elicitation', () => {
  it('signs in through the real OAuth client; the server tools replace authorize', async () => {
    const { config, env, audit } = setUp();
    const asked: { url?: string }[] = [];
    const host = await served.connect(config, {
      env,
      capabilities: { elicitation: { form: {}, url: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          asked.push(request.params as { url?: string });
          await openInBrowser((request.params as { url: string }).url);
          return { action: 'accept' };
        }),
    });
    const listed = await names(host.client);
    expect(listed).toContain('remote__authorize');
    // The other server never waits for the sign-in.
    expect(textOf(await host.client.callTool({ name: 'local__echo', arguments: { text: 'hi' } }))).toBe('hi');
    const changed = nextListChanged(host.client);
    const result = await host.client.callTool({ name: 'remote__authorize' });
    expect(textOf(result)).toMatch(/Signed in to server "remote"/);
    expect(asked[0]?.url).toContain(`${issuer.issuer.url!}/authorize`);
    await changed;
    expect(await names(host.client)).toContain('remote__whoami');
    expect(textOf(await host.client.callTool({ name: 'remote__whoami' }))).toBe(`signed in as ${SUBJECT}`);
    const records = readAudit(audit);
    expect(records.map((r) => r.type)).toEqual(
      expect.arrayContaining(['upstream_sign_in_start', 'upstream_sign_in']),
    );
    const text = JSON.stringify(records);
    for (const authorization of resource.authorizations)
      if (authorization !== null) expect(text).not.toContain(authorization.slice(7));
  });
});

describe('a host that can neither be asked by URL nor runs 2026-07-28', () => {
  it('gets the URL and the auth login command; once the browser signs in, the tools appear', async () => {
    const { config, env } = setUp();
    const host = await served.connect(config, { env });
    expect(await names(host.client)).toContain('remote__authorize');
    const result = await host.client.callTool({ name: 'remote__authorize' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain('mcp-warden auth login remote');
    const url = /(http:\/\/\S+\/authorize\?\S+)/.exec(textOf(result))?.[1];
    expect(url).toBeDefined();
    const changed = nextListChanged(host.client);
    await openInBrowser(url!);
    await changed;
    expect(textOf(await host.client.callTool({ name: 'remote__whoami' }))).toBe(`signed in as ${SUBJECT}`);
  });
});

describe('a 2026-07-28 host', () => {
  it('is asked within the call (input required); its retry gets who signed in', async () => {
    const { config, env } = setUp();
    const modern = await served.modern(config, env);
    const URL_MODE = { capabilities: { elicitation: { form: {}, url: {} } } };
    const listed = modernResult('tools/list', await modern.request('tools/list', {}, URL_MODE));
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toContain('remote__authorize');
    const params = { name: 'remote__authorize', arguments: {} };
    const first = modernResult('tools/call', await modern.request('tools/call', params, URL_MODE));
    expect(first.resultType).toBe('input_required');
    const [key, asked] = Object.entries(
      first.inputRequests as Record<string, { method: string; params: { mode: string; url: string } }>,
    )[0]!;
    expect(asked).toMatchObject({ method: 'elicitation/create', params: { mode: 'url' } });
    await openInBrowser(asked.params.url);
    const retry = {
      ...params,
      inputResponses: { [key]: { action: 'accept' } },
      requestState: first.requestState,
    };
    const final = modernResult('tools/call', await modern.request('tools/call', retry, URL_MODE));
    expect(textOf(final)).toMatch(/Signed in to server "remote"/);
    const after = modernResult(
      'tools/call',
      await modern.request('tools/call', { name: 'remote__whoami', arguments: {} }, URL_MODE),
    );
    expect(textOf(after)).toBe(`signed in as ${SUBJECT}`);
  });
});

describe('behind the HTTP listener, two principals', () => {
  const AUDIENCE = 'https://warden.test/mcp';
  let gateway: ServedHttp | undefined;

  /** A host connected to the listener with a bearer token of `subject`. */
  async function hostAs(subject: string, urlMode: boolean): Promise<HttpHost> {
    const token = await issuer.issuer.buildToken({
      scopesOrTransform: (_header, payload) => {
        payload.sub = subject;
        payload.aud = AUDIENCE;
      },
    });
    return served.httpHost(gateway!.url, {
      token,
      name: `${subject}-host`,
      ...(urlMode && {
        capabilities: { elicitation: { form: {}, url: {} } },
        beforeConnect: (client: HttpHost['client']) =>
          client.setRequestHandler(ElicitRequestSchema, async (request) => {
            await openInBrowser((request.params as { url: string }).url);
            return { action: 'accept' };
          }),
      }),
    });
  }

  /** The claims of the bearer token a request to the resource server carried; null for none. */
  const claimsOf = (authorization: string | null) =>
    authorization === null
      ? null
      : (JSON.parse(Buffer.from(authorization.split('.')[1]!, 'base64url').toString('utf8')) as {
          sub: string;
          aud?: unknown;
        });
  /** Whose upstream token each request the resource server received carried. */
  const upstreamSubjects = () => resource.authorizations.map((a) => claimsOf(a)?.sub ?? null);

  it("each signs in for themselves, and one's upstream token never serves the other's call", async () => {
    const { config, env } = setUp({ auth: { issuer: issuer.issuer.url, audience: AUDIENCE } });
    gateway = await served.http(config, { env });
    const alice = await hostAs('alice', true);
    const bob = await hostAs('bob', false);
    const seen = resource.authorizations.length;

    upstreamSubject = 'alice-upstream';
    expect(textOf(await alice.client.callTool({ name: 'remote__authorize' }))).toMatch(
      /Signed in to server "remote"/,
    );
    expect(textOf(await alice.client.callTool({ name: 'remote__whoami' }))).toBe(
      'signed in as alice-upstream',
    );

    // Bob has not signed in: he still sees authorize, and alice's tool name is a sign-in for him.
    const bobs = (await bob.client.listTools()).tools.map((t) => t.name);
    expect(bobs).toContain('remote__authorize');
    expect(bobs).not.toContain('remote__whoami');
    const asked = await bob.client.callTool({ name: 'remote__whoami' });
    expect(textOf(asked)).toContain('mcp-warden auth login remote');
    expect(
      new Set(
        upstreamSubjects()
          .slice(seen)
          .filter((s) => s !== null),
      ),
    ).toEqual(new Set(['alice-upstream']));

    upstreamSubject = 'bob-upstream';
    await openInBrowser(/(http:\/\/\S+\/authorize\?\S+)/.exec(textOf(asked))![1]!);
    await expect
      .poll(async () => (await bob.client.listTools()).tools.map((t) => t.name), { timeout: 10_000 })
      .toContain('remote__whoami');
    expect(textOf(await bob.client.callTool({ name: 'remote__whoami' }))).toBe('signed in as bob-upstream');
    expect(textOf(await alice.client.callTool({ name: 'remote__whoami' }))).toBe(
      'signed in as alice-upstream',
    );
    // The listener's own bearer tokens never went upstream.
    for (const a of resource.authorizations) expect(claimsOf(a)?.aud).not.toBe(AUDIENCE);
  });
});

describe('a server that asks for a sign-in, added by an edit of the config while serving', () => {
  it('gets the OAuth client like one configured at start: its authorize tool is listed', async () => {
    const dir = tempDir('warden-signin-reload-');
    const body = (servers: Record<string, unknown>) => ({ gateway: FAST_GATEWAY, servers });
    const config = writeConfig(body({ local: fixture() }), dir);
    const env = {
      MCP_WARDEN_CREDENTIALS: 'file',
      MCP_WARDEN_CREDENTIALS_FILE: path.join(dir, 'credentials.json'),
    };
    const host = await served.connect(config, { env });
    expect(await names(host.client)).not.toContain('remote__authorize');
    const changed = nextListChanged(host.client);
    writeConfig(
      body({
        local: fixture(),
        remote: { url: `${resource.url}/mcp`, oauth: { clientId: 'mcp-warden-test' } },
      }),
      dir,
    );
    await changed;
    await expect.poll(() => names(host.client)).toContain('remote__authorize');
  });
});
