/**
 * A question a legacy upstream server asks in the middle of a stateless (2026-07-28) call,
 * answered through another replica: two gateway replicas share a real `redis-server`, and the
 * host's retry (carrying the answers and the sealed `requestState`) is posted to the replica
 * that did not ask, with no stickiness of any kind. That replica sends the retry on to the one
 * holding the call, which checks it as if it had come there and continues the call; the answer
 * comes back the same way. A retry by another principal, or one used before, is refused on
 * either replica; when the replica holding the call is killed or stopped, the other says the call
 * was lost. A third replica shows a call whose retries, round after round, land on different ones.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, MODERN, type Json, type RpcAnswer } from '../fixtures/modernHost.js';
import { fixture, readAudit, textOf } from './harness.js';
import { postRpc, suiteIssuer, type HttpGateway } from './httpHarness.js';
import { modernResult } from './modernWire.js';
import { hasRedis, startRedis, startStoreReplica } from './redis.js';

const TITLE = hasRedis
  ? "a stateless call's retry that reaches the replica not holding the call"
  : "a stateless call's retry that reaches the replica not holding the call (skipped: redis-server is not installed)";
const PASSWORD = 'redis-password-for-the-retries-test';
const AUDIENCE = 'https://warden.test/mcp';
const TOOL = 'up__ask_client';

describe.skipIf(!hasRedis)(TITLE, () => {
  const issuer = suiteIssuer(AUDIENCE);
  let redis: ChildProcess | undefined;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  let nextId = 1;

  beforeAll(async () => {
    const started = await startRedis(PASSWORD);
    redis = started.process;
    for (let i = 0; i < 3; i++) {
      const { replica, audit } = await startStoreReplica({
        redisPort: started.port,
        password: PASSWORD,
        config: {
          auth: { issuer: issuer.url(), audience: AUDIENCE },
          servers: { up: fixture() },
        },
      });
      replicas.push(replica);
      audits.push(audit);
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    redis?.kill('SIGTERM');
  });

  /** The answer to a POST, whether it came as JSON or as an SSE stream ending with it. */
  const answerOf = (text: string): RpcAnswer => {
    if (!text.startsWith('event:') && !text.startsWith(':')) return JSON.parse(text) as RpcAnswer;
    const data = text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as RpcAnswer & { method?: string });
    return data.filter((m) => m.method === undefined).at(-1)!;
  };

  /**
   * Posts the tool call (a retry when `extra` carries one) to `url` as `user`; the upstream asks
   * `rounds` questions, one after the other, before it answers.
   */
  async function call(
    url: string,
    user: string,
    label: string,
    extra: Json = {},
    rounds = 1,
  ): Promise<RpcAnswer> {
    const posted = await postRpc(
      url,
      {
        jsonrpc: '2.0',
        id: nextId++,
        method: 'tools/call',
        params: {
          name: TOOL,
          arguments: {
            method: 'elicitation/create',
            params: {
              message: `question of ${label}`,
              requestedSchema: { type: 'object', properties: { pick: { type: 'string' } } },
            },
            ...(rounds > 1 && { rounds }),
          },
          _meta: envelope(),
          ...extra,
        },
      },
      {
        Authorization: `Bearer ${await issuer.token(user)}`,
        'Mcp-Protocol-Version': MODERN,
        'Mcp-Method': 'tools/call',
        'Mcp-Name': TOOL,
      },
    );
    return answerOf(posted.text);
  }

  /** Asks through `url`: the upstream's question, its key, and the state to retry with. */
  async function ask(url: string, user: string, label: string, rounds = 1) {
    return question(await call(url, user, label, {}, rounds), label);
  }

  /** The upstream's question in `answer`, its key, and the state to retry with. */
  function question(answer: RpcAnswer, label: string) {
    const asked = modernResult('tools/call', answer);
    expect(asked).toMatchObject({ resultType: 'input_required' });
    const [key, question] = Object.entries(asked.inputRequests as Record<string, Json>)[0]!;
    expect(question).toMatchObject({
      method: 'elicitation/create',
      params: { message: `[up] question of ${label}` },
    });
    return { key, requestState: asked.requestState as string };
  }

  const retry = (
    url: string,
    user: string,
    label: string,
    asked: { key: string; requestState: string },
    rounds = 1,
  ) =>
    call(
      url,
      user,
      label,
      {
        inputResponses: { [asked.key]: { action: 'accept', content: { pick: `picked for ${label}` } } },
        requestState: asked.requestState,
      },
      rounds,
    );

  const callsOf = (audit: string, label: string) =>
    readAudit(audit).filter(
      (r) =>
        r.type === 'call' &&
        ((r.args as Json | undefined)?.params as Json | undefined)?.message === `question of ${label}`,
    );
  const sessionOf = (audit: string) => readAudit(audit).find((r) => r.type === 'gateway_start')!.session;

  it('continues the call on the replica that asked, once, with the answers given through the other', async () => {
    const [a, b] = replicas as [HttpGateway, HttpGateway];
    const asked = await ask(a.url, 'alice', 'across');
    const final = await retry(b.url, 'alice', 'across', asked);
    expect(JSON.parse(textOf(modernResult('tools/call', final)))).toEqual({
      result: { action: 'accept', content: { pick: 'picked for across' } },
    });
    // It ran once, on the replica holding it, whose record names the one the retry reached.
    await expect.poll(() => callsOf(audits[0]!, 'across').length).toBe(1);
    expect(callsOf(audits[0]!, 'across')[0]).toMatchObject({
      outcome: 'ok',
      continuedVia: [sessionOf(audits[1]!)],
    });
    expect(callsOf(audits[1]!, 'across')).toEqual([]);
    await b.waitForStderr(/sent on to replica \S+, which holds its call/);

    // The same state again is refused, on either replica, and nothing more runs.
    for (const url of [b.url, a.url]) {
      const replay = await retry(url, 'alice', 'across', asked);
      expect(replay.error?.code).toBe(-32602);
      expect(replay.error?.message).toContain('requestState refused');
    }
    expect(callsOf(audits[0]!, 'across')).toHaveLength(1);
  });

  it('names every replica the retries of a call came through, in the order they first did, each once', async () => {
    const [a, b, c] = replicas as [HttpGateway, HttpGateway, HttpGateway];
    // Four questions, one after the other, on A; the retries reach B, C, B again, and A itself.
    let asked = await ask(a.url, 'alice', 'rounds', 4);
    for (const via of [b, c, b])
      asked = question(await retry(via.url, 'alice', 'rounds', asked, 4), 'rounds');
    const final = await retry(a.url, 'alice', 'rounds', asked, 4);
    expect(JSON.parse(textOf(modernResult('tools/call', final)))).toEqual({
      result: { action: 'accept', content: { pick: 'picked for rounds' } },
    });
    await expect.poll(() => callsOf(audits[0]!, 'rounds').length).toBe(1);
    expect(callsOf(audits[0]!, 'rounds')[0]).toMatchObject({
      outcome: 'ok',
      continuedVia: [sessionOf(audits[1]!), sessionOf(audits[2]!)],
    });
    expect([...callsOf(audits[1]!, 'rounds'), ...callsOf(audits[2]!, 'rounds')]).toEqual([]);
  });

  it("refuses another principal's retry through the other replica, and the call still waits for its own", async () => {
    const [a, b] = replicas as [HttpGateway, HttpGateway];
    const asked = await ask(a.url, 'alice', 'stolen');
    const stolen = await retry(b.url, 'mallory', 'stolen', asked);
    expect(stolen.error?.code).toBe(-32602);
    expect(stolen.error?.message).toContain('requestState refused');
    expect(stolen.error?.message).toContain('belongs to another principal');
    // The refusal took nothing from alice: her own retry, through the same replica, completes.
    const final = await retry(b.url, 'alice', 'stolen', asked);
    expect(JSON.parse(textOf(modernResult('tools/call', final)))).toMatchObject({
      result: { action: 'accept' },
    });
    await expect.poll(() => callsOf(audits[0]!, 'stolen').length).toBe(1);
    expect(callsOf(audits[0]!, 'stolen')[0]?.principal).toMatchObject({ subject: 'alice' });
  });

  it('says the call was lost with its replica when the replica that asked does not answer in time', async () => {
    const [a, b] = replicas as [HttpGateway, HttpGateway];
    const asked = await ask(b.url, 'alice', 'stopped');
    // Stopped, it still holds its store connections: the retry is published to it, and nothing answers.
    b.child.kill('SIGSTOP');
    try {
      const lost = await retry(a.url, 'alice', 'stopped', asked);
      expect(lost.error?.message).toMatch(
        /the call this requestState continues was lost with replica \S+, which held it: it did not answer within 2000 ms/,
      );
    } finally {
      b.child.kill('SIGCONT');
    }
    // Woken, it is told to drop the retry: the host's own retry there then completes the call or
    // is refused, and the call never runs twice.
    const direct = await retry(b.url, 'alice', 'stopped', asked);
    expect(direct.error === undefined || direct.error.message.includes('requestState refused')).toBe(true);
    expect(callsOf(audits[1]!, 'stopped').filter((r) => r.outcome === 'ok').length).toBeLessThanOrEqual(1);
  });

  it('says the call was lost with its replica when the replica that asked is killed', async () => {
    const [a, b] = replicas as [HttpGateway, HttpGateway];
    const asked = await ask(a.url, 'alice', 'killed');
    a.child.kill('SIGKILL');
    await a.exited;
    const lost = await retry(b.url, 'alice', 'killed', asked);
    expect(lost.error?.message).toMatch(
      /the call this requestState continues was lost with replica \S+, which held it/,
    );
  });
});
