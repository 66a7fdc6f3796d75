/**
 * The turns of one user's own server process over two replicas while their real `redis-server`
 * stops answering (SIGSTOP), comes back (SIGCONT), and dies and starts again empty. A request
 * that needs a turn then is refused within the store's timeout, saying which store, user and
 * server, rather than waiting for its own timeout or running without the turn; a request already
 * running ends normally; no lease is left behind to hold the user up afterwards; once the store
 * is back, calls work again; and a store that came back empty gets the lease of a request still
 * running back, so no other replica runs beside it.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, readAudit, textOf, type AuditRecord } from './harness.js';
import { connectHttpHost, suiteIssuer, type HttpGateway, type HttpHost } from './httpHarness.js';
import { hasRedis, startRedis, startStoreReplica, storeKeys } from './redis.js';

const TITLE = hasRedis
  ? "one user's turns over two replicas while the store is out"
  : "one user's turns over two replicas while the store is out (skipped: redis-server is not installed)";
const PASSWORD = 'redis-password-for-the-outage-test';
const AUDIENCE = 'https://warden.test/mcp';
/** Each store operation's bound; a lease lives five of them without renewal (2.5 s). */
const STORE_TIMEOUT = '500ms';
/** Far beyond anything the store takes: a refusal before it is the store's, not the call's timeout. */
const CALL_TIMEOUT = '60s';
const SLOW = 90_000;

/** What a refused turn says, for `user` at server "slow". */
const refusedTurn = (user: string) =>
  new RegExp(
    `Server "slow" runs one request at a time for each user over all replicas, and ${user}@\\S+'s turn could not be taken: ` +
      `the store redis://:\\*\\*\\*@127\\.0\\.0\\.1:\\d+/0 (did not answer within 500 ms|is not connected|failed)`,
  );

