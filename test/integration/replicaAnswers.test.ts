/**
 * Questions asked inside a 2025-11-25 session, answered through another replica: two gateway
 * replicas share a real `redis-server` behind a real HAProxy that routes round robin without
 * stickiness. The host is the SDK's Client. The gateway's own confirmation and a question a
 * legacy upstream server asks in the middle of a call are both asked by the replica running the
 * call, and the host's answer is steered (through the balancer) to the other replica, which
 * sends it on. When the replica that asked is killed while the user decides, the session goes
 * on: the host's retry of the call completes on the survivor.
 */
import type { ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAskingFixture, type AskingFixture } from '../fixtures/asking-http-server.mjs';
import { fixture, readAudit, textOf } from './harness.js';
import { hasHaproxy, startHaproxy } from './haproxy.js';
import type { HttpGateway } from './httpHarness.js';
import { hasRedis, startRedis, startStoreReplica } from './redis.js';

const missing = [!hasRedis && 'redis-server', !hasHaproxy && 'haproxy'].filter(Boolean).join(' and ');
const TITLE =
  missing === ''
    ? "answers to a session's questions that reach another replica"
    : `answers to a session's questions that reach another replica (skipped: ${missing} is not installed)`;
const PASSWORD = 'redis-password-for-the-answers-test';

type Json = Record<string, unknown>;

/** What the host's fetch saw: which replica (HAProxy's server name) served each call and answer. */
interface Routed {
  readonly kind: 'call' | 'answer' | 'other';
  readonly replica: string | null;
}

