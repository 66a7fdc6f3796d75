/**
 * `rateLimits:` served in-process (`startServing` on the config file, over stdio and with
 * `--http`), with the SDK Client as host: calls beyond a bucket are refused with a result that
 * says when to try again, never reach the upstream, and the audit trail holds one record for
 * the burst, not one per refused call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { FAST_GATEWAY, fixture, readAudit, tempDir, textOf, writeConfig } from '../integration/harness.js';
import { connectHttpHost, postRpc } from '../integration/httpHarness.js';
import { envelope, MODERN } from '../fixtures/modernHost.js';
import { serveHttpInProcess, type ServedHttp } from './served.js';
import { servedPerTest } from './perTest.js';

const served = servedPerTest();

describe('rate limits', () => {
  it('refuses calls beyond the burst with when to retry, unrun, and audits the burst once', async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        rateLimits: [{ server: 'up', tool: 'echo', rate: '2/hour' }],
        servers: { up: fixture() },
      },
      dir,
    );
    const host = await served.connect(config);
    const results = [];
    for (let i = 0; i < 5; i++)
      results.push(await host.client.callTool({ name: 'up__echo', arguments: { text: `n${i}` } }));
    expect(results.slice(0, 2).map((r) => textOf(r))).toEqual(['n0', 'n1']);
    for (const refused of results.slice(2)) {
      expect(refused.isError).toBe(true);
      // A token comes back every 30 minutes; the wait counts down from the first call.
      expect(textOf(refused)).toMatch(
        /^\[mcp-warden\] Rate limit reached for tool "echo" on server "up" \(rateLimits\[0\]: 2\/hour, burst 2, per principal\)\. Try again in 1[78]\d\d s\. The call was not run\.$/,
      );
      const wait = (refused._meta as Record<string, number>)['mcp-warden/retryAfter']!;
      expect(wait).toBeGreaterThan(1700);
      expect(wait).toBeLessThanOrEqual(1800);
      expect(textOf(refused)).toContain(`Try again in ${wait} s.`);
    }
    // Another tool of the same server is not bounded by the rule.
    expect(textOf(await host.client.callTool({ name: 'up__add', arguments: { a: 1, b: 2 } }))).toBe('3');
    await host.close();
    const records = readAudit(path.join(dir, 'audit.jsonl'));
    const calls = records.filter((r) => r.type === 'call');
    expect(calls.map((c) => c.upstreamTool)).toEqual(['echo', 'echo', 'add']);
    const bursts = records.filter((r) => r.type === 'rate_limited');
    expect(bursts).toHaveLength(1);
    expect(bursts[0]).toMatchObject({ phase: 'begin', rule: 0, rate: '2/hour', server: 'up', tool: 'echo' });
    expect(bursts[0]!.principal).toBeDefined();
  });
});

describe('rate limits on the HTTP listener', () => {
  let gateway: ServedHttp | undefined;
  afterEach(async () => {
    await gateway?.stop();
    gateway = undefined;
  });

  /** A gateway whose echo tool takes one call an hour. */
  const startLimitedGateway = () =>
    serveHttpInProcess(
      writeConfig({
        gateway: FAST_GATEWAY,
        rateLimits: [{ tool: 'echo', rate: '1/hour' }],
        servers: { up: fixture() },
      }),
    );

  /** The refusal's result, after checking it is a 429 whose Retry-After the result repeats. */
  const refusedResult = (refused: { status: number; headers: Headers; text: string }) => {
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThan(3500);
    expect(wait).toBeLessThanOrEqual(3600);
    const answer = JSON.parse(refused.text) as { id: number; result: Record<string, unknown> };
    expect(answer.result.isError).toBe(true);
    expect(textOf(answer.result)).toContain(`Try again in ${wait} s.`);
    return answer;
  };

  /** A POST calling `up__echo` with "hi", with `params` added to the call's and `headers`. */
  const echoCall = (id: number, params: Record<string, unknown>, headers: Record<string, string>) =>
    postRpc(
      gateway!.url,
      {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'up__echo', arguments: { text: 'hi' }, ...params },
      },
      headers,
    );

  it('answers a stateless request beyond the limit with 429 and Retry-After, the result saying the same', async () => {
    gateway = await startLimitedGateway();
    const call = (id: number) =>
      echoCall(
        id,
        { _meta: envelope() },
        { 'Mcp-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'up__echo' },
      );
    const first = await call(1);
    expect(first.status).toBe(200);
    refusedResult(await call(2));
  });

  it('answers a 2025-11-25 session’s call beyond the limit with 429 and Retry-After, before any stream is opened', async () => {
    gateway = await startLimitedGateway();
    const session = await connectHttpHost(gateway.url);
    try {
      const headers = {
        'Mcp-Session-Id': session.transport.sessionId!,
        'Mcp-Protocol-Version': '2025-11-25',
      };
      const call = (id: number) => echoCall(id, {}, headers);
      const first = await call(1);
      expect(first.status).toBe(200);
      expect(first.text).toContain('"text":"hi"');
      const refused = await call(2);
      expect(refused.headers.get('content-type')).toBe('application/json');
      expect(refusedResult(refused).id).toBe(2);
      // The SDK's client sees the refusal as the HTTP error it is, with the status and the result.
      await expect(
        session.client.callTool({ name: 'up__echo', arguments: { text: 'again' } }),
      ).rejects.toMatchObject({ code: 429, message: expect.stringContaining('Try again in') });
    } finally {
      await session.close();
    }
  });
});
