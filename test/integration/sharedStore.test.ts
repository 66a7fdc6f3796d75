/**
 * Two gateway replicas that share a real `redis-server` (`store:`), behind a real HAProxy that
 * routes round robin with no stickiness at all: a rate-limit burst spread over both is counted
 * once, a confirmation asked through one replica is answered through the other, a replica killed
 * while a confirmation waits loses nothing (the retry lands on the survivor and completes), and
 * a sealed request state used once is refused on the other replica. The hosts speak the
 * stateless revision (2026-07-28), whose retries carry the sealed state. redis-server and
 * HAProxy are Debian packages that .ci/run installs; these tests are skipped, saying so, only
 * where one of them is not installed.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, MODERN, type Json, type RpcAnswer } from '../fixtures/modernHost.js';
import { fixture, readAudit, textOf } from './harness.js';
import { hasHaproxy, startHaproxy } from './haproxy.js';
import { connectHttpHost, postRpc, type HttpGateway } from './httpHarness.js';
import { hasRedis, startRedis, startStoreReplica } from './redis.js';
import { modernResult } from './modernWire.js';

const missing = [!hasRedis && 'redis-server', !hasHaproxy && 'haproxy'].filter(Boolean).join(' and ');
const TITLE =
  missing === ''
    ? 'replicas sharing a Redis store behind round-robin HAProxy'
    : `replicas sharing a Redis store (skipped: ${missing} is not installed)`;
const PASSWORD = 'redis-password-for-the-test';

const headersFor = (tool: string) => ({
  'Mcp-Protocol-Version': MODERN,
  'Mcp-Method': 'tools/call',
  'Mcp-Name': tool,
});
const callOf = (id: number, tool: string, text: string, extra: Json = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: tool, arguments: { text }, _meta: envelope(), ...extra },
});
const answerOf = (text: string) => JSON.parse(text) as RpcAnswer;

describe.skipIf(missing !== '')(TITLE, () => {
  let redis: ChildProcess | undefined;
  let haproxy: ChildProcess | undefined;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  let lb: string;
  let nextId = 1;

  /** Starts one replica with the config both share (each with its own audit trail). */
  async function startReplica(redisPort: number): Promise<HttpGateway> {
    const { replica, audit } = await startStoreReplica({
      redisPort,
      password: PASSWORD,
      config: {
        rateLimits: [{ server: 'up', rate: '3/hour', burst: 3 }],
        servers: { up: fixture(), up2: fixture(), ask: fixture() },
      },
    });
    audits.push(audit);
    return replica;
  }

  beforeAll(async () => {
    const started = await startRedis(PASSWORD);
    redis = started.process;
    const redisPort = started.port;
    replicas.push(await startReplica(redisPort), await startReplica(redisPort));
    // Round robin and nothing else: no stick table, no cookie, no hash on a header.
    const balancer = await startHaproxy(replicas.map((r) => new URL(r.base).host));
    haproxy = balancer.process;
    lb = balancer.url;
  }, 60_000);

  afterAll(async () => {
    haproxy?.kill('SIGTERM');
    await Promise.all(replicas.map((r) => r.stop()));
    redis?.kill('SIGTERM');
  });

  const callsIn = (audit: string, text: string) =>
    readAudit(audit).filter((r) => r.type === 'call' && (r.args as Json | undefined)?.text === text);

  it('counts a rate-limit burst spread over both replicas once: 429 with Retry-After beyond it', async () => {
    const answers = [];
    for (let i = 0; i < 6; i++)
      answers.push(
        await postRpc(`${lb}/mcp`, callOf(nextId++, 'up__echo', `burst${i}`), headersFor('up__echo')),
      );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429, 429]);
    for (const refused of answers.slice(3)) {
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(textOf(answerOf(refused.text).result!)).toContain('Rate limit reached');
    }
    // Round robin: both replicas took part, and three calls ran in all.
    const ran = audits.map(
      (file) =>
        [0, 1, 2, 3, 4, 5].filter((i) => callsIn(file, `burst${i}`).some((r) => r.outcome === 'ok')).length,
    );
    expect(ran.every((n) => n > 0)).toBe(true);
    expect(ran[0]! + ran[1]!).toBe(3);
  });

  /** Asks through `url`; the question's key and state. */
  async function ask(url: string, text: string): Promise<{ key: string; requestState: string }> {
    const first = answerOf(
      (await postRpc(url, callOf(nextId++, 'ask__echo', text), headersFor('ask__echo'))).text,
    );
    const asked = modernResult('tools/call', first);
    expect(asked).toMatchObject({ resultType: 'input_required' });
    const [key, question] = Object.entries(asked.inputRequests as Record<string, Json>)[0]!;
    expect(question.method).toBe('elicitation/create');
    return { key, requestState: asked.requestState as string };
  }

  const retry = (url: string, text: string, asked: { key: string; requestState: string }) =>
    postRpc(
      url,
      callOf(nextId++, 'ask__echo', text, {
        inputResponses: { [asked.key]: { action: 'accept', content: {} } },
        requestState: asked.requestState,
      }),
      headersFor('ask__echo'),
    );

  it('serves a confirmation asked through one replica and answered through the other, once', async () => {
    const [a, b] = replicas as [HttpGateway, HttpGateway];
    const asked = await ask(a.url, 'across');
    const final = answerOf((await retry(b.url, 'across', asked)).text);
    expect(textOf(modernResult('tools/call', final))).toBe('across');
    expect(callsIn(audits[1]!, 'across').filter((r) => r.outcome === 'ok')).toHaveLength(1);

    // The same state again, on the replica that asked: refused, nothing runs.
    const replay = answerOf((await retry(a.url, 'across', asked)).text);
    expect(replay.error?.code).toBe(-32602);
    expect(replay.error?.message).toContain('requestState refused: it was already used');
    // And a state used where it was asked is refused on the other replica.
    const here = await ask(a.url, 'here');
    expect(textOf(modernResult('tools/call', answerOf((await retry(a.url, 'here', here)).text)))).toBe(
      'here',
    );
    const elsewhere = answerOf((await retry(b.url, 'here', here)).text);
    expect(elsewhere.error?.message).toContain('requestState refused: it was already used');
    const ok = (text: string) =>
      audits.flatMap((file) => callsIn(file, text)).filter((r) => r.outcome === 'ok').length;
    expect([ok('across'), ok('here')]).toEqual([1, 1]);
  });

  it('serves a 2025-11-25 session on whichever replica a request lands on', async () => {
    // No stickiness: the initialize lands on one replica, the calls alternate between both.
    const host = await connectHttpHost(`${lb}/mcp`, { name: 'session-host' });
    for (let i = 0; i < 4; i++)
      expect(textOf(await host.client.callTool({ name: 'up2__echo', arguments: { text: `s${i}` } }))).toBe(
        `s${i}`,
      );
    // Each replica, asked directly, serves the session as the same host, though only one of
    // them saw its initialize.
    for (const [i, replica] of replicas.entries()) {
      const answer = await postRpc(
        replica.url,
        {
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'up2__echo', arguments: { text: `direct${i}` } },
        },
        { 'Mcp-Session-Id': host.transport.sessionId!, 'Mcp-Protocol-Version': '2025-11-25' },
      );
      expect(answer.status).toBe(200);
      expect(answer.text).toContain(`direct${i}`);
      expect(callsIn(audits[i]!, `direct${i}`).map((r) => r.client)).toEqual([
        { name: 'session-host', version: '1.0.0' },
      ]);
    }
    expect(replicas.some((r) => r.stderr().includes('continued here from the shared store'))).toBe(true);
    await host.close();
  });

  it('loses no pending confirmation when the replica that asked is killed: the retry completes on the survivor', async () => {
    const [a] = replicas as [HttpGateway, HttpGateway];
    const asked = await ask(a.url, 'survives');
    a.child.kill('SIGKILL');
    await a.exited;
    // Through the balancer: its next pick may be the dead replica, which it passes over.
    const final = answerOf((await retry(`${lb}/mcp`, 'survives', asked)).text);
    expect(textOf(modernResult('tools/call', final))).toBe('survives');
    expect(callsIn(audits[1]!, 'survives').filter((r) => r.outcome === 'ok')).toHaveLength(1);
  });

  it('fails at once, saying why, when the store is gone: no limit is waived and no question is left unrecorded', async () => {
    const survivor = replicas[1]!;
    redis!.kill('SIGKILL');
    await new Promise((resolve) => redis!.once('exit', resolve));
    const limited = answerOf(
      (await postRpc(survivor.url, callOf(nextId++, 'up__echo', 'no-store'), headersFor('up__echo'))).text,
    );
    expect(limited.error?.message).toMatch(/Rate limits could not be counted: the store redis:\/\/:\*\*\*@/);
    const asked = answerOf(
      (await postRpc(survivor.url, callOf(nextId++, 'ask__echo', 'no-store'), headersFor('ask__echo'))).text,
    );
    const refused = modernResult('tools/call', asked);
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/was not run/);
    expect(textOf(refused)).toMatch(/store/);
    expect(survivor.stderr()).toMatch(/the store redis:\/\/:\S+@127\.0\.0\.1:\d+\/0 is unreachable/);
    expect(survivor.stderr()).not.toContain(PASSWORD);
  });
});