describe.skipIf(missing !== '')(TITLE, () => {
  let redis: ChildProcess | undefined;
  let haproxy: ChildProcess | undefined;
  let upstream: AskingFixture;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  let lb: string;

  async function startReplica(redisPort: number): Promise<HttpGateway> {
    const { replica, audit } = await startStoreReplica({
      redisPort,
      password: PASSWORD,
      config: {
        confirmation: { methods: ['elicitation'] },
        servers: { ask: fixture(), asking: { url: upstream.url } },
      },
    });
    audits.push(audit);
    return replica;
  }

  beforeAll(async () => {
    upstream = await startAskingFixture({ together: 1 });
    const started = await startRedis(PASSWORD);
    redis = started.process;
    replicas.push(await startReplica(started.port), await startReplica(started.port));
    // Round robin; HAProxy names the replica that served each response, and a request may ask
    // for one by name (the test steers an answer to the replica that did not ask).
    const balancer = await startHaproxy(
      replicas.map((r) => new URL(r.base).host),
      [
        'http-response set-header X-Replica %s',
        'use-server w0 if { req.hdr(x-want-replica) -m str w0 }',
        'use-server w1 if { req.hdr(x-want-replica) -m str w1 }',
      ],
    );
    haproxy = balancer.process;
    lb = balancer.url;
  }, 60_000);

  afterAll(async () => {
    haproxy?.kill('SIGTERM');
    await Promise.all(replicas.map((r) => r.stop()));
    redis?.kill('SIGTERM');
    await upstream.close();
  });

  /**
   * A host connected through the balancer, whose answers to the gateway's questions are sent to
   * the replica that did not serve the call (while `steer` is on), and which answers each
   * question with `answer`.
   */
  async function connectHost(answer: (message: string) => Promise<ElicitResult> | ElicitResult) {
    const routed: Routed[] = [];
    let lastCall: string | null = null;
    const state = { steer: true };
    const client = new Client(
      { name: 'replica-host', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, (request) => answer(String(request.params.message)));
    const transport = new StreamableHTTPClientTransport(new URL(`${lb}/mcp`), {
      fetch: async (url, init) => {
        const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Json) : undefined;
        const kind: Routed['kind'] =
          body?.method === 'tools/call'
            ? 'call'
            : body !== undefined && !('method' in body) && 'id' in body
              ? 'answer'
              : 'other';
        const headers = new Headers(init?.headers);
        if (kind === 'answer' && state.steer && lastCall !== null)
          headers.set('x-want-replica', lastCall === 'w0' ? 'w1' : 'w0');
        const response = await fetch(url, { ...init, headers });
        const replica = response.headers.get('x-replica');
        if (kind === 'call') lastCall = replica;
        routed.push({ kind, replica });
        return response;
      },
    });
    await client.connect(transport);
    return {
      client,
      transport,
      routed,
      state,
      close: async () => {
        await transport.terminateSession().catch(() => {});
        await client.close();
      },
    };
  }

  const okCalls = (audit: string, text: string) =>
    readAudit(audit).filter(
      (r) => r.type === 'call' && (r.args as Json | undefined)?.text === text && r.outcome === 'ok',
    ).length;

  /** The replica (0 or 1) that HAProxy's name `w0`/`w1` is. */
  const indexOf = (name: string | null) => (name === 'w0' ? 0 : name === 'w1' ? 1 : -1);

  it('completes a call whose confirmation the host answers through the other replica', async () => {
    const host = await connectHost(() => ({ action: 'accept', content: {} }));
    const result = await host.client.callTool({ name: 'ask__echo', arguments: { text: 'crossed' } });
    expect(textOf(result)).toBe('crossed');
    const call = host.routed.find((r) => r.kind === 'call')!;
    const answer = host.routed.find((r) => r.kind === 'answer')!;
    expect([call.replica, answer.replica]).toEqual([call.replica, call.replica === 'w0' ? 'w1' : 'w0']);
    // The call ran once, on the replica that asked; the other one sent the answer on.
    const asker = indexOf(call.replica);
    expect(okCalls(audits[asker]!, 'crossed')).toBe(1);
    expect(okCalls(audits[1 - asker]!, 'crossed')).toBe(0);
    // The other replica logs the hand-over from its own process: wait for the line, not a read race.
    await replicas[1 - asker]!.waitForStderr(/was sent on to replica \S+, which asked/);
    await host.close();
    // The first call of a replica waits for its upstreams to start, which a loaded machine takes a while over.
  }, 60_000);

  it("completes a call whose upstream server's own question the host answers through the other replica", async () => {
    const host = await connectHost((message) => ({ action: 'accept', content: { by: `host: ${message}` } }));
    const result = await host.client.callTool({ name: 'asking__ask', arguments: { label: 'mid-call' } });
    expect(JSON.parse(textOf(result))).toEqual({
      label: 'mid-call',
      answer: { action: 'accept', content: { by: 'host: [asking] question of mid-call' } },
    });
    const call = host.routed.find((r) => r.kind === 'call')!;
    const answers = host.routed.filter((r) => r.kind === 'answer');
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((a) => a.replica !== call.replica)).toBe(true);
    await host.close();
  });

  it('goes on when the replica that asked is killed while the user decides and the host gives up on the call: its retry completes on the survivor', async () => {
    let release!: () => void;
    const decided = new Promise<void>((resolve) => (release = resolve));
    let asked!: () => void;
    const question = new Promise<void>((resolve) => (asked = resolve));
    let questions = 0;
    const host = await connectHost(async () => {
      questions++;
      asked();
      await decided;
      return { action: 'accept', content: {} };
    });
    // Answers go where the balancer sends them: to the survivor, once one replica is dead.
    host.state.steer = false;
    const disconnected = new Promise<void>((resolve) => {
      host.transport.onerror = (error) => {
        if (/disconnected|terminated|fetch failed|socket/i.test(error.message)) resolve();
      };
    });
    const giveUp = new AbortController();
    const first = host.client
      .callTool({ name: 'ask__echo', arguments: { text: 'after-kill' } }, undefined, {
        signal: giveUp.signal,
      })
      .then(
        () => 'answered',
        (error: Error) => error.message,
      );
    await question;
    const asker = indexOf(host.routed.find((r) => r.kind === 'call')!.replica);
    const dying = replicas[asker]!;
    const survivor = replicas[1 - asker]!;
    dying.child.kill('SIGKILL');
    await dying.exited;
    // The host sees the call's stream break, and gives up on that call.
    await disconnected;
    giveUp.abort();
    expect(await first).not.toBe('answered');
    // The host cancelled the call it gave up on (through the survivor): the user's answer to the
    // dead replica's question reaches the survivor, which runs nothing with it.
    release();
    await survivor.waitForStderr(
      /the host cancelled its call: dropped|the host cancelled the call of request|was taken over here/,
    );
    // The session goes on: the host calls again, the survivor asks again, and the call completes.
    const retried = await host.client.callTool({ name: 'ask__echo', arguments: { text: 'after-kill' } });
    expect(textOf(retried)).toBe('after-kill');
    expect(questions).toBe(2);
    expect(okCalls(audits[1 - asker]!, 'after-kill')).toBe(1);
    expect(okCalls(audits[asker]!, 'after-kill')).toBe(0);
    await host.close();
  });
});
