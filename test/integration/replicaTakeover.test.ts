/**
 * A replica that dies while a 2025-11-25 session's call waits for its confirmation: gateway
 * replicas share a real `redis-server`; the host is the SDK's Client over Streamable HTTP, whose
 * requests the test routes as a balancer would (to the replica that asks, then, once it is
 * killed, to a survivor). The call's stream carries event ids, so when it breaks the SDK
 * reconnects (GET with Last-Event-ID) to the survivor, which takes the call over once and runs
 * it with the user's answer to the question the dead replica asked. A call that was already
 * running upstream is answered at once with an error saying it was lost.
 */
import type { ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, readAudit, textOf } from './harness.js';
import { suiteIssuer, type HttpGateway } from './httpHarness.js';
import { hasRedis, startRedis, startStoreReplica } from './redis.js';

const TITLE = hasRedis
  ? 'a replica killed while a call waits for its confirmation'
  : 'a replica killed while a call waits for its confirmation (skipped: redis-server is not installed)';
const PASSWORD = 'redis-password-for-the-takeover-test';
const AUDIENCE = 'https://warden.test/mcp';

type Json = Record<string, unknown>;

describe.skipIf(!hasRedis)(TITLE, () => {
  const issuer = suiteIssuer(AUDIENCE);
  let redis: ChildProcess | undefined;
  let redisPort = 0;
  const started: HttpGateway[] = [];

  beforeAll(async () => {
    const store = await startRedis(PASSWORD);
    redis = store.process;
    redisPort = store.port;
  }, 30_000);

  afterAll(async () => {
    await Promise.all(started.map((r) => r.stop()));
    redis?.kill('SIGTERM');
  });

  /**
   * `n` fresh replicas sharing the store, each with its audit trail; `server` adds to the entry
   * of the server `ask`.
   */
  async function replicas(
    n: number,
    server: Record<string, unknown> = {},
  ): Promise<{ replica: HttpGateway; audit: string }[]> {
    const made = await Promise.all(
      Array.from({ length: n }, () =>
        startStoreReplica({
          redisPort,
          password: PASSWORD,
          config: {
            auth: { issuer: issuer.url(), audience: AUDIENCE },
            confirmation: { methods: ['elicitation'] },
            servers: { ask: fixture([], server) },
          },
        }),
      ),
    );
    started.push(...made.map((m) => m.replica));
    return made;
  }

  /** The audit session of a replica: every record it writes carries it. */
  const sessionOf = (audit: string) => readAudit(audit)[0]?.session as string;

  const okCalls = (audit: string, text: string) =>
    readAudit(audit).filter(
      (r) => r.type === 'call' && (r.args as Json | undefined)?.text === text && r.outcome === 'ok',
    );

  /**
   * Alice's host, connected through a balancer the test steers: every request goes to
   * `route.to`. It answers each confirmation with `answer` (after `decide` resolves).
   */
  /**
   * A two-minute call of `host`: how it ended (`answered`, or the error's message), and a
   * promise kept once its tool runs upstream (its first progress).
   */
  function sleepingCall(host: Awaited<ReturnType<typeof connectHost>>) {
    let running!: () => void;
    const upstream = new Promise<void>((resolve) => (running = resolve));
    const call = host.client
      .callTool({ name: 'ask__sleep', arguments: { ms: 120_000 } }, undefined, {
        onprogress: () => running(),
        timeout: 300_000,
      })
      .then(
        () => 'answered',
        (error: Error) => error.message,
      );
    return { call, upstream };
  }

  async function connectHost(first: HttpGateway, decide: () => Promise<void>) {
    const token = await issuer.token('alice');
    // The streams of the host's calls, which the test can break as a proxy's timeout would.
    const breakers: (() => void)[] = [];
    const route = { to: first };
    const seen: { method: string; resumed: boolean; status: number }[] = [];
    let questions = 0;
    let asked!: () => void;
    const question = new Promise<void>((resolve) => (asked = resolve));
    const client = new Client(
      { name: 'takeover-host', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, async () => {
      questions++;
      asked();
      await decide();
      return { action: 'accept', content: {} };
    });
    const transport = new StreamableHTTPClientTransport(new URL('http://balancer.test/mcp'), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: async (url, init) => {
        const target = new URL(String(url));
        const real = new URL(route.to.url);
        target.protocol = real.protocol;
        target.host = real.host;
        const response = await fetch(target, init);
        const headers = new Headers(init?.headers);
        seen.push({
          method: init?.method ?? 'GET',
          resumed: headers.has('last-event-id'),
          status: response.status,
        });
        if ((init?.method === 'POST' || headers.has('last-event-id')) && response.body !== null) {
          const reader = response.body.getReader();
          let fail!: (error: Error) => void;
          const body = new ReadableStream<Uint8Array>({
            start: (controller) => (fail = (error) => controller.error(error)),
            pull: async (controller) => {
              const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
              if (done) controller.close();
              else controller.enqueue(value);
            },
          });
          breakers.push(() => {
            fail(new Error('the proxy closed the stream'));
            void reader.cancel();
          });
          return new Response(body, { status: response.status, headers: response.headers });
        }
        return response;
      },
    });
    await client.connect(transport);
    return {
      client,
      transport,
      route,
      seen,
      question,
      questions: () => questions,
      breakStreams: () => breakers.splice(0).forEach((breakStream) => breakStream()),
      close: async () => {
        await transport.terminateSession().catch(() => {});
        await client.close();
      },
    };
  }

  function gate(): { readonly wait: () => Promise<void>; readonly open: () => void } {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { wait: () => opened, open };
  }

  it.each(['before', 'after'] as const)(
    'runs the call once on a survivor when the user answers %s the host resumes its stream there',
    async (when) => {
      const [dying, survivor] = await replicas(2);
      const decided = gate();
      const host = await connectHost(dying!.replica, decided.wait);
      const call = host.client.callTool({ name: 'ask__echo', arguments: { text: `taken-over-${when}` } });
      await host.question;
      // The balancer sends everything to the survivor from now on.
      host.route.to = survivor!.replica;
      dying!.replica.child.kill('SIGKILL');
      await dying!.replica.exited;
      if (when === 'before') decided.open();
      else {
        await survivor!.replica.waitForStderr(/was taken over here from replica/);
        decided.open();
      }
      const result = await call;
      expect(textOf(result)).toBe(`taken-over-${when}`);
      // The user was asked once; the host resumed the broken stream with a GET.
      expect(host.questions()).toBe(1);
      expect(host.seen.some((r) => r.method === 'GET' && r.resumed && r.status === 200)).toBe(true);
      // It ran once, on the survivor, under alice, whose record names the replica that took it over.
      const ran = okCalls(survivor!.audit, `taken-over-${when}`);
      expect(ran).toHaveLength(1);
      expect(ran[0]!.principal).toMatchObject({ subject: 'alice' });
      expect(ran[0]!.takenOverBy).toBe(sessionOf(survivor!.audit));
      expect(ran[0]!.decision).toMatchObject({ confirmed: true, how: 'elicitation' });
      expect(okCalls(dying!.audit, `taken-over-${when}`)).toHaveLength(0);
      await host.close();
    },
    120_000,
  );

  type TakeoverHost = Awaited<ReturnType<typeof connectHost>>;

  /** The host's own reconnection kept from the replicas, so that the test resumes its streams by hand. */
  function keepFromReconnecting(host: TakeoverHost): void {
    const transport = host.transport as unknown as { _startOrAuthSse: () => Promise<void> };
    transport._startOrAuthSse = () => Promise.reject(new Error('kept from the replicas by the test'));
  }

  /**
   * Alice's `ask__sleep` of `ms`, its stream broken after the fifth tick with the host kept from
   * reconnecting; the ticks it got go into `seen`. The call (its error, if it fails) and the id
   * of the last event the host got.
   */
  async function brokenSleep(host: TakeoverHost, ms: number, seen: number[] = []) {
    let eventId: string | undefined;
    let fifth!: () => void;
    const running = new Promise<void>((resolve) => (fifth = resolve));
    const call = host.client
      .callTool({ name: 'ask__sleep', arguments: { ms } }, undefined, {
        onprogress: ({ progress }) => {
          seen.push(progress);
          if (progress >= 5) fifth();
        },
        onresumptiontoken: (token) => (eventId = token),
        timeout: 60_000,
      })
      .catch((error: Error) => error);
    await running;
    keepFromReconnecting(host);
    host.breakStreams();
    await new Promise((resolve) => setImmediate(resolve));
    return { call, eventId: eventId! };
  }

  it('runs the call on a third replica when the survivor that took it over dies too, waiting for the answer', async () => {
    const [first, second, third] = await replicas(3);
    const decided = gate();
    const host = await connectHost(first!.replica, decided.wait);
    const tokens: string[] = [];
    const call = host.client.callTool({ name: 'ask__echo', arguments: { text: 'died-twice' } }, undefined, {
      onresumptiontoken: (token) => tokens.push(token),
    });
    await host.question;
    host.route.to = second!.replica;
    first!.replica.child.kill('SIGKILL');
    await first!.replica.exited;
    await second!.replica.waitForStderr(/was taken over here from replica/);
    // The host now resumes from the survivor's own events: the next death is that replica's.
    await expect
      .poll(() => tokens.at(-1))
      .toMatch(new RegExp(`^mcpw1\\.[^.]+\\.${sessionOf(second!.audit)}\\.`));
    host.route.to = third!.replica;
    second!.replica.child.kill('SIGKILL');
    await second!.replica.exited;
    await third!.replica.waitForStderr(/was taken over here from replica/);
    decided.open();
    const result = await call;
    expect(textOf(result)).toBe('died-twice');
    expect(host.questions()).toBe(1);
    const ran = okCalls(third!.audit, 'died-twice');
    expect(ran).toHaveLength(1);
    expect(ran[0]!.takenOverBy).toBe(sessionOf(third!.audit));
    expect([first, second].flatMap((r) => okCalls(r!.audit, 'died-twice'))).toHaveLength(0);
    await host.close();
  }, 120_000);

  it('answers a taken-over call that was running on the survivor when it died with the lost-call error', async () => {
    const [first, second, third] = await replicas(3);
    const decided = gate();
    const host = await connectHost(first!.replica, decided.wait);
    const { call, upstream } = sleepingCall(host);
    await host.question;
    host.route.to = second!.replica;
    first!.replica.child.kill('SIGKILL');
    await first!.replica.exited;
    await second!.replica.waitForStderr(/was taken over here from replica/);
    decided.open();
    // Progress from the tool: confirmed on the survivor, it runs upstream there now.
    await upstream;
    host.route.to = third!.replica;
    second!.replica.child.kill('SIGKILL');
    await second!.replica.exited;
    expect(await call).toMatch(
      new RegExp(
        `lost with replica ${sessionOf(second!.audit)}, which stopped while it ran: it may or may not have run`,
      ),
    );
    await host.close();
  }, 120_000);

  it('relays the rest of a call from the live replica running it when the host resumes on another, none twice or skipped', async () => {
    const [holder, other] = await replicas(2);
    const host = await connectHost(holder!.replica, () => Promise.resolve());
    // The other replica knows the session already (it continues it from the store meanwhile).
    host.route.to = other!.replica;
    await host.client.listTools();
    host.route.to = holder!.replica;
    const seen: number[] = [];
    let reached!: (n: number) => void;
    let at = 0;
    const progressed = (n: number) =>
      new Promise<void>((resolve) => {
        at = n;
        reached = () => resolve();
      });
    const fifth = progressed(5);
    const call = host.client.callTool({ name: 'ask__sleep', arguments: { ms: 8000 } }, undefined, {
      onprogress: ({ progress }) => {
        seen.push(progress);
        if (progress >= at) reached(progress);
      },
      timeout: 60_000,
    });
    await fifth;
    // The proxy drops the host's stream; the host resumes it on the other replica.
    const fifteenth = progressed(15);
    host.route.to = other!.replica;
    host.breakStreams();
    await fifteenth;
    // Dropped again, and resumed on the replica running the call itself.
    host.route.to = holder!.replica;
    host.breakStreams();
    const result = await call;
    expect(result.isError).toBeFalsy();
    // Every tick the tool reported, in order, once (the last may fall after its end).
    expect(seen.length).toBeGreaterThan(70);
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => i + 1));
    expect(host.seen.filter((r) => r.method === 'GET' && r.resumed && r.status === 200).length).toBe(2);
    const sleeps = (audit: string) =>
      readAudit(audit).filter((r) => r.type === 'call' && r.tool === 'ask__sleep');
    expect(sleeps(holder!.audit)).toHaveLength(1);
    expect(sleeps(other!.audit)).toHaveLength(0);
    await host.close();
  }, 120_000);

  it("refuses bob's resumption of alice's stream on both replicas, audited as his, and relays it to alice", async () => {
    const [holder, other] = await replicas(2);
    const host = await connectHost(holder!.replica, () => Promise.resolve());
    const seen: number[] = [];
    // The stream is resumed by hand.
    const { call, eventId: lastSeen } = await brokenSleep(host, 4000, seen);
    const before = [...seen];
    const resume = async (replica: HttpGateway, user: string) => {
      const response = await fetch(replica.url, {
        headers: {
          Authorization: `Bearer ${await issuer.token(user)}`,
          Accept: 'text/event-stream',
          'Mcp-Session-Id': host.transport.sessionId!,
          'Mcp-Protocol-Version': '2025-11-25',
          'Last-Event-ID': lastSeen,
        },
      });
      return { status: response.status, text: await response.text() };
    };
    // Bob holds a valid token of his own and alice's session id and event id. The other replica
    // has never served the session (it would relay the stream from the holder); the holder runs
    // the call and keeps its events. Both refuse him alike, and nothing of alice's reaches him.
    const refused = [await resume(other!.replica, 'bob'), await resume(holder!.replica, 'bob')];
    for (const bob of refused) {
      expect(bob.status).toBe(403);
      expect(bob.text).toContain('belongs to another principal');
      expect(bob.text).not.toMatch(/^data:|progress/m);
    }
    // Alice resumes on the other replica: it relays what came after her last event from the holder.
    const alice = await resume(other!.replica, 'alice');
    expect(alice.status).toBe(200);
    const messages = alice.text
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as Json);
    const relayed = messages
      .filter((m) => m.method === 'notifications/progress')
      .map((m) => (m.params as { progress: number }).progress);
    const answer = messages.find((m) => !('method' in m));
    expect(textOf(answer!.result as object)).toBe('slept 4000');
    // Every tick the tool reported, in order, once (the last may fall after its end).
    const all = [...before, ...relayed];
    expect(all.length).toBeGreaterThan(30);
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    // Each replica audited bob's attempt under bob, as a resumption, and the call ran once.
    for (const replica of [other, holder]) {
      const attempts = readAudit(replica!.audit).filter((r) => r.type === 'session_refused');
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ principal: { subject: 'bob' }, method: 'GET', resumed: true });
    }
    const sleeps = (audit: string) =>
      readAudit(audit).filter((r) => r.type === 'call' && r.tool === 'ask__sleep');
    expect(sleeps(holder!.audit)).toHaveLength(1);
    expect(sleeps(other!.audit)).toHaveLength(0);
    await host.close();
    await call;
  }, 120_000);

  it("refuses, logs and audits a relayed stream forged for a principal that does not own the session, and streams the owner's", async () => {
    const [holder] = await replicas(1);
    const host = await connectHost(holder!.replica, () => Promise.resolve());
    const { call, eventId } = await brokenSleep(host, 3000);
    const sessionId = host.transport.sessionId!;
    // Anyone who can publish on the store can pose as a replica: the relay's messages carry
    // no proof of who sent them, only the principal's key (source, issuer, subject).
    const url = `redis://:${PASSWORD}@127.0.0.1:${redisPort}/0`;
    const forger = createClient({ url });
    const listener = createClient({ url });
    await Promise.all([forger.connect(), listener.connect()]);
    const back = new Map<string, Json[]>();
    await listener.subscribe('mcp-warden:retry-answers:forged-replica', (text) => {
      const message = JSON.parse(text) as Json & { id: string };
      back.set(message.id, [...(back.get(message.id) ?? []), message]);
    });
    const keyOf = (subject: string) => `token\u0000${issuer.url()}\u0000${subject}`;
    let n = 0;
    const relay = async (principal: string, body: Json) => {
      const id = `forged-${++n}`;
      await forger.publish(
        `mcp-warden:retries:${sessionOf(holder!.audit)}`,
        JSON.stringify({
          kind: 'retry',
          id,
          from: 'forged-replica',
          principal,
          body,
          headers: {},
          stream: true,
        }),
      );
      await expect.poll(() => back.get(id)?.some((m) => m.kind === 'end'), { timeout: 20_000 }).toBe(true);
      return back.get(id)!;
    };
    const status = (messages: Json[]) =>
      (messages.find((m) => m.head !== undefined)?.head as { status: number } | undefined)?.status;
    try {
      // Bob's key with alice's session and event id: 404, nothing of hers, logged and audited.
      const bob = await relay(keyOf('bob'), { session: sessionId, lastEventId: eventId });
      expect(status(bob)).toBe(404);
      expect(bob.filter((m) => m.kind === 'chunk')).toEqual([]);
      expect(JSON.stringify(bob)).not.toMatch(/progress|slept/);
      await expect
        .poll(holder!.replica.stderr, { timeout: 5000 })
        .toMatch(
          new RegExp(
            `replica "forged-replica" relayed a resumed stream of session "${sessionId.slice(0, 12)}…" for token principal "bob@${issuer.url()}": refused with 404, not the owner`,
          ),
        );
      // An unknown session and an event id that names no stream are refused and logged too.
      expect(status(await relay(keyOf('alice'), { session: 'no-such-session', lastEventId: eventId }))).toBe(
        404,
      );
      await expect
        .poll(holder!.replica.stderr, { timeout: 5000 })
        .toMatch(/of session "no-such-sess…" for token principal "alice@.*unknown session/);
      expect(status(await relay(keyOf('alice'), { session: sessionId, lastEventId: 'junk' }))).toBe(404);
      await expect
        .poll(holder!.replica.stderr, { timeout: 5000 })
        .toMatch(/refused with 404, bad lastEventId/);
      // Audited once, for the stream asked for someone who does not own the session.
      const refused = readAudit(holder!.audit).filter((r) => r.type === 'session_refused');
      expect(refused).toHaveLength(1);
      expect(refused[0]).toMatchObject({
        method: 'GET',
        sessionId: `${sessionId.slice(0, 12)}…`,
        resumed: true,
        relayed: { from: 'forged-replica', principalKey: keyOf('bob') },
        principal: { source: 'os' },
      });
      // The owner's key streams the rest of the call, through to its answer.
      const alice = await relay(keyOf('alice'), { session: sessionId, lastEventId: eventId });
      expect(status(alice)).toBe(200);
      const text = alice.map((m) => m.text ?? '').join('');
      expect(text).toContain('notifications/progress');
      expect(text).toContain('slept 3000');
    } finally {
      await Promise.all([forger.close(), listener.close()]);
    }
    await host.close();
    await call;
  }, 120_000);

  it("is taken over by one survivor only, and another principal cannot resume alice's stream", async () => {
    const [dying, first, second] = await replicas(3);
    const decided = gate();
    const host = await connectHost(dying!.replica, decided.wait);
    let eventId: string | undefined;
    const call = host.client
      .callTool({ name: 'ask__echo', arguments: { text: 'raced' } }, undefined, {
        onresumptiontoken: (token) => (eventId = token),
      })
      .catch((error: Error) => error);
    await host.question;
    // The test resumes by hand, twice.
    host.route.to = first!.replica;
    keepFromReconnecting(host);
    dying!.replica.child.kill('SIGKILL');
    await dying!.replica.exited;
    expect(eventId).toMatch(/^mcpw1\./);
    const resume = async (replica: HttpGateway, token: string) => {
      const response = await fetch(replica.url, {
        headers: {
          Authorization: `Bearer ${token}`,
          Accept: 'text/event-stream',
          'Mcp-Session-Id': host.transport.sessionId!,
          'Mcp-Protocol-Version': '2025-11-25',
          'Last-Event-ID': eventId!,
        },
      });
      return { status: response.status, text: await response.text() };
    };
    // Bob holds a valid token, but not alice's session: nothing of hers is resumed for him.
    const bob = await resume(second!.replica, await issuer.token('bob'));
    expect(bob.status).toBe(403);
    decided.open();
    const alice = await issuer.token('alice');
    const both = await Promise.all([resume(first!.replica, alice), resume(second!.replica, alice)]);
    const answers = both.map((b) =>
      b.text
        .split('\n')
        .filter((line) => line.startsWith('data: {'))
        .map((line) => JSON.parse(line.slice(6)) as Json)
        .find((m) => !('method' in m)),
    );
    const ran = answers.filter((a) => a?.result !== undefined);
    const refused = answers.filter((a) => a?.error !== undefined);
    expect(ran).toHaveLength(1);
    expect(textOf(ran[0]!.result as object)).toBe('raced');
    expect(refused).toHaveLength(1);
    expect((refused[0]!.error as Json).message).toMatch(/already taken over by replica/);
    const audits = [first!.audit, second!.audit, dying!.audit];
    expect(audits.flatMap((a) => okCalls(a, 'raced'))).toHaveLength(1);
    await host.close();
    await call;
  }, 120_000);

  it('answers a call that was already running upstream on the dead replica with an error at once', async () => {
    const [dying, survivor] = await replicas(2);
    const host = await connectHost(dying!.replica, () => Promise.resolve());
    const { call, upstream } = sleepingCall(host);
    // Progress from the tool: it was confirmed and runs upstream now.
    await upstream;
    host.route.to = survivor!.replica;
    dying!.replica.child.kill('SIGKILL');
    await dying!.replica.exited;
    const outcome = await call;
    expect(outcome).toMatch(
      new RegExp(
        `lost with replica ${sessionOf(dying!.audit)}, which stopped while it ran: it may or may not have run`,
      ),
    );
    await host.close();
  }, 120_000);
  /** What a call came to: its text, or the message of the error it failed with. */
  const outcomeOf = (call: Promise<unknown>) =>
    call.then(
      (result) => textOf(result as object),
      (error: Error) => error.message,
    );

  // Last: it stops the store the other tests share, and starts it again.
  it('fails closed, naming the store, while the store hangs, and serves new calls once it is back', async () => {
    // Without turns, whose lease in the store would refuse the calls on its own: what is shown is
    // the takeover path's own refusals.
    const [asking, survivor] = await replicas(2, { acrossReplicas: 'parallel' });
    const names = new RegExp(`store redis://[^ ]*127\\.0\\.0\\.1:${redisPort}`);
    // One host's call waits on the replica that dies; another's on the survivor.
    const lostWith = gate();
    const orphaned = await connectHost(asking!.replica, lostWith.wait);
    orphaned.route.to = survivor!.replica;
    await orphaned.client.listTools(); // the survivor has the session: only the store is missing
    orphaned.route.to = asking!.replica;
    const resumed = outcomeOf(
      orphaned.client.callTool({ name: 'ask__echo', arguments: { text: 'outage-resumed' } }),
    );
    await orphaned.question;
    const answeredLate = gate();
    const waiting = await connectHost(survivor!.replica, answeredLate.wait);
    const answered = outcomeOf(
      waiting.client.callTool({ name: 'ask__echo', arguments: { text: 'outage-answered' } }),
    );
    await waiting.question;

    // The store hangs: it holds every connection and answers nothing.
    redis!.kill('SIGSTOP');
    orphaned.route.to = survivor!.replica;
    asking!.replica.child.kill('SIGKILL');
    await asking!.replica.exited;
    // The survivor cannot tell whether the replica is gone, nor claim the call: the stream fails.
    expect(await resumed).toMatch(/could not be resumed/);
    expect(await resumed).toMatch(names);
    // The user answers on the survivor: the answer cannot be claimed, so the call does not run.
    answeredLate.open();
    expect(await answered).toMatch(names);
    // A new call cannot have its turn or its confirmation recorded: it is refused, not asked.
    const refused = await outcomeOf(
      waiting.client.callTool({ name: 'ask__echo', arguments: { text: 'outage-new' } }),
    );
    expect(refused).toMatch(names);
    expect(waiting.questions()).toBe(1);

    // The store dies, and comes back empty on the same port.
    const stopped = new Promise((resolve) => redis!.once('exit', resolve));
    redis!.kill('SIGKILL');
    await stopped;
    redis = (await startRedis(PASSWORD, { port: redisPort })).process;
    await survivor!.replica.waitForStderr(/is reachable again/);
    lostWith.open();
    const after = gate();
    const next = await connectHost(survivor!.replica, after.wait);
    after.open();
    expect(
      await outcomeOf(next.client.callTool({ name: 'ask__echo', arguments: { text: 'after-outage' } })),
    ).toBe('after-outage');
    // Nothing asked during the outage ran, anywhere, then or after.
    for (const text of ['outage-resumed', 'outage-answered', 'outage-new'])
      expect([asking, survivor].flatMap((r) => okCalls(r!.audit, text))).toHaveLength(0);
    expect(okCalls(survivor!.audit, 'after-outage')).toHaveLength(1);
    await Promise.all([orphaned.close(), waiting.close(), next.close()]);
  }, 120_000);
});
