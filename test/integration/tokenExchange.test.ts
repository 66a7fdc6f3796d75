/**
 * Token exchange (RFC 8693) to an upstream behind the HTTP listener, against `oidc-provider`
 * with the exchange grant (test/fixtures/exchange-fixture.mjs): the listener validates each
 * principal's token from that provider, and the gateway exchanges it for a token meant for the
 * upstream, which accepts only its own audience. No one signs in to the upstream.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  NODE,
  readAudit,
  ROOT,
  STATE_ENV,
  tempDir,
  textOf,
  writeConfig,
} from './harness.js';
import { connectHttpHost, startHttpGateway, type HttpGateway, type HttpHost } from './httpHarness.js';

describe('token exchange to an upstream (RFC 8693) against oidc-provider', () => {
  let fixture: ChildProcess;
  let issuer: string;
  let resource: string;
  let closedEndpoint: string;
  let auditFile: string;
  let gateway: HttpGateway;
  const hosts: HttpHost[] = [];
  const tokens = new Map<string, string>();

  /** `sub`'s own bearer token for the gateway, as their host's sign-in would give it. */
  const tokenOf = async (sub: string) => {
    const token = await (await fetch(`${issuer}/_test/token?sub=${sub}`)).text();
    tokens.set(sub, token);
    return token;
  };
  const hostOf = async (sub: string) => {
    const host = await connectHttpHost(gateway.url, { token: await tokenOf(sub), name: `${sub}-host` });
    hosts.push(host);
    return host;
  };
  const call = (host: Pick<HttpHost, 'client'>, name: string) =>
    host.client.callTool({ name, arguments: {} });
  const exchanges = async () =>
    (await (await fetch(`${issuer}/_test/exchanges`)).json()) as Record<string, number>;
  /** Every bearer token the upstream was sent. */
  const seen = async () => (await (await fetch(new URL('/_test/seen', resource))).json()) as string[];

  beforeAll(async () => {
    fixture = spawn(NODE, [path.join(ROOT, 'test/fixtures/exchange-fixture.mjs')], {
      env: { PATH: process.env.PATH ?? '', EXCHANGE_TTL: '120', GATEWAY_AUDIENCE: 'mcp-warden' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const line = await new Promise<string>((resolve) =>
      createInterface({ input: fixture.stdout! }).once('line', resolve),
    );
    ({ issuer, resource } = JSON.parse(line) as { issuer: string; resource: string });
    closedEndpoint = `http://127.0.0.1:${await closedPort()}/token`;
    const dir = tempDir('warden-exchange-');
    auditFile = path.join(dir, 'audit.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: auditFile },
        auth: { issuer, audience: 'mcp-warden' },
        servers: {
          // No tokenEndpoint: it is found through the server's protected resource metadata.
          up: {
            url: resource,
            oauth: {
              tokenExchange: {
                clientId: 'warden-exchange',
                clientSecret: '${EXCHANGE_SECRET}',
                scopes: ['mcp'],
              },
            },
          },
          // An identity provider nobody answers at.
          down: {
            url: resource,
            oauth: { tokenExchange: { tokenEndpoint: closedEndpoint, clientId: 'warden-exchange' } },
          },
        },
      },
      dir,
    );
    gateway = await startHttpGateway(config, {
      env: { EXCHANGE_SECRET: 'exchange-secret', MCP_WARDEN_CREDENTIALS: 'file' },
    });
  }, 60_000);

  afterAll(async () => {
    for (const host of hosts) await host.close().catch(() => {});
    await gateway?.stop();
    fixture?.kill();
  });

  it('gives each principal their own identity at the upstream, with no sign-in, and never sends their own token there', async () => {
    const [alice, bob] = [await hostOf('alice'), await hostOf('bob')];
    const names = async () => (await alice.client.listTools()).tools.map((t) => t.name);
    // The server joins when its connection is up, which a loaded machine may take a while for.
    await expect.poll(names, { timeout: 30_000 }).toContain('up__whoami');
    expect(await names()).not.toContain('up__authorize');
    expect(textOf(await call(alice, 'up__whoami'))).toBe('alice');
    expect(textOf(await call(bob, 'up__whoami'))).toBe('bob');
    // Concurrent calls while a token is held make no new exchange.
    const again = await Promise.all([
      call(alice, 'up__whoami'),
      call(bob, 'up__whoami'),
      call(alice, 'up__whoami'),
    ]);
    expect(again.map(textOf)).toEqual(['alice', 'bob', 'alice']);
    expect(await exchanges()).toMatchObject({ alice: 1, bob: 1 });

    const sent = await seen();
    expect(sent.length).toBeGreaterThan(0);
    expect(sent).not.toContain(tokens.get('alice'));
    expect(sent).not.toContain(tokens.get('bob'));
  }, 60_000);

  it('an exchange the identity provider refuses is a clear isError naming the server and the reason', async () => {
    const mallory = await hostOf('mallory');
    const result = await call(mallory, 'up__whoami');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('"up"');
    expect(textOf(result)).toContain(
      'the identity provider refused the exchange: invalid_grant (mallory may not act at this resource)',
    );
    expect((await exchanges()).refused).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('with fallback: signIn, a principal whose exchange is refused is offered the sign-in instead of an error', async () => {
    // A gateway of its own, so that no one else's exchange is counted with the others here.
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      auth: { issuer, audience: 'mcp-warden' },
      servers: {
        signin: {
          url: resource,
          oauth: {
            clientId: 'team-host',
            tokenExchange: {
              clientId: 'warden-exchange',
              clientSecret: 'exchange-secret',
              fallback: 'signIn',
            },
          },
        },
      },
    });
    const signing = await startHttpGateway(config, { env: { MCP_WARDEN_CREDENTIALS: 'file' } });
    try {
      const mallory = await connectHttpHost(signing.url, {
        token: await tokenOf('mallory'),
        name: 'mallory-host',
      });
      hosts.push(mallory);
      const names = async () => (await mallory.client.listTools()).tools.map((t) => t.name);
      await expect.poll(names, { timeout: 30_000 }).toContain('signin__authorize');
      expect(await names()).not.toContain('signin__whoami');
      const asked = await call(mallory, 'signin__whoami');
      expect(textOf(asked)).not.toContain('refused the exchange');
      expect(textOf(asked)).toContain('mcp-warden auth login signin');
      const authorize = await call(mallory, 'signin__authorize');
      // The sign-in page at the identity provider, for mallory's own sign-in to the server.
      expect(textOf(authorize)).toContain('Open this URL in a browser and sign in');
      expect(textOf(authorize)).toContain(`${issuer}/auth?response_type=code&client_id=team-host`);
    } finally {
      await signing.stop();
    }
  }, 60_000);

  it('served on stdio, where no call brings a token to exchange, a call says so and what to change', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: {
        up: {
          url: resource,
          oauth: { tokenExchange: { clientId: 'warden-exchange', clientSecret: 'exchange-secret' } },
        },
      },
    });
    const local = await connectHost(config, { env: { ...STATE_ENV, MCP_WARDEN_CREDENTIALS: 'file' } });
    try {
      const result = await call(local, 'up__whoami');
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('"up"');
      expect(textOf(result)).toContain('the local user has none');
      expect(textOf(result)).toContain(
        'Add an auth: section and serve over HTTP, or remove oauth.tokenExchange from this server',
      );
      // Retrying cannot mend it, so the user is not told to try again, and it is not retried.
      expect(textOf(result)).not.toContain('try again shortly');
      expect(textOf(result)).toContain('will not be restarted');
      expect(local.stderr()).toContain('marked failed, not restarted');
      expect(local.stderr()).not.toContain('restarting in');
    } finally {
      await local.close();
    }
  }, 60_000);

  it('an identity provider that cannot be reached is a clear isError, not a hang', async () => {
    const alice = hosts[0]!;
    const result = await call(alice, 'down__whoami');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('"down"');
    expect(textOf(result)).toContain(`the identity provider could not be reached at ${closedEndpoint}`);
  }, 60_000);

  it('audits each exchange with the server and the principal, and no token anywhere in the trail or the log', async () => {
    const records = readAudit(auditFile).filter((r) => r.type === 'upstream_token_exchange');
    const of = (sub: string, outcome: string) =>
      records.filter((r) => (r.principal as { subject?: string }).subject === sub && r.outcome === outcome);
    expect(of('alice', 'success')).toEqual([
      expect.objectContaining({ server: 'up', scopes: ['mcp'], expiresAt: expect.any(String) }),
    ]);
    expect(of('bob', 'success')).toHaveLength(1);
    expect(of('mallory', 'failure').find((r) => r.server === 'up')).toMatchObject({
      error:
        'the identity provider refused the exchange: invalid_grant (mallory may not act at this resource)',
    });
    expect(of('alice', 'failure').some((r) => r.server === 'down')).toBe(true);

    const trail = readFileSync(auditFile, 'utf8');
    const secrets = [...tokens.values(), ...(await seen()), 'exchange-secret'];
    for (const secret of secrets) {
      expect(trail).not.toContain(secret);
      expect(gateway.stderr()).not.toContain(secret);
    }
  }, 30_000);
});

/** A port on 127.0.0.1 that nothing listens on (bound once, then let go). */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
