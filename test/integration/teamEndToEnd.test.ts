/**
 * Team mode end to end, as a company would run it, through the built binary and real parts
 * only: a real identity provider without Dynamic Client Registration (`oidc-provider`, one
 * pre-registered client), two gateway replicas signing hosts in at their front door and sharing
 * a real `redis-server`, behind a real HAProxy routing round robin with no stickiness at all.
 *
 * Two users sign in on two hosts (the SDK's own OAuth client), each gets their own server-memory
 * that the other cannot read, a burst over a rate limit gets 429 with Retry-After across both
 * replicas, and a confirmation asked through one replica is answered through the other; each
 * step is in the replicas' audit trails with the principal the sign-in named. redis-server and
 * HAProxy are Debian packages that .ci/run installs; these tests are skipped, saying so, only
 * where one of them is not installed.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, MODERN, type Json, type RpcAnswer } from '../fixtures/modernHost.js';
import { browse, HOST_REDIRECT, HostAuth, startIdentityProvider, whoIn } from './frontDoorHost.js';
import { freePort, hasHaproxy, startHaproxy } from './haproxy.js';
import {
  FAST_GATEWAY,
  fixture,
  NODE,
  readAudit,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type AuditRecord,
} from './harness.js';
import { postRpc, startHttpGateway, type HttpGateway } from './httpHarness.js';
import { modernResult } from './modernWire.js';
import { hasRedis, startRedis } from './redis.js';

const missing = [!hasRedis && 'redis-server', !hasHaproxy && 'haproxy'].filter(Boolean).join(' and ');
const TITLE =
  missing === ''
    ? 'team mode end to end: front door sign-in, own servers, rate limits and confirmations over two replicas'
    : `team mode end to end (skipped: ${missing} is not installed)`;
const SESSION_KEY = 'a-session-key-shared-by-both-replicas-0123456789';
const PASSWORD = 'redis-password-for-the-team-test';
/** How long a confirmation waits for its answer on the replica that asked it. */
const CONFIRM_TIMEOUT_MS = 4_000;
/** Each user's first memory call waits for their own processes on a loaded machine. */
const GATEWAY = { ...FAST_GATEWAY, startupTimeout: '45s', connectTimeout: '45s' };
const SLOW = 120_000;

/** A signed-in user: their host's OAuth state and their SDK client, connected through HAProxy. */
interface User {
  readonly auth: HostAuth;
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  readonly token: string;
}

