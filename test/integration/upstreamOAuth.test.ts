/**
 * Signing in to a remote server that asks for OAuth, against the MCP SDK's own example server
 * and its demo authorization server (`--oauth --oauth-strict`: Dynamic Client Registration,
 * PKCE, and tokens accepted only when issued for this server's URL as `resource`). The user's
 * browser is a script (`$BROWSER`) that follows the authorization server's redirects.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture } from '../fixtures/http-fixture-server.mjs';
import {
  connectHost,
  FAST_GATEWAY,
  freePort,
  NODE,
  readAudit,
  ROOT,
  runCli,
  tempDir,
  textOf,
  writeConfig,
} from './harness.js';

const require = createRequire(import.meta.url);
const SDK_EXAMPLE = path.join(
  path.dirname(require.resolve('@modelcontextprotocol/sdk/package.json')),
  '..',
  'esm/examples/server/simpleStreamableHttp.js',
);
const BROWSER = `${NODE} ${path.join(ROOT, 'test/fixtures/oauth-browser.mjs')}`;

describe('auth login against the SDK example server (DCR, PKCE, audience checked)', () => {
  let server: ChildProcess;
  let config: string;
  let auditFile: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    const [mcpPort, authPort] = [await freePort(), await freePort()];
    server = spawn(NODE, [SDK_EXAMPLE, '--oauth', '--oauth-strict'], {
      env: { PATH: process.env.PATH ?? '', MCP_PORT: String(mcpPort), MCP_AUTH_PORT: String(authPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      server.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (
          out.includes('MCP Streamable HTTP Server listening') &&
          out.includes('Authorization Server listening')
        )
          resolve();
      });
      server.once('exit', (code) => reject(new Error(`the example server exited (${code}): ${out}`)));
    });
    const dir = tempDir('warden-oauth-');
    auditFile = path.join(dir, 'audit.jsonl');
    config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: auditFile },
        servers: { demo: { url: `http://localhost:${mcpPort}/mcp` } },
      },
      dir,
    );
    env = {
      MCP_WARDEN_CREDENTIALS: 'file',
      MCP_WARDEN_CREDENTIALS_FILE: path.join(dir, 'credentials.json'),
      BROWSER,
    };
  }, 30_000);

  afterAll(() => {
    server?.kill();
  });

  it('before a sign-in, the server waits for one, saying how, and lists only its authorize tool', async () => {
    const host = await connectHost(config, { env });
    try {
      await host.waitForStderr('needs sign-in: not signed in: run "mcp-warden auth login demo"');
      const { tools } = await host.client.listTools();
      expect(tools.map((t) => t.name).filter((n) => n.startsWith('demo__'))).toEqual(['demo__authorize']);
    } finally {
      await host.close();
    }
  }, 30_000);

  it('auth login signs in through the browser; a host then calls the server through the gateway', async () => {
    const login = await runCli(['auth', 'login', 'demo', '--config', config], env);
    expect(login.stderr).toBe('');
    expect(login.stdout).toMatch(
      /^Sign in to demo in your browser:\n {2}http:\/\/localhost:\d+\/authorize\?/,
    );
    const authorizeUrl = new URL(login.stdout.split('\n')[1]!.trim());
    expect(authorizeUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizeUrl.searchParams.get('resource')).toMatch(/^http:\/\/localhost:\d+\/mcp$/);
    expect(authorizeUrl.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(login.stdout).toContain('Signed in to demo (scopes: mcp:tools)');
    expect(login.code).toBe(0);

    const status = await runCli(['auth', 'status', '--config', config, '--json'], env);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual([
      expect.objectContaining({ server: 'demo', signedIn: true, scopes: ['mcp:tools'], refreshable: false }),
    ]);

    const host = await connectHost(config, { env });
    try {
      await expect
        .poll(async () => (await host.client.listTools()).tools.map((t) => t.name), { timeout: 15_000 })
        .toContain('demo__greet');
      const result = await host.client.callTool({ name: 'demo__greet', arguments: { name: 'Ada' } });
      expect(textOf(result)).toBe('Hello, Ada!');
    } finally {
      await host.close();
    }

    // The sign-in is audited, and no token is in the trail, the output or the log.
    const credentials = readFileSync(env.MCP_WARDEN_CREDENTIALS_FILE!, 'utf8');
    const token = JSON.parse(
      (JSON.parse(credentials) as { secrets: Record<string, string> }).secrets[
        Object.keys((JSON.parse(credentials) as { secrets: Record<string, string> }).secrets).find((k) =>
          k.startsWith('oauth:tokens:'),
        )!
      ]!,
    ).tokens.access_token as string;
    const trail = readFileSync(auditFile, 'utf8');
    expect(trail).not.toContain(token);
    expect(status.stdout + login.stdout + host.stderr()).not.toContain(token);
    expect(readAudit(auditFile).filter((r) => r.type === 'upstream_sign_in')).toEqual([
      expect.objectContaining({ server: 'demo', scopes: ['mcp:tools'] }),
    ]);
  }, 60_000);

  it('auth logout forgets the sign-in, and says so', async () => {
    const logout = await runCli(['auth', 'logout', 'demo', '--config', config], env);
    expect(logout.stdout).toBe('Signed out of demo: tokens forgotten (the server offers no revocation)\n');
    expect(logout.code).toBe(0);
    const status = await runCli(['auth', 'status', '--config', config], env);
    expect(status.stdout).toBe('demo: not signed in\n');
    expect(readAudit(auditFile).filter((r) => r.type === 'upstream_sign_out')).toEqual([
      expect.objectContaining({ server: 'demo', revoked: false }),
    ]);
  }, 30_000);

  it('names the HTTP servers when asked to sign in to one that is not there', async () => {
    const result = await runCli(['auth', 'login', 'demp', '--config', config], env);
    expect(result.stderr).toContain(
      `no server "demp" in ${config} (did you mean "demo"?); its HTTP servers: demo`,
    );
    expect(result.code).toBe(2);
  });
});

describe('an HTTP server that never asks for a sign-in', () => {
  it('is served without the credential store ever being opened', async () => {
    const plain = await startHttpFixture();
    // The OS credential store asked for by name, on a machine without one: opening it fails,
    // so a call that works shows it was never opened.
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { plain: { url: `http://127.0.0.1:${plain.port}/mcp` } },
    });
    const host = await connectHost(config, {
      env: { MCP_WARDEN_CREDENTIALS: 'keyring', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent' },
    });
    try {
      const { tools } = await host.client.listTools();
      expect(tools.length).toBeGreaterThan(0);
      expect(host.stderr()).not.toMatch(/credential store/);
    } finally {
      await host.close();
      await plain.close();
    }
  }, 30_000);
});
