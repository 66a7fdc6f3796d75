/**
 * The listener's OAuth front door against a real identity provider without Dynamic Client
 * Registration (`oidc-provider`, test/fixtures/oidc-idp.mjs, one pre-registered confidential
 * client whose redirect is the gateway's callback). A host signs in as a desktop host does,
 * with the SDK's own OAuth client: it finds the gateway's authorization server, registers there,
 * sends the user's browser (driven here with fetch through the provider's real login and consent
 * forms) and trades the code with its PKCE verifier; then it calls a tool, and the audit names
 * the principal from the provider's ID token. Each way a sign-in goes wrong says what is wrong.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { importPKCS8, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browse, HOST_REDIRECT, HostAuth, startIdentityProvider, tagOf, whoIn } from './frontDoorHost.js';
import { freePort } from './haproxy.js';
import { FAST_GATEWAY, fixture, readAudit, tempDir, textOf, writeConfig } from './harness.js';
import { postRpc, startHttpGateway, type HttpGateway } from './httpHarness.js';

describe('the OAuth front door, against an identity provider without registration', () => {
  let idp: ChildProcess;
  let gateway: HttpGateway;
  let base: string;
  let audience: string;
  let auditFile: string;
  let stateDir: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    audience = `${base}/mcp`;
    const provider = await startIdentityProvider(`${base}/oauth/callback`);
    idp = provider.process;
    const { issuer } = provider;
    const dir = tempDir('warden-front-door-');
    stateDir = path.join(dir, 'state');
    auditFile = path.join(dir, 'audit.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: auditFile },
        auth: {
          issuer,
          audience,
          claims: ['email'],
          frontDoor: {
            clientId: 'warden-gateway',
            clientSecret: '${IDP_CLIENT_SECRET}',
            scopes: ['openid', 'email'],
          },
        },
        servers: { up: fixture() },
      },
      dir,
    );
    gateway = await startHttpGateway(config, {
      address: `127.0.0.1:${port}`,
      env: { IDP_CLIENT_SECRET: 'gateway-secret', XDG_STATE_HOME: stateDir },
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    idp?.kill();
  });

  /** A host registered at the front door, as the SDK registers one. */
  async function register(redirectUris = [HOST_REDIRECT]) {
    const response = await fetch(`${base}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'raw host', redirect_uris: redirectUris }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  }

  /** The front door's authorization URL for a registered host, with a PKCE pair of its own. */
  function authorization(clientId: string, redirectUri = HOST_REDIRECT) {
    const verifier = randomBytes(32).toString('base64url');
    const url = new URL(`${base}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 'host-state',
      resource: audience,
    }).toString();
    return { url: url.href, verifier };
  }

  async function trade(params: Record<string, string>) {
    const response = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  }

  it('a host signs in with the SDK client (DCR at the gateway, PKCE) and calls a tool as the ID token says', async () => {
    const auth = new HostAuth();
    const first = new StreamableHTTPClientTransport(new URL(audience), { authProvider: auth });
    await expect(new Client({ name: 'desktop', version: '1.0.0' }).connect(first)).rejects.toThrow(
      /Unauthorized/,
    );
    // The SDK found the gateway as the authorization server and registered there.
    expect(auth.client?.client_id).toMatch(/.+/);
    expect(auth.authorizationUrl?.href.startsWith(`${base}/oauth/authorize?`)).toBe(true);

    const back = await browse(auth.authorizationUrl!.href, HOST_REDIRECT);
    expect(back.url?.searchParams.get('error_description') ?? null).toBeNull();
    expect(back.url?.searchParams.get('iss')).toBe(base);
    await first.finishAuth(back.url!.searchParams.get('code')!);
    expect(auth.stored?.refresh_token).toMatch(/.+/);

    const client = new Client({ name: 'desktop', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(audience), { authProvider: auth }));
    expect(textOf(await client.callTool({ name: 'up__echo', arguments: { text: 'hi' } }))).toBe('hi');
    await client.close();

    // The trail is written in batches: the call's record comes shortly after its answer.
    await expect.poll(() => readAudit(auditFile).some((r) => r.type === 'call')).toBe(true);
    const records = readAudit(auditFile);
    const call = records.find((r) => r.type === 'call');
    expect(call?.principal).toMatchObject({
      source: 'token',
      subject: 'alice',
      issuer: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      clientId: tagOf(auth.client!.client_id),
      claims: { email: 'alice@example.com' },
    });
    expect(whoIn(call)?.issuer).not.toBe(base);
    const signIn = records.find((r) => r.type === 'host_sign_in');
    expect(signIn).toMatchObject({ client: tagOf(auth.client!.client_id), clientName: 'test desktop host' });
    expect(whoIn(signIn)?.subject).toBe('alice');
    expect(records.some((r) => r.type === 'host_sign_in_start')).toBe(true);
    // Never a token in the trail.
    expect(readFileSync(auditFile, 'utf8')).not.toContain(auth.stored!.access_token);

    // The refresh token rotates: the new one works once, the old one no more.
    const refreshed = await trade({
      grant_type: 'refresh_token',
      refresh_token: auth.stored!.refresh_token!,
      client_id: auth.client!.client_id,
    });
    expect(refreshed.status).toBe(200);
    const reused = await trade({
      grant_type: 'refresh_token',
      refresh_token: auth.stored!.refresh_token!,
      client_id: auth.client!.client_id,
    });
    expect(reused.body).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('sign in again'),
    });
  });

  it('the metadata names the gateway as the authorization server, with S256 and registration', async () => {
    const resource = (await (
      await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)
    ).json()) as Record<string, unknown>;
    expect(resource).toMatchObject({ resource: audience, authorization_servers: [base] });
    const server = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(server).toMatchObject({
      issuer: base,
      registration_endpoint: `${base}/oauth/register`,
      code_challenge_methods_supported: ['S256'],
    });
    const jwks = (await (await fetch(`${base}/oauth/jwks`)).json()) as { keys: { d?: string }[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]!.d).toBeUndefined();
  });

  it('a redirect URI that is http but not loopback is not registered, and one not registered is refused', async () => {
    const refused = await register(['http://evil.example/callback']);
    expect(refused).toMatchObject({
      status: 400,
      body: {
        error: 'invalid_redirect_uri',
        error_description: expect.stringContaining('is not https, http to a loopback address'),
      },
    });
    const { body } = await register();
    const page = await fetch(authorization(body['client_id']!, 'https://evil.example/callback').url, {
      redirect: 'manual',
    });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain(
      `the redirect_uri "https://evil.example/callback" is not registered for this client (registered: ${HOST_REDIRECT})`,
    );
    // The client id is the registration, sealed: one rewritten to add a redirect is not ours.
    const [, seal] = body['client_id']!.split('.');
    const forged = `${Buffer.from(JSON.stringify({ r: ['https://evil.example/callback'] })).toString('base64url')}.${seal}`;
    const refusedForgery = await fetch(authorization(forged, 'https://evil.example/callback').url, {
      redirect: 'manual',
    });
    expect(refusedForgery.status).toBe(400);
    expect(await refusedForgery.text()).toContain('the client_id was not issued by this gateway');
    // An app's own scheme (Cursor's) registers.
    expect((await register(['cursor://anysphere.cursor-mcp/oauth/callback'])).status).toBe(201);
    // A loopback redirect on another port is the same redirect (a desktop host picks its port anew).
    const otherPort = await fetch(authorization(body['client_id']!, 'http://127.0.0.1:51234/callback').url, {
      redirect: 'manual',
    });
    expect(otherPort.status).toBe(302);
  });

  it('a code traded with the wrong PKCE verifier is refused, saying so, and audited with the principal', async () => {
    const { body } = await register();
    const clientId = body['client_id']!;
    const { url } = authorization(clientId);
    const back = await browse(url, HOST_REDIRECT, 'bob');
    const refused = await trade({
      grant_type: 'authorization_code',
      code: back.url!.searchParams.get('code')!,
      client_id: clientId,
      redirect_uri: HOST_REDIRECT,
      code_verifier: randomBytes(32).toString('base64url'),
    });
    expect(refused).toMatchObject({
      status: 400,
      body: {
        error: 'invalid_grant',
        error_description:
          'the code_verifier does not match the code_challenge of the authorization request (PKCE)',
      },
    });
    // The trail is written in batches: the record comes shortly after the answer.
    await expect
      .poll(() =>
        readAudit(auditFile).find((r) => r.type === 'host_sign_in_failed' && whoIn(r)?.subject === 'bob'),
      )
      .toMatchObject({ client: tagOf(clientId), error: expect.stringContaining('code_verifier') });
    await gateway.waitForStderr('the code_verifier does not match');
  });

  it('a callback whose state was tampered with is refused with a page saying to start again', async () => {
    const { body } = await register();
    const stopped = await browse(authorization(body['client_id']!).url, HOST_REDIRECT, 'carol', (url) =>
      url.startsWith(`${base}/oauth/callback`) ? url.replace(/state=[^&]+/, 'state=tampered') : url,
    );
    expect(stopped.status).toBe(400);
    expect(stopped.page).toContain('this sign-in is unknown or has expired');
    expect(stopped.page).toContain('start the sign-in again from the host');
  });

  it('a token for another audience is refused naming the audience expected and the one that came', async () => {
    const [keyFile] = readdirSync(path.join(stateDir, 'mcp-warden')).filter((f) =>
      f.startsWith('front-door-'),
    );
    const key = await importPKCS8(readFileSync(path.join(stateDir, 'mcp-warden', keyFile!), 'utf8'), 'ES256');
    const elsewhere = await new SignJWT({ client_id: 'x' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(base)
      .setSubject('alice')
      .setAudience('https://other.example/mcp')
      .setExpirationTime('5m')
      .sign(key);
    const refused = await postRpc(
      audience,
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} },
      { Authorization: `Bearer ${elsewhere}` },
    );
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text)).toMatchObject({
      error: 'invalid_token',
      error_description: `the token is for the audience "https://other.example/mcp"; this gateway expects ${audience} (auth.audience): ask the identity provider for a token for this resource`,
    });
    // A host asking the front door for tokens for another resource hears which one it serves.
    const { body } = await register();
    const back = await fetch(
      authorization(body['client_id']!).url.replace(
        encodeURIComponent(audience),
        'https%3A%2F%2Fother.example%2Fmcp',
      ),
      {
        redirect: 'manual',
      },
    );
    const location = new URL(back.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_target');
    expect(location.searchParams.get('error_description')).toContain(
      `this gateway issues tokens for the resource ${audience} (auth.audience), not https://other.example/mcp`,
    );
  });
});
