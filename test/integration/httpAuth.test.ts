/**
 * The HTTP listener as an OAuth 2.1 resource server, through the built binary: what needs the
 * gateway's own process (the descriptors it holds open) or the CLI (`policy explain` with a
 * principal). Every other scenario runs in-process in test/inprocess/httpAuth.test.ts.
 */
import { connect, type Socket } from 'node:net';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { authConfig, PRINCIPAL_POLICY, startIssuer } from './authIssuer.js';
import { runCli } from './harness.js';
import { startHttpGateway, type HttpGateway } from './httpHarness.js';

let issuer: OAuth2Server;
let issuerUrl: string;

beforeAll(async () => {
  ({ server: issuer, url: issuerUrl } = await startIssuer());
});
afterAll(async () => {
  await issuer.stop();
});

let gateway: HttpGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

function setup(auth: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return authConfig(issuerUrl, auth, extra);
}

describe('HTTP listener with auth:', () => {
  it('closes the connections of refused clients that drip their body: open descriptors return to baseline', async () => {
    const { config } = setup();
    gateway = await startHttpGateway(config);
    const openFds = () => readdirSync(`/proc/${gateway!.child.pid}/fd`).length;
    const baseline = openFds();
    const port = Number(new URL(gateway.url).port);
    const clients: Socket[] = [];
    const closed = new Set<Socket>();
    const heads: Promise<string>[] = [];
    for (let i = 0; i < 60; i++) {
      const socket = connect(port, '127.0.0.1');
      clients.push(socket);
      socket.on('error', () => {});
      socket.on('close', () => closed.add(socket));
      let text = '';
      heads.push(
        new Promise((resolve) => {
          socket.on('data', (chunk: Buffer) => {
            text += chunk.toString('latin1');
            if (text.includes('\r\n\r\n')) resolve(text);
          });
          socket.on('close', () => resolve(text));
        }),
      );
      // No token, and a body announced far larger than what comes, a byte at a time.
      socket.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
      );
    }
    const drip = setInterval(() => {
      for (const socket of clients) if (!socket.destroyed) socket.write('x');
    }, 50);
    try {
      for (const head of await Promise.all(heads))
        expect(head).toMatch(/^HTTP\/1\.1 401[^]*connection: close/i);
      // The gateway ends each connection itself while the clients are still sending.
      await expect.poll(() => closed.size, { timeout: 10_000 }).toBe(clients.length);
      await expect.poll(openFds, { timeout: 10_000 }).toBeLessThanOrEqual(baseline + 2);
    } finally {
      clearInterval(drip);
      for (const socket of clients) socket.destroy();
    }
  });
});

describe('policy by principal', () => {
  it('policy explain takes the principal and its claims', async () => {
    const { config, dir } = setup({}, { policies: ['policy.yaml'] });
    writeFileSync(path.join(dir, 'policy.yaml'), PRINCIPAL_POLICY);
    const explain = (subject: string, group: string, ...args: string[]) =>
      runCli([
        'policy',
        'explain',
        '--config',
        config,
        'up__echo',
        ...args,
        '--principal',
        subject,
        '--claim',
        `groups=${group}`,
      ]);
    const carol = await explain('carol', 'contractors', '{"text":"x"}');
    expect(carol.stdout).toContain('principal: carol {"groups":"contractors"}');
    expect(carol.stdout).toContain('decision: DENY by rule "contractors-no-echo"');
    const dave = await explain('dave', 'eng');
    expect(dave.stdout).toContain('decision: ALLOW by the default');
    expect(dave.stdout).toContain('principal "dave"\'s groups "eng" does not match "contractors"');
  });
});
