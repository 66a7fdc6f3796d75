/**
 * Two gateway replicas behind a real HAProxy that routes on `Mcp-Session-Id`, with tokens from a
 * real issuer: sessions stay on their replica, each replica keeps its own audit trail, and a
 * request that reaches a replica without its session (a rolling restart) gets 404 "session not
 * found" at once, never a hang. HAProxy is a Debian package that .ci/run installs; these tests are
 * skipped, saying so, only where it is not installed.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, MODERN } from '../fixtures/modernHost.js';
import { FAST_GATEWAY, fixture, readAudit, tempDir, textOf, writeConfig } from './harness.js';
import { hasHaproxy, startHaproxy } from './haproxy.js';
import { connectHttpHost, postRpc, startHttpGateway, type HttpGateway } from './httpHarness.js';

const TITLE = hasHaproxy
  ? 'replicas behind HAProxy'
  : 'replicas behind HAProxy (skipped: haproxy is not installed)';
const AUDIENCE = 'https://warden.test/mcp';
const KEY = 'a-session-key-shared-by-both-replicas-0123456789';

describe.skipIf(!hasHaproxy)(TITLE, () => {
  let issuer: OAuth2Server;
  let haproxy: ChildProcess | undefined;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  let lb: string;

  const token = (sub: string) =>
    issuer.issuer.buildToken({
      scopesOrTransform: (_h, p) => {
        p.sub = sub;
        p.aud = AUDIENCE;
      },
    });

  beforeAll(async () => {
    issuer = new OAuth2Server();
    await issuer.issuer.keys.generate('RS256');
    await issuer.start(0, '127.0.0.1');
    for (const name of ['one', 'two']) {
      const dir = tempDir();
      const audit = path.join(dir, 'audit.jsonl');
      audits.push(audit);
      const config = writeConfig(
        {
          gateway: FAST_GATEWAY,
          // Behind the balancer the Host header is its address: allowed by name.
          listen: {
            http: '127.0.0.1:0',
            sessionKey: '${MCP_WARDEN_SESSION_KEY}',
            allowedHosts: ['127.0.0.1'],
          },
          auth: { issuer: issuer.issuer.url, audience: AUDIENCE },
          audit: { file: audit },
          servers: { up: fixture(['--name', name]) },
        },
        dir,
      );
      replicas.push(await startHttpGateway(config, { env: { MCP_WARDEN_SESSION_KEY: KEY } }));
    }
    const balancer = await startHaproxy(
      replicas.map((r) => new URL(r.base).host),
      [
        '  stick-table type string len 128 size 10k expire 30m',
        '  stick store-response res.hdr(mcp-session-id)',
        '  stick match req.hdr(mcp-session-id)',
      ],
    );
    haproxy = balancer.process;
    lb = balancer.url;
  });

  afterAll(async () => {
    haproxy?.kill('SIGTERM');
    await Promise.all(replicas.map((r) => r.stop()));
    await issuer.stop();
  });

  it('keeps each session on its replica, one audit trail each, spreads stateless requests, and a session elsewhere is a fast 404', async () => {
    const alice = await connectHttpHost(`${lb}/mcp`, { token: await token('alice') });
    const bob = await connectHttpHost(`${lb}/mcp`, { token: await token('bob') });
    for (let i = 0; i < 3; i++) {
      expect(textOf(await alice.client.callTool({ name: 'up__echo', arguments: { text: `a${i}` } }))).toBe(
        `a${i}`,
      );
      expect(textOf(await bob.client.callTool({ name: 'up__echo', arguments: { text: `b${i}` } }))).toBe(
        `b${i}`,
      );
    }
    // Round robin put the two sessions on different replicas; each trail has one principal's calls.
    const subjects = audits.map((file) => [
      ...new Set(
        readAudit(file).flatMap((r) =>
          r.type === 'call' ? [(r.principal as { subject: string }).subject] : [],
        ),
      ),
    ]);
    expect(subjects.map((s) => s.length)).toEqual([1, 1]);
    expect(subjects.flat().sort()).toEqual(['alice', 'bob']);
    // Stateless (2026-07-28) requests carry no session: the balancer spreads them, and either
    // replica answers them as the same principal.
    const carol = `Bearer ${await token('carol')}`;
    for (let i = 0; i < 8; i++) {
      const answer = await postRpc(
        `${lb}/mcp`,
        {
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'up__echo', arguments: { text: `c${i}` }, _meta: envelope() },
        },
        {
          Authorization: carol,
          'Mcp-Protocol-Version': MODERN,
          'Mcp-Method': 'tools/call',
          'Mcp-Name': 'up__echo',
        },
      );
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toMatchObject({ result: { content: [{ text: `c${i}` }] } });
    }
    // Round robin also counts the sessions' own requests (their GET streams), so the split need
    // not be even; what matters is that both replicas served carol and nothing was lost.
    const carolCalls = audits.map(
      (file) =>
        readAudit(file).filter(
          (r) => r.type === 'call' && (r.principal as { subject: string }).subject === 'carol',
        ).length,
    );
    expect(carolCalls.every((n) => n > 0)).toBe(true);
    expect(carolCalls[0]! + carolCalls[1]!).toBe(8);

    // Alice's session sent straight to the other replica: recognised as sealed by the shared key.
    const aliceOn = subjects.findIndex((s) => s[0] === 'alice');
    const other = replicas[1 - aliceOn]!;
    const elsewhere = await postRpc(
      other.url,
      { jsonrpc: '2.0', id: 5, method: 'ping' },
      {
        Authorization: `Bearer ${await token('alice')}`,
        'Mcp-Session-Id': alice.transport.sessionId!,
        'Mcp-Protocol-Version': '2025-11-25',
      },
    );
    expect(elsewhere.status).toBe(404);
    await other.waitForStderr('belongs to another replica');

    // A rolling restart: alice's replica stops. Her next request goes to the other one, which
    // answers 404 session not found; a fresh session then works.
    expect(await replicas[aliceOn]!.stop()).toBe(0);
    await expect(alice.client.callTool({ name: 'up__echo', arguments: { text: 'after' } })).rejects.toThrow(
      /404|Session not found/,
    );
    const again = await connectHttpHost(`${lb}/mcp`, { token: await token('alice') });
    expect(textOf(await again.client.callTool({ name: 'up__echo', arguments: { text: 'back' } }))).toBe(
      'back',
    );
    await again.close();
    await bob.close();
  });
});