describe.skipIf(missing !== '')(TITLE, () => {
  let redis: ChildProcess | undefined;
  let idp: ChildProcess | undefined;
  let haproxy: ChildProcess | undefined;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  let memoryDir: string;
  let lb: string;
  const users = new Map<string, User>();
  let nextId = 1;

  beforeAll(async () => {
    const store = await startRedis(PASSWORD);
    redis = store.process;
    // The balancer's address is the gateway's public URL: the replicas and the provider need it first.
    const lbPort = await freePort();
    lb = `http://127.0.0.1:${lbPort}`;
    const provider = await startIdentityProvider(`${lb}/oauth/callback`);
    idp = provider.process;
    // Replicas share the key their front door signs tokens and seals client ids with.
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const signingKey = JSON.stringify(await exportJWK(privateKey));
    // Where each user's memory lives: storage both replicas mount, one file per principal.
    memoryDir = realpathSync(tempDir('warden-team-memory-'));
    for (let i = 0; i < 2; i++) {
      const dir = tempDir('warden-team-replica-');
      const audit = path.join(dir, 'audit.jsonl');
      audits.push(audit);
      writeFileSync(
        path.join(dir, 'policy.yaml'),
        'rules:\n  - id: ask-first\n    match: { server: ask }\n    action: confirm\n    reason: A human decides.\n',
      );
      const config = writeConfig(
        {
          gateway: GATEWAY,
          // Behind the balancer the Host header is its address: allowed by name.
          listen: {
            http: '127.0.0.1:0',
            sessionKey: '${MCP_WARDEN_SESSION_KEY}',
            allowedHosts: ['127.0.0.1'],
          },
          store: `redis://:\${REDIS_PASSWORD}@127.0.0.1:${store.port}/0`,
          auth: {
            issuer: provider.issuer,
            audience: `${lb}/mcp`,
            claims: ['email'],
            frontDoor: {
              clientId: 'warden-gateway',
              clientSecret: '${IDP_CLIENT_SECRET}',
              scopes: ['openid', 'email'],
              signingKey: '${FRONT_DOOR_KEY}',
            },
          },
          policies: ['policy.yaml'],
          confirmation: { timeout: `${CONFIRM_TIMEOUT_MS}ms` },
          rateLimits: [{ server: 'up', rate: '3/hour', burst: 3 }],
          audit: { file: audit },
          servers: {
            memory: {
              command: NODE,
              args: [serverBin('memory')],
              env: { MEMORY_FILE_PATH: `${memoryDir}/\${principal.id}.jsonl` },
            },
            up: fixture(),
            ask: fixture(),
          },
        },
        dir,
      );
      replicas.push(
        await startHttpGateway(config, {
          env: {
            MCP_WARDEN_SESSION_KEY: SESSION_KEY,
            REDIS_PASSWORD: PASSWORD,
            IDP_CLIENT_SECRET: 'gateway-secret',
            FRONT_DOOR_KEY: signingKey,
            XDG_STATE_HOME: path.join(dir, 'state'),
          },
        }),
      );
    }
    // Round robin and nothing else: no stick table, no cookie, no hash on a header.
    haproxy = (
      await startHaproxy(
        replicas.map((r) => new URL(r.base).host),
        [],
        { port: lbPort },
      )
    ).process;
  }, SLOW);

  afterAll(async () => {
    await Promise.all([...users.values()].map((u) => u.client.close().catch(() => {})));
    haproxy?.kill('SIGTERM');
    await Promise.all(replicas.map((r) => r.stop()));
    redis?.kill('SIGTERM');
    idp?.kill('SIGTERM');
  });

  /** Every record of both trails, each with the index of the replica that wrote it. */
  const trail = (): (AuditRecord & { replica: number })[] =>
    audits.flatMap((file, replica) => readAudit(file).map((r) => ({ ...r, replica })));
  const subjectOf = (record: AuditRecord) => whoIn(record)?.subject;

  /** `user` signs in on a host of their own, as a desktop host does, through the balancer. */
  async function signIn(user: string): Promise<User> {
    const auth = new HostAuth();
    const first = new StreamableHTTPClientTransport(new URL(`${lb}/mcp`), { authProvider: auth });
    await expect(new Client({ name: `${user}-host`, version: '1.0.0' }).connect(first)).rejects.toThrow(
      /Unauthorized/,
    );
    expect(auth.authorizationUrl?.href.startsWith(`${lb}/oauth/authorize?`)).toBe(true);
    const back = await browse(auth.authorizationUrl!.href, HOST_REDIRECT, user);
    expect(back.page ?? back.url?.searchParams.get('error_description') ?? null).toBeNull();
    await first.finishAuth(back.url!.searchParams.get('code')!);
    const transport = new StreamableHTTPClientTransport(new URL(`${lb}/mcp`), { authProvider: auth });
    const client = new Client({ name: `${user}-host`, version: '1.0.0' });
    await client.connect(transport);
    const signedIn = { auth, client, transport, token: auth.stored!.access_token };
    users.set(user, signedIn);
    return signedIn;
  }

  it(
    'alice and bob sign in on two hosts through a provider without registration, each with their own token',
    async () => {
      const alice = await signIn('alice');
      const bob = await signIn('bob');
      expect(alice.token).not.toBe(bob.token);
      // Each sign-in went through both replicas: round robin sends the provider's redirect back
      // to the other replica than the host's authorization request, and the code to the first
      // again (each finds what the other kept in the store). The principal is the ID token's.
      await expect
        .poll(() =>
          trail()
            .filter((r) => r.type === 'host_sign_in')
            .map(subjectOf)
            .sort(),
        )
        .toEqual(['alice', 'bob']);
      const signedIn = trail().find((r) => r.type === 'host_sign_in');
      expect(whoIn(signedIn)?.claims).toMatchObject({ email: expect.stringMatching(/@example\.com$/) });
      expect(whoIn(signedIn)?.issuer).not.toBe(lb);
    },
    SLOW,
  );

  it(
    "gives each user their own server-memory: alice's entities never reach bob, nor bob's alice",
    async () => {
      const alice = users.get('alice')!;
      const bob = users.get('bob')!;
      const remember = async (user: User, name: string) => {
        const result = await user.client.callTool({
          name: 'memory__create_entities',
          arguments: { entities: [{ name, entityType: 'note', observations: [`${name} was written down`] }] },
        });
        expect(result.isError ?? false, textOf(result)).toBe(false);
      };
      const graphOf = async (user: User) =>
        textOf(await user.client.callTool({ name: 'memory__read_graph', arguments: {} }));
      await remember(alice, 'alice-secret');
      await remember(bob, 'bob-secret');
      // Each read lands on the other replica than the write before it (round robin).
      expect(await graphOf(alice)).toContain('alice-secret');
      expect(await graphOf(alice)).not.toContain('bob-secret');
      expect(await graphOf(bob)).toContain('bob-secret');
      expect(await graphOf(bob)).not.toContain('alice-secret');
      expect(readdirSync(memoryDir).sort()).toEqual([
        expect.stringMatching(/^alice-[0-9a-f]{16}\.jsonl$/),
        expect.stringMatching(/^bob-[0-9a-f]{16}\.jsonl$/),
      ]);
      // Both replicas served each user's memory, and each call is recorded as its user's (the
      // trail is written in batches: the last records come shortly after their answers).
      const memoryCalls = () => trail().filter((r) => r.type === 'call' && r.server === 'memory');
      await expect.poll(() => memoryCalls().length).toBe(6);
      for (const user of ['alice', 'bob']) {
        const theirs = memoryCalls().filter((r) => subjectOf(r) === user);
        expect(theirs).toHaveLength(3);
        expect(theirs.every((r) => r.outcome === 'ok')).toBe(true);
        expect(new Set(theirs.map((r) => r.replica))).toEqual(new Set([0, 1]));
      }
    },
    SLOW,
  );

  it('answers a burst over the rate limit on a 2025-11-25 session with 429 and Retry-After, counted over both replicas', async () => {
    const alice = users.get('alice')!;
    const call = (text: string) =>
      postRpc(
        `${lb}/mcp`,
        {
          jsonrpc: '2.0',
          id: nextId++,
          method: 'tools/call',
          params: { name: 'up__echo', arguments: { text } },
        },
        {
          Authorization: `Bearer ${alice.token}`,
          'Mcp-Session-Id': alice.transport.sessionId!,
          'Mcp-Protocol-Version': '2025-11-25',
        },
      );
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await call(`burst${i}`));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
    for (const refused of answers.slice(3)) {
      const wait = Number(refused.headers.get('retry-after'));
      expect(wait).toBeGreaterThan(0);
      expect(textOf((JSON.parse(refused.text) as RpcAnswer).result!)).toContain(`Try again in ${wait} s.`);
    }
    // The bucket is alice's: bob's calls still go through.
    expect(
      textOf(await users.get('bob')!.client.callTool({ name: 'up__echo', arguments: { text: 'b' } })),
    ).toBe('b');
    // Three calls ran, on both replicas, as alice's; the refusal is audited once, as hers.
    const burst = () =>
      trail().filter((r) => r.type === 'call' && String((r.args as Json)?.text).startsWith('burst'));
    await expect.poll(() => burst().length).toBe(3);
    const ran = burst();
    expect(ran.map(subjectOf)).toEqual(['alice', 'alice', 'alice']);
    expect(new Set(ran.map((r) => r.replica))).toEqual(new Set([0, 1]));
    await expect
      .poll(() => trail().filter((r) => r.type === 'rate_limited' && r.phase === 'begin'))
      .toEqual([
        expect.objectContaining({ server: 'up', principal: expect.objectContaining({ subject: 'alice' }) }),
      ]);
  });

  /** A stateless (2026-07-28) call of `ask__echo` by `user`, with `extra` params. */
  const askCall = (user: string, text: string, extra: Json = {}) =>
    postRpc(
      `${lb}/mcp`,
      {
        jsonrpc: '2.0',
        id: nextId++,
        method: 'tools/call',
        params: { name: 'ask__echo', arguments: { text }, _meta: envelope(), ...extra },
      },
      {
        Authorization: `Bearer ${users.get(user)!.token}`,
        'Mcp-Protocol-Version': MODERN,
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'ask__echo',
      },
    ).then((a) => JSON.parse(a.text) as RpcAnswer);

  /** Asks; the question's key and the sealed state a retry carries. */
  async function ask(user: string, text: string): Promise<{ key: string; requestState: string }> {
    const asked = modernResult('tools/call', await askCall(user, text));
    expect(asked).toMatchObject({ resultType: 'input_required' });
    const [key, question] = Object.entries(asked.inputRequests as Record<string, Json>)[0]!;
    expect(question.method).toBe('elicitation/create');
    return { key, requestState: asked.requestState as string };
  }
  const answer = (user: string, text: string, asked: { key: string; requestState: string }) =>
    askCall(user, text, {
      inputResponses: { [asked.key]: { action: 'accept', content: {} } },
      requestState: asked.requestState,
    });

  it(
    'serves a confirmation asked through one replica and answered through the other; the replica that asked records that the other ran it',
    async () => {
      const asked = await ask('alice', 'approved');
      expect(textOf(modernResult('tools/call', await answer('alice', 'approved', asked)))).toBe('approved');
      // The call ran once, as alice's, confirmed by her answer, on the replica the answer reached.
      const approved = () =>
        trail().filter((r) => r.type === 'call' && (r.args as Json)?.text === 'approved');
      await expect.poll(() => approved().length).toBeGreaterThan(0);
      const ran = approved();
      expect(ran).toHaveLength(1);
      expect(ran[0]).toMatchObject({
        outcome: 'ok',
        decision: { effect: 'confirm', rule: 'ask-first', confirmed: true, how: 'elicitation' },
      });
      expect(subjectOf(ran[0]!)).toBe('alice');
      // The replica that asked gives up its waiting copy when its wait ends, and says why: the
      // other replica (named by its audit session) took the answer and ran the call.
      const answeredOn = ran[0]!.replica;
      await expect
        .poll(() => approved().length, {
          timeout: CONFIRM_TIMEOUT_MS + 10_000,
        })
        .toBe(2);
      const askedOn = trail().find(
        (r) => r.type === 'call' && (r.args as Json)?.text === 'approved' && r.replica !== answeredOn,
      );
      expect(askedOn).toMatchObject({
        outcome: 'cancelled',
        decision: { effect: 'confirm', rule: 'ask-first', how: 'continued_elsewhere' },
        error: expect.stringContaining(
          `continued on another replica (audit session ${String(ran[0]!.session)})`,
        ),
      });
      expect(askedOn!.session).not.toBe(ran[0]!.session);
      expect(subjectOf(askedOn!)).toBe('alice');
      expect(JSON.stringify(askedOn)).not.toMatch(/no answer|timed out|within/);
    },
    SLOW,
  );

  it(
    'records a confirmation nobody answered in time as a timeout, and its late answer runs it on neither replica',
    async () => {
      const asked = await ask('bob', 'unanswered');
      await expect
        .poll(() => trail().find((r) => r.type === 'call' && (r.args as Json)?.text === 'unanswered'), {
          timeout: CONFIRM_TIMEOUT_MS + 10_000,
        })
        .toMatchObject({ outcome: 'denied', decision: { how: 'timeout', confirmed: false } });
      const late = await answer('bob', 'unanswered', asked);
      expect(late.error?.message).toContain(
        'requestState refused: it was already used, or its call has ended',
      );
      const records = trail().filter((r) => r.type === 'call' && (r.args as Json)?.text === 'unanswered');
      expect(records.map((r) => [r.outcome, subjectOf(r)])).toEqual([['denied', 'bob']]);
    },
    SLOW,
  );
});
