/**
 * `mcp-warden auth login` checks the token it obtained with the server itself: a server that
 * answers the first request with 403 `insufficient_scope` gets one more sign-in for the scope
 * it names (a step-up), and one whose refusal names no scope is reported, naming the problem,
 * rather than the login claiming success. Against `oidc-provider` (test/fixtures/oidc-fixture.mjs).
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, tempDir, writeConfig } from './harness.js';
import { OIDC_BROWSER, oidcServer, startOidcFixture } from './oidcFixture.js';

let fixture: ChildProcess | undefined;
afterEach(() => {
  fixture?.kill();
  fixture = undefined;
});

/** The fixture with every request needing the `admin` scope; a config and credential file for it. */
async function setup(env: Record<string, string>) {
  const started = await startOidcFixture({ ACCESS_TTL: '60', REQUIRE_SCOPE: 'admin', ...env });
  fixture = started.process;
  const { resource } = started;
  const dir = tempDir('warden-stepup-');
  const config = writeConfig({ servers: { oidc: oidcServer(resource) } }, dir);
  const cliEnv = {
    MCP_WARDEN_CREDENTIALS: 'file',
    MCP_WARDEN_CREDENTIALS_FILE: path.join(dir, 'credentials.json'),
    BROWSER: OIDC_BROWSER,
  };
  return { config, cliEnv };
}

describe('auth login against a server that wants more scope than the first sign-in grants', () => {
  it('signs in once more for the scope the 403 names, and then succeeds', async () => {
    const { config, cliEnv } = await setup({});
    const login = await runCli(['auth', 'login', 'oidc', '--config', config], cliEnv);
    expect(login.stdout).toContain(
      'oidc asks for more access (scope "mcp admin") than was granted; signing in again for it',
    );
    expect(login.stdout).toContain('Signed in to oidc as alice (scopes: mcp admin)');
    expect(login.code).toBe(0);
  }, 60_000);

  it('says what is wrong when the refusal names no scope, instead of claiming success', async () => {
    const { config, cliEnv } = await setup({ NAME_SCOPE: '0' });
    const login = await runCli(['auth', 'login', 'oidc', '--config', config], cliEnv);
    expect(login.stdout).not.toContain('Signed in to oidc as');
    expect(login.stderr).toContain(
      'signed in to oidc, but it refuses the token for want of scope (it names none) (granted: mcp)',
    );
    expect(login.code).toBe(1);
  }, 60_000);
});
