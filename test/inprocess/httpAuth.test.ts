/**
 * The HTTP listener as an OAuth 2.1 resource server, served in-process (`startServing` with
 * `--http`, the real fixture upstream), against a real issuer (oauth2-mock-server: signed JWTs
 * from a real JWKS endpoint, discovered from its metadata). Every bad token gets the right status,
 * and none of them gets a request through to an upstream. What needs the gateway's own process
 * (its open descriptors, the `policy explain` subcommand) stays with the built binary in
 * test/integration/httpAuth.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateKeyPair, SignJWT } from 'jose';
import type { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, MODERN } from '../fixtures/modernHost.js';
import { NODE, readAudit, ROOT, textOf } from '../integration/harness.js';
import { AUDIENCE, authConfig, PRINCIPAL_POLICY, startIssuer } from '../integration/authIssuer.js';
import { connectHttpHost, INITIALIZE, postRpc } from '../integration/httpHarness.js';
import { type ServedHttp } from './served.js';
import { servedPerTest } from './perTest.js';

let issuer: OAuth2Server;
let issuerUrl: string;
/** Counts the issuer's JWKS fetches: a local proxy to its /jwks endpoint. */
let jwksProxy: Server;
let jwksFetches = 0;
let jwksUrl: string;

beforeAll(async () => {
  ({ server: issuer, url: issuerUrl } = await startIssuer());
  jwksProxy = createServer((_req, res) => {
    jwksFetches++;
    fetch(`${issuerUrl}/jwks`)
      .then(async (r) => {
        res.writeHead(r.status, { 'Content-Type': 'application/json' });
        res.end(await r.text());
      })
      .catch(() => res.writeHead(502).end());
  });
  await new Promise<void>((resolve) => jwksProxy.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(jwksProxy.address() as AddressInfo).port}/jwks`;
});
afterAll(async () => {
  await issuer.stop();
  jwksProxy.close();
});

let gateway: ServedHttp | undefined;
const each = servedPerTest();

function setup(auth: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return authConfig(issuerUrl, auth, extra);
}

/** A token from the issuer, its payload changed by `change`. */
function token(
  change: (payload: Record<string, unknown>) => void = () => {},
  expiresIn = 300,
): Promise<string> {
  return issuer.issuer.buildToken({
    expiresIn,
    scopesOrTransform: (_header, payload) => {
      payload.sub = 'alice';
      payload.aud = AUDIENCE;
      payload.scope = 'mcp';
      payload.client_id = 'desktop-app';
      payload.email = 'alice@example.com';
      payload.groups = ['eng'];
      change(payload);
    },
  });
}

function callsReachedUpstream(record: string): boolean {
  return existsSync(record) && readFileSync(record, 'utf8').includes('"tools/call"');
}

/** Initialize with this Authorization header, as a raw POST. */
function initializeWith(url: string, bearer: string | undefined) {
  return postRpc(url, INITIALIZE, bearer === undefined ? {} : { Authorization: `Bearer ${bearer}` });
}

describe('HTTP listener with auth:', () => {
  it('serves a valid token, with the principal from it in every call record', async () => {
    const { config, auditFile } = setup();
    gateway = await each.http(config);
    const host = await connectHttpHost(gateway.url, { token: await token() });
    expect(textOf(await host.client.callTool({ name: 'up__echo', arguments: { text: 'hi' } }))).toBe('hi');
    await host.close();
    const [call] = readAudit(auditFile).filter((r) => r.type === 'call');
    expect(call!.principal).toEqual({
      source: 'token',
      subject: 'alice',
      issuer: issuerUrl,
      clientId: 'desktop-app',
      claims: { email: 'alice@example.com', groups: ['eng'] },
    });
  });

  it('answers no token with 401 and where to find the protected-resource metadata (RFC 9728)', async () => {
    const { config } = setup();
    gateway = await each.http(config);
    const refused = await initializeWith(gateway.url, undefined);
    expect(refused.status).toBe(401);
    const challenge = refused.headers.get('www-authenticate')!;
    expect(challenge).toMatch(
      /^Bearer resource_metadata="https:\/\/warden\.test\/\.well-known\/oauth-protected-resource\/mcp"/,
    );
    const metadata = await (await fetch(`${gateway.base}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(metadata).toMatchObject({
      resource: AUDIENCE,
      authorization_servers: [issuerUrl],
      scopes_supported: ['mcp'],
    });
  });

  it('refuses each bad token with the right status, and none reaches the upstream', async () => {
    const { config, record } = setup();
    gateway = await each.http(config);
    const valid = await token();
    const [head, body] = valid.split('.');
    const rogue = await generateKeyPair('RS256');
    const unknownKid = await new SignJWT({ sub: 'mallory', scope: 'mcp' })
      .setProtectedHeader({ alg: 'RS256', kid: 'not-published' })
      .setIssuer(issuerUrl)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(rogue.privateKey);
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${body}.`;
    const tampered = `${head}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), sub: 'root' })).toString('base64url')}.${valid.split('.')[2]}`;
    const cases: [string, string, number, string][] = [
      ['expired', await token(() => {}, -120), 401, 'expired'],
      [
        'wrong audience',
        await token((p) => (p.aud = 'https://other.test/mcp')),
        401,
        "the token is for the audience 'https://other.test/mcp'; this gateway expects https://warden.test/mcp (auth.audience)",
      ],
      [
        'wrong issuer',
        await token((p) => (p.iss = 'https://evil.test')),
        401,
        "the token was issued by 'https://evil.test'; this gateway accepts tokens from",
      ],
      ['bad signature', tampered, 401, 'signature'],
      ['alg none', unsigned, 401, 'invalid_token'],
      ['unknown kid', unknownKid, 401, 'invalid_token'],
      ['no scope', await token((p) => (p.scope = 'other')), 403, 'insufficient_scope'],
      // A subject that names nobody must not pass as one shared stand-in principal.
      ['numeric sub', await token((p) => (p.sub = 12345)), 401, 'sub claim is a number, not a string'],
      ['empty sub', await token((p) => (p.sub = '')), 401, 'sub claim is empty'],
      ['no sub', await token((p) => delete p.sub), 401, 'error_description="the token has no sub claim'],
    ];
    for (const [what, bad, status, says] of cases) {
      const refused = await postRpc(
        gateway.url,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'up__echo', arguments: { text: what } },
        },
        { Authorization: `Bearer ${bad}` },
      );
      expect([what, refused.status]).toEqual([what, status]);
      expect([what, refused.headers.get('www-authenticate')]).toEqual([what, expect.stringContaining(says)]);
      const init = await initializeWith(gateway.url, bad);
      expect([what, init.status]).toEqual([what, status]);
    }
    // A session opened with a valid token cannot be used by anyone else's, nor without one.
    const host = await connectHttpHost(gateway.url, { token: valid });
    const sessionId = host.transport.sessionId!;
    const other = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'up__echo', arguments: { text: 'x' } } },
      {
        Authorization: `Bearer ${await token((p) => (p.sub = 'bob'))}`,
        'Mcp-Session-Id': sessionId,
        'Mcp-Protocol-Version': '2025-11-25',
      },
    );
    expect(other.status).toBe(403);
    await host.close();
    expect(callsReachedUpstream(record)).toBe(false);
    expect(gateway.stderr()).toMatch(/refused with 401: the token's sub claim is a number/);
  });

  it('takes a token it has checked from memory only until the token expires', async () => {
    const { config } = setup({ clockSkew: '0s' });
    gateway = await each.http(config);
    // Long enough that a loaded machine still makes its first two requests inside it.
    const shortLived = await token(() => {}, 6);
    const exp = (
      JSON.parse(Buffer.from(shortLived.split('.')[1]!, 'base64url').toString()) as { exp: number }
    ).exp;
    expect((await initializeWith(gateway.url, shortLived)).status).toBe(200);
    // Remembered: the same text is served again without a new check.
    expect((await initializeWith(gateway.url, shortLived)).status).toBe(200);
    // Past its exp it is refused, though it was taken from memory a moment before.
    let refused: Awaited<ReturnType<typeof initializeWith>> | undefined;
    while (refused === undefined && Date.now() < exp * 1000 + 8000) {
      const answer = await initializeWith(gateway.url, shortLived);
      if (answer.status === 401) refused = answer;
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(refused?.headers.get('www-authenticate')).toContain('expired');
    expect(Date.now()).toBeGreaterThanOrEqual(exp * 1000);
  });

  it("keeps a stateless request's task to its principal: alice's next request polls it, bob's cannot", async () => {
    const { config } = setup(
      {},
      { servers: { t: { command: NODE, args: [path.join(ROOT, 'test/fixtures/task-server.mjs')] } } },
    );
    gateway = await each.http(config);
    const tasks = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    let id = 1;
    const post = async (bearer: string, method: string, params: Record<string, unknown>, name?: string) => {
      const answer = await postRpc(
        gateway!.url,
        { jsonrpc: '2.0', id: id++, method, params: { ...params, _meta: envelope({ capabilities: tasks }) } },
        {
          Authorization: `Bearer ${bearer}`,
          'Mcp-Protocol-Version': MODERN,
          'Mcp-Method': method,
          ...(name !== undefined && { 'Mcp-Name': name }),
        },
      );
      return JSON.parse(answer.text) as {
        result?: Record<string, unknown>;
        error?: { code: number; message: string };
      };
    };
    const alice = await token();
    const bob = await token((p) => (p.sub = 'bob'));
    const created = await post(alice, 'tools/call', { name: 't__report', arguments: { n: 2 } }, 't__report');
    expect(created.result).toMatchObject({ resultType: 'task' });
    const handle = created.result!.taskId as string;
    expect((await post(alice, 'tasks/get', { taskId: handle })).result).toMatchObject({ taskId: handle });
    const stranger = await post(bob, 'tasks/get', { taskId: handle });
    expect(stranger.result).toBeUndefined();
    expect(stranger.error?.code).toBe(-32602);
  });

  it('follows a key rotation: a new kid refetches the JWKS once; a flood of unknown kids is rate-limited', async () => {
    const { config } = setup({ jwksUri: jwksUrl });
    gateway = await each.http(config);
    const before = jwksFetches;
    expect((await initializeWith(gateway.url, await token())).status).toBe(200);
    expect(jwksFetches).toBe(before + 1);
    // Unknown kids right after a fetch: refused without another fetch each (cooldown).
    const rogue = await generateKeyPair('RS256');
    for (let i = 0; i < 5; i++) {
      const forged = await new SignJWT({ sub: 'mallory', scope: 'mcp' })
        .setProtectedHeader({ alg: 'RS256', kid: `rogue-${i}` })
        .setIssuer(issuerUrl)
        .setAudience(AUDIENCE)
        .setExpirationTime('5m')
        .sign(rogue.privateKey);
      expect((await initializeWith(gateway.url, forged)).status).toBe(401);
    }
    expect(jwksFetches).toBe(before + 1);
  });

  it('with jwksCooldown 0, a token signed by a newly published key is accepted (the set is refetched)', async () => {
    const { config } = setup({ jwksUri: jwksUrl, jwksCooldown: '0s' });
    gateway = await each.http(config);
    expect((await initializeWith(gateway.url, await token())).status).toBe(200);
    const fetched = jwksFetches;
    const rotated = await issuer.issuer.keys.generate('RS256', { kid: `rotated-${Date.now()}` });
    const signedByNew = await issuer.issuer.buildToken({
      kid: rotated.kid,
      scopesOrTransform: (_h, p) => {
        p.sub = 'alice';
        p.aud = AUDIENCE;
        p.scope = 'mcp';
      },
    });
    expect((await initializeWith(gateway.url, signedByNew)).status).toBe(200);
    expect(jwksFetches).toBe(fetched + 1);
  });
});

describe('policy by principal', () => {
  it("decides each call by its token's claims, and records who was denied", async () => {
    const { config, auditFile, dir, record } = setup({}, { policies: ['policy.yaml'] });
    writeFileSync(path.join(dir, 'policy.yaml'), PRINCIPAL_POLICY);
    gateway = await each.http(config);
    const alice = await connectHttpHost(gateway.url, { token: await token() });
    const carol = await connectHttpHost(gateway.url, {
      token: await token((p) => {
        p.sub = 'carol';
        p.groups = ['contractors'];
      }),
    });
    expect(textOf(await alice.client.callTool({ name: 'up__echo', arguments: { text: 'a' } }))).toBe('a');
    const denied = await carol.client.callTool({ name: 'up__echo', arguments: { text: 'c' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('Contractors may not echo.');
    await alice.close();
    await carol.close();
    const calls = readAudit(auditFile).filter((r) => r.type === 'call');
    expect(
      calls.map((c) => [
        (c.principal as { subject: string }).subject,
        c.outcome,
        (c.decision as { rule: unknown }).rule,
      ]),
    ).toEqual([
      ['alice', 'ok', null],
      ['carol', 'denied', 'contractors-no-echo'],
    ]);
    expect(readFileSync(record, 'utf8')).not.toContain('"c"');
  });
});
