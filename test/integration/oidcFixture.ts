import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { NODE, ROOT } from './harness.js';

/** The browser command that approves the fixture's sign-ins (test/fixtures/oauth-browser.mjs). */
export const OIDC_BROWSER = `${NODE} ${path.join(ROOT, 'test/fixtures/oauth-browser.mjs')}`;

/** The server entry for the fixture's protected resource, signed in to as its client `warden`. */
export const oidcServer = (resource: string) => ({
  url: resource,
  oauth: { clientId: 'warden', scopes: ['openid', 'mcp'] },
});

/**
 * Starts `oidc-provider` and its protected MCP server (test/fixtures/oidc-fixture.mjs) with
 * `env` (ACCESS_TTL, REQUIRE_SCOPE, …), and resolves once both listen.
 */
export async function startOidcFixture(
  env: Record<string, string>,
): Promise<{ readonly process: ChildProcess; readonly issuer: string; readonly resource: string }> {
  const child = spawn(NODE, [path.join(ROOT, 'test/fixtures/oidc-fixture.mjs')], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const line = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout! }).once('line', resolve),
  );
  const { issuer, resource } = JSON.parse(line) as { issuer: string; resource: string };
  return { process: child, issuer, resource };
}