describe.skipIf(!hasRedis)(TITLE, () => {
  const issuer = suiteIssuer(AUDIENCE);
  let redis: ChildProcess;
  let redisPort = 0;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  const hosts: HttpHost[] = [];

  async function host(gateway: HttpGateway, user: string): Promise<HttpHost> {
    const connected = await connectHttpHost(gateway.url, { token: await issuer.token(user), name: user });
    hosts.push(connected);
    return connected;
  }

  /** The text of a call's answer, or of the error it was refused with. */
  const answer = (call: Promise<unknown>): Promise<string> =>
    call.then(
      (result) => textOf(result as Parameters<typeof textOf>[0]),
      (error: Error) => error.message,
    );

  const calls = (): AuditRecord[] =>
    audits.flatMap((file) => readAudit(file)).filter((r) => r.type === 'call');

  /** The keys of the turns (held, and claimed next) in the store now. */
  function leases(pattern = 'mcp-warden:lease*'): Promise<string[]> {
    return storeKeys(redisPort, PASSWORD, pattern);
  }

  /** Alice's hosts on the first replica and the second, her process started behind each. */
  async function aliceOnBoth(): Promise<[HttpHost, HttpHost]> {
    const both: [HttpHost, HttpHost] = [await host(replicas[0]!, 'alice'), await host(replicas[1]!, 'alice')];
    for (const h of both) await h.client.callTool({ name: 'slow__add', arguments: { a: 1, b: 1 } });
    return both;
  }

  /** Sends the store `signal` (it stops, or goes on, as a machine that froze would). */
  function signalRedis(signal: NodeJS.Signals): void {
    expect(spawnSync('kill', [`-${signal.replace(/^SIG/, '')}`, String(redis.pid)]).status).toBe(0);
  }

  beforeAll(async () => {
    const started = await startRedis(PASSWORD);
    redis = started.process;
    redisPort = started.port;
    for (let i = 0; i < 2; i++) {
      const { replica, audit } = await startStoreReplica({
        redisPort,
        password: PASSWORD,
        storeTimeout: STORE_TIMEOUT,
        config: {
          auth: { issuer: issuer.url(), audience: AUDIENCE },
          servers: { slow: fixture([], { timeout: CALL_TIMEOUT }) },
        },
      });
      replicas.push(replica);
      audits.push(audit);
    }
  }, 60_000);

  afterAll(async () => {
    redis.kill('SIGCONT');
    await Promise.all(hosts.map((h) => h.close().catch(() => {})));
    await Promise.all(replicas.map((r) => r.stop()));
    redis.kill('SIGKILL');
  });

  it(
    'refuses a request while the store is stopped, and leaves no lease behind once it goes on',
    async () => {
      // Alice's processes are started, so what follows is about turns only.
      const [here, there] = await aliceOnBoth();
      signalRedis('SIGSTOP');
      const refused = await answer(
        here.client.callTool({ name: 'slow__echo', arguments: { text: 'frozen' } }),
      );
      expect(refused).toMatch(refusedTurn('alice'));
      expect(refused).toMatch(/The call was not run/);
      signalRedis('SIGCONT');
      // The store took the refused attempt when it went on, and the release that followed it:
      // no lease of a request that is gone holds alice up.
      expect(await leases()).toEqual([]);
      const after = await there.client.callTool({ name: 'slow__echo', arguments: { text: 'after' } });
      expect(textOf(after)).toBe('after');
      await expect
        .poll(() => calls().find((r) => (r.args as { text?: string }).text === 'after'))
        .toMatchObject({ outcome: 'ok' });
      expect(
        calls().find((r) => (r.args as { text?: string }).text === 'after')?.leaseWaitMs,
      ).toBeUndefined();
    },
    SLOW,
  );

  it(
    'refuses the waiting request and a new one when the store stops while a turn is held, and serves again once it is back',
    async () => {
      const [here, there] = await aliceOnBoth();
      const bob = await host(replicas[1]!, 'bob');
      await bob.client.callTool({ name: 'slow__add', arguments: { a: 1, b: 1 } });
      const sleeping = answer(here.client.callTool({ name: 'slow__sleep', arguments: { ms: 4_000 } }));
      await expect.poll(() => leases('mcp-warden:lease:*'), { timeout: 10_000 }).toHaveLength(1);
      const waiting = answer(there.client.callTool({ name: 'slow__echo', arguments: { text: 'waiting' } }));
      // Waiting: it has claimed the next turn.
      await expect.poll(() => leases('mcp-warden:lease-next:*'), { timeout: 10_000 }).toHaveLength(1);
      signalRedis('SIGSTOP');
      expect(await waiting).toMatch(refusedTurn('alice'));
      expect(await answer(bob.client.callTool({ name: 'slow__echo', arguments: { text: 'bob' } }))).toMatch(
        refusedTurn('bob'),
      );
      // The request that held the turn was running already: it runs to its end.
      expect(await sleeping).toBe('slept 4000');
      signalRedis('SIGKILL');
      await new Promise((resolve) => redis.once('exit', resolve));
      expect(
        await answer(there.client.callTool({ name: 'slow__echo', arguments: { text: 'down' } })),
      ).toMatch(refusedTurn('alice'));
      redis = (await startRedis(PASSWORD, { port: redisPort })).process;
      // Each replica finds the store again on its own, and serves alice and bob as before.
      for (const [who, h] of [
        ['alice here', here],
        ['alice there', there],
        ['bob', bob],
      ] as const)
        await expect
          .poll(() => answer(h.client.callTool({ name: 'slow__echo', arguments: { text: who } })), {
            timeout: 20_000,
            interval: 250,
          })
          .toBe(who);
    },
    SLOW,
  );
  it(
    'gives a request still running its lease back when the store restarts empty, so the other replica waits',
    async () => {
      const [here, there] = await aliceOnBoth();
      const sleeping = answer(here.client.callTool({ name: 'slow__sleep', arguments: { ms: 10_000 } }));
      await expect.poll(() => leases('mcp-warden:lease:*'), { timeout: 10_000 }).toHaveLength(1);
      redis.kill('SIGKILL');
      await new Promise((resolve) => redis.once('exit', resolve));
      redis = (await startRedis(PASSWORD, { port: redisPort })).process;
      // The store came back without the lease; the running request's next renewal puts it back.
      await expect
        .poll(() => leases('mcp-warden:lease:*'), { timeout: 9_000, interval: 100 })
        .toHaveLength(1);
      const after = await there.client.callTool({ name: 'slow__echo', arguments: { text: 'after restart' } });
      expect(textOf(after)).toBe('after restart');
      expect(await sleeping).toBe('slept 10000');
      await expect
        .poll(() => calls().find((r) => (r.args as { text?: string }).text === 'after restart'))
        .toMatchObject({ outcome: 'ok', leaseWaitMs: expect.any(Number) });
    },
    SLOW,
  );
});
