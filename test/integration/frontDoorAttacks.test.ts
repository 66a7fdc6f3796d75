/**
 * An attacker against the front door and the session relay of two replicas that share a real
 * `redis-server`, each attack through the real HTTP listeners next to the honest path it
 * imitates. Replica A listens at the gateway's public address (the identity provider sends the
 * browser back there); replica B is a second listener over the same store, reached directly, so
 * a test chooses which replica gets each request. The identity provider is test/fixtures/oidc-idp.mjs.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { AuthorizationServerMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browse, HOST_REDIRECT, startIdentityProvider } from './frontDoorHost.js';
import { freePort } from './haproxy.js';
import { FAST_GATEWAY, fixture, readAudit, tempDir, textOf } from './harness.js';
import { postRpc, type HttpGateway } from './httpHarness.js';
import { hasRedis, startRedis, startStoreReplica } from './redis.js';

const TITLE = hasRedis
  ? 'attacks on the front door and the answer relay of two replicas'
  : 'attacks on the front door and the answer relay of two replicas (skipped: redis-server is not installed)';
const PASSWORD = 'redis-password-for-the-attack-test';
const GATEWAY = { ...FAST_GATEWAY, startupTimeout: '45s', connectTimeout: '45s' };
const SLOW = 120_000;

type Json = Record<string, string>;

describe.skipIf(!hasRedis)(TITLE, { timeout: SLOW }, () => {
  let redis: ChildProcess | undefined;
  let idp: ChildProcess | undefined;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  /** The gateway's public address: replica A's. */
  let base: string;
  let audience: string;

  beforeAll(async () => {
    const store = await startRedis(PASSWORD);
    redis = store.process;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    audience = `${base}/mcp`;
    const provider = await startIdentityProvider(`${base}/oauth/callback`);
    idp = provider.process;
    // Replicas share the key their front door signs tokens and seals client ids with.
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const signingKey = JSON.stringify(await exportJWK(privateKey));
    for (const address of [`127.0.0.1:${port}`, '127.0.0.1:0']) {
      const { replica, audit } = await startStoreReplica({
        redisPort: store.port,
        password: PASSWORD,
        address,
        env: {
          IDP_CLIENT_SECRET: 'gateway-secret',
          FRONT_DOOR_KEY: signingKey,
          XDG_STATE_HOME: path.join(tempDir('warden-attack-state-'), 'state'),
        },
        config: {
          gateway: GATEWAY,
          auth: {
            issuer: provider.issuer,
            audience,
            claims: ['email'],
            frontDoor: {
              clientId: 'warden-gateway',
              clientSecret: '${IDP_CLIENT_SECRET}',
              scopes: ['openid', 'email'],
              signingKey: '${FRONT_DOOR_KEY}',
            },
          },
          confirmation: { methods: ['elicitation'] },
          servers: { ask: fixture() },
        },
      });
      replicas.push(replica);
      audits.push(audit);
    }
  }, SLOW);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    redis?.kill('SIGTERM');
    idp?.kill('SIGTERM');
  });

  const A = () => replicas[0]!.base;
  const B = () => replicas[1]!.base;

  async function register(at: string, redirectUris: string[] = [HOST_REDIRECT], name = 'raw host') {
    const response = await fetch(`${at}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: name, redirect_uris: redirectUris }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  /** A registered host's authorization request at replica `at`, as the SDK's OAuth client makes it. */
  async function authorization(at: string, clientId: string) {
    const metadata = (await (
      await fetch(`${at}/.well-known/oauth-authorization-server`)
    ).json()) as AuthorizationServerMetadata;
    const { authorizationUrl, codeVerifier } = await startAuthorization(at, {
      metadata,
      clientInformation: { client_id: clientId, redirect_uris: [HOST_REDIRECT] },
      redirectUrl: HOST_REDIRECT,
      state: 'host-state',
      resource: audience,
    });
    // The metadata names the gateway's public address; the request goes to replica `at`.
    authorizationUrl.host = new URL(at).host;
    return { url: authorizationUrl.href, verifier: codeVerifier };
  }

  /**
   * The user's browser through the provider's forms, stopped where the provider sends it back
   * to the gateway: the callback URL (with the provider's code and the gateway's state).
   */
  async function toCallback(start: string, user: string): Promise<URL> {
    const back = await browse(start, `${base}/oauth/callback`, user);
    expect(back.page ?? null).toBeNull();
    return back.url!;
  }

  /** The callback URL delivered at replica `at`; what the host's redirect got (or the page shown). */
  async function deliverCallback(callback: URL, at: string) {
    const response = await fetch(`${at}${callback.pathname}${callback.search}`, { redirect: 'manual' });
    const location = response.headers.get('location');
    return {
      status: response.status,
      back: location === null ? undefined : new URL(location),
      page: location === null ? await response.text() : undefined,
    };
  }

  /** A host `user` signed in through `authorizeAt` and the callback at `callbackAt`: its code. */
  async function signIn(user: string, authorizeAt: string, callbackAt: string, clientId?: string) {
    const id = clientId ?? (await register(authorizeAt)).body['client_id']!;
    const { url, verifier } = await authorization(authorizeAt, id);
    const delivered = await deliverCallback(await toCallback(url, user), callbackAt);
    expect(delivered.back?.searchParams.get('error_description') ?? null).toBeNull();
    return { clientId: id, verifier, code: delivered.back!.searchParams.get('code')! };
  }

  async function trade(at: string, params: Json) {
    const response = await fetch(`${at}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  const codeGrant = (signedIn: { clientId: string; verifier: string; code: string }) => ({
    grant_type: 'authorization_code',
    code: signedIn.code,
    client_id: signedIn.clientId,
    redirect_uri: HOST_REDIRECT,
    code_verifier: signedIn.verifier,
    resource: audience,
  });

  describe('authorization codes', () => {
    it('a code buys tokens once on one replica: the replay is refused', async () => {
      const signedIn = await signIn('alice', A(), A());
      const first = await trade(A(), codeGrant(signedIn));
      expect(first.status).toBe(200);
      expect(first.body.access_token).toMatch(/.+/);
      const replay = await trade(A(), codeGrant(signedIn));
      expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      expect(replay.body.error_description).toMatch(/already used/);
    });

    it('a code traded on A and then on B is taken once: B refuses it', async () => {
      const signedIn = await signIn('alice', A(), B());
      expect((await trade(A(), codeGrant(signedIn))).status).toBe(200);
      expect(await trade(B(), codeGrant(signedIn))).toMatchObject({
        status: 400,
        body: { error: 'invalid_grant' },
      });
    });

    it('a code presented on both replicas at once buys tokens on exactly one', async () => {
      const signedIn = await signIn('alice', B(), A());
      const both = await Promise.all([trade(A(), codeGrant(signedIn)), trade(B(), codeGrant(signedIn))]);
      expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    });
  });

  describe('the state the gateway sends the identity provider', () => {
    it('a callback replayed on the other replica is refused; the first one gave the host its code', async () => {
      const id = (await register(A())).body['client_id']!;
      const callback = await toCallback((await authorization(A(), id)).url, 'alice');
      const honest = await deliverCallback(callback, A());
      expect(honest.status).toBe(302);
      expect(honest.back?.searchParams.get('code')).toMatch(/.+/);
      for (const at of [B(), A()]) {
        const replay = await deliverCallback(callback, at);
        expect(replay.status).toBe(400);
        expect(replay.page).toMatch(/unknown or has expired/);
      }
    });

    it("one sign-in's state with another sign-in's provider code gives no code to anyone", async () => {
      const id = (await register(A())).body['client_id']!;
      const first = await toCallback((await authorization(A(), id)).url, 'alice');
      const second = await toCallback((await authorization(A(), id)).url, 'mallory');
      // Mallory's provider code under Alice's state, on the other replica.
      const swapped = new URL(first);
      swapped.searchParams.set('code', second.searchParams.get('code')!);
      const attack = await deliverCallback(swapped, B());
      expect(attack.back?.searchParams.get('code') ?? null).toBeNull();
      expect(attack.back?.searchParams.get('error')).toMatch(/.+/);
      // Alice's state is spent by the attempt: her own code cannot be delivered under it now.
      expect((await deliverCallback(first, A())).status).toBe(400);
      // The honest path: a sign-in whose state and code belong together gives a code.
      const control = await signIn('alice', A(), B(), id);
      expect(control.code).toMatch(/.+/);
    });
  });

  describe('refresh tokens', () => {
    it('a refresh token used once is refused on the other replica after its rotation', async () => {
      const signedIn = await signIn('alice', A(), A());
      const tokens = (await trade(A(), codeGrant(signedIn))).body;
      const refresh = (token: string) => ({
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: signedIn.clientId,
      });
      const rotated = await trade(A(), refresh(tokens.refresh_token!));
      expect(rotated.status).toBe(200);
      expect(rotated.body.refresh_token).not.toBe(tokens.refresh_token);
      const replay = await trade(B(), refresh(tokens.refresh_token!));
      expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      expect(replay.body.error_description).toMatch(/already used/);
      // The rotated one is good on the other replica, once.
      expect((await trade(B(), refresh(rotated.body.refresh_token!))).status).toBe(200);
      expect((await trade(A(), refresh(rotated.body.refresh_token!))).status).toBe(400);
    });
  });

  describe('PKCE', () => {
    it('a code without its verifier, or with another one, buys nothing', async () => {
      const signedIn = await signIn('alice', A(), B());
      const { code_verifier: _, ...withoutVerifier } = codeGrant(signedIn);
      const missing = await trade(B(), withoutVerifier);
      expect(missing).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      expect(missing.body.error_description).toMatch(/PKCE/);
      const other = await signIn('alice', B(), A());
      const wrong = await trade(A(), {
        ...codeGrant(other),
        code_verifier: randomBytes(32).toString('base64url'),
      });
      expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      expect(wrong.body.error_description).toMatch(/PKCE/);
      // The honest path: a code with its own verifier.
      expect((await trade(B(), codeGrant(await signIn('alice', A(), B())))).status).toBe(200);
    });
  });

  describe('registration', () => {
    it.each([
      'http://evil.example/callback',
      'http://192.168.1.20:8080/callback',
      'javascript:alert(1)',
      'data:text/html,hi',
      'file:///etc/passwd',
      'ws://127.0.0.1:47777/callback',
      'https://host.example/callback#fragment',
      'https://user:pw@host.example/callback',
    ])('a redirect URI %s is refused', async (uri) => {
      const refused = await register(B(), [HOST_REDIRECT, uri]);
      expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    });

    it('loopback http and https redirect URIs are registered', async () => {
      const registered = await register(B(), [HOST_REDIRECT, 'http://[::1]:9/cb', 'https://host.example/cb']);
      expect(registered.status).toBe(201);
    });

    it("a code issued to one registered host is refused to another, even with the first's verifier", async () => {
      const victim = await signIn('alice', A(), B());
      // A client id is its sealed registration: another host registers other metadata.
      const other = (await register(B(), [HOST_REDIRECT], 'another host')).body['client_id']!;
      expect(other).not.toBe(victim.clientId);
      const attack = await trade(B(), { ...codeGrant(victim), client_id: other });
      expect(attack).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      expect(attack.body.error_description).toMatch(/another client/);
      // The honest path: the host the code was issued to.
      const honest = await signIn('alice', A(), B());
      expect((await trade(A(), codeGrant(honest))).status).toBe(200);
    });
  });

  describe("answers to a replica's questions", () => {
    /** An access token for `user`, signed in through the front door. */
    async function tokenOf(user: string): Promise<string> {
      return (await trade(A(), codeGrant(await signIn(user, A(), B())))).body.access_token!;
    }

    /**
     * `user`'s host in a 2025-11-25 session on replica A, whose confirmations wait until the test
     * answers them; `asked` has the id of each request A sent it.
     */
    async function hostOn(user: string) {
      const token = await tokenOf(user);
      const asked: { id: string; answer: (result: ElicitResult) => void }[] = [];
      let waiting: (() => void) | undefined;
      const client = new Client(
        { name: `${user}-host`, version: '1.0.0' },
        { capabilities: { elicitation: {} } },
      );
      client.setRequestHandler(
        ElicitRequestSchema,
        (_request, extra) =>
          new Promise<ElicitResult>((answer) => {
            asked.push({ id: String(extra.requestId), answer });
            waiting?.();
          }),
      );
      const transport = new StreamableHTTPClientTransport(new URL(`${A()}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      const question = () =>
        new Promise<{ id: string; answer: (result: ElicitResult) => void }>((resolve) => {
          const ready = () => asked.length > 0 && resolve(asked.shift()!);
          waiting = ready;
          ready();
        });
      return { token, client, session: transport.sessionId!, question, close: () => client.close() };
    }

    /**
     * A host's answer to request `id`, posted to replica B in session `session` with `token`.
     * Whatever B sends on to A travels one channel, in order: an honest answer posted after a
     * forged one reaches A after it.
     */
    const postAnswer = (
      token: string,
      session: string,
      id: string,
      action: 'accept' | 'decline' = 'accept',
    ) =>
      postRpc(
        `${B()}/mcp`,
        { jsonrpc: '2.0', id, result: { action, ...(action === 'accept' && { content: {} }) } },
        {
          Authorization: `Bearer ${token}`,
          'mcp-session-id': session,
          'mcp-protocol-version': '2025-11-25',
        },
      );

    const okCalls = (text: string) =>
      audits.flatMap((file) =>
        readAudit(file).filter(
          (r) => r.type === 'call' && (r.args as Json | undefined)?.text === text && r.outcome === 'ok',
        ),
      ).length;

    it("another principal's host answering in a session it does not own completes nothing", async () => {
      const alice = await hostOn('alice');
      const mallory = await hostOn('mallory');
      const call = alice.client.callTool({ name: 'ask__echo', arguments: { text: 'alice-only' } });
      const question = await alice.question();
      expect(question.id).toMatch(/^[^.]+\.\d+$/);
      const forged = await postAnswer(mallory.token, alice.session, question.id);
      // Refused as the replica serving the session refuses it, though B knows it from the store only.
      expect(forged.status).toBe(403);
      // Alice herself declines, after it and along the same way: her call is refused, so the
      // forged acceptance did not run it.
      expect((await postAnswer(alice.token, alice.session, question.id, 'decline')).status).toBeLessThan(300);
      const result = await call;
      expect(result.isError).toBe(true);
      expect(okCalls('alice-only')).toBe(0);
      await Promise.all([alice.close(), mallory.close()]);
    });

    it('a host answering, in its own session, a request id the other replica asked someone else completes nothing', async () => {
      const bob = await hostOn('bob');
      const mallory = await hostOn('mallory');
      const call = bob.client.callTool({ name: 'ask__echo', arguments: { text: 'bob-only' } });
      const question = await bob.question();
      // In Mallory's own session: Bob's request id, and an id replica A never asked.
      const [tag] = question.id.split('.');
      for (const id of [question.id, `${tag}.424242`]) {
        const forged = await postAnswer(mallory.token, mallory.session, id);
        expect(forged.status).toBeLessThan(300);
      }
      // Both were sent on to replica A, which asked: it took them for Mallory's session only.
      await expect
        .poll(() => (replicas[1]!.stderr().match(/was sent on to replica \S+, which asked/g) ?? []).length)
        .toBeGreaterThanOrEqual(2);
      expect((await postAnswer(bob.token, bob.session, question.id, 'decline')).status).toBeLessThan(300);
      expect((await call).isError).toBe(true);
      expect(okCalls('bob-only')).toBe(0);
      // The honest path: Bob accepts a second question himself, through replica B.
      const again = bob.client.callTool({ name: 'ask__echo', arguments: { text: 'bob-again' } });
      const next = await bob.question();
      expect((await postAnswer(bob.token, bob.session, next.id)).status).toBeLessThan(300);
      expect(textOf(await again)).toBe('bob-again');
      await Promise.all([bob.close(), mallory.close()]);
    });
  });
});
