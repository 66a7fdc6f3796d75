/**
 * Signing in through the host, end to end: the built binary with its real OAuth client, a real
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
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startModernHost, type ModernHost } from '../fixtures/modernHost.js';
import { startSignInFixture, type SignInFixture } from '../fixtures/signin-http-server.mjs';
import {
  CLI,
  connectHost,
  FAST_GATEWAY,
  fixture,
  readAudit,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';
import { modernResult } from './modernWire.js';

const SUBJECT = 'e2e-user';
let issuer: OAuth2Server;
let resource: SignInFixture;
let host: HostSession | undefined;

beforeAll(async () => {
  issuer = new OAuth2Server();
  await issuer.issuer.keys.generate('RS256');
  await issuer.start(0, '127.0.0.1');
  issuer.service.on('beforeTokenSigning', (token) => {
    token.payload.sub = SUBJECT;
  });
  resource = await startSignInFixture({ authorizationServer: issuer.issuer.url! });
});
afterAll(async () => {
  await resource.close();
  await issuer.stop();
});
afterEach(async () => {
  await host?.close();
  host = undefined;
});

/** A config with the resource server and a stdio fixture; its own credentials file and audit. */
function setUp(): { config: string; env: Record<string, string>; audit: string } {
  const dir = tempDir('warden-signin-');
  const audit = path.join(dir, 'audit.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: audit },
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
    host = await connectHost(config, {
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
    host = await connectHost(config, { env });
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
  let modern: ModernHost | undefined;
  afterEach(async () => {
    await modern?.close();
    modern = undefined;
  });

  it('is asked within the call (input required); its retry gets who signed in', async () => {
    const { config, env } = setUp();
    modern = startModernHost(CLI, config, env);
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
