/**
 * What signing in at the gateway's front door needs in a test: the company identity provider
 * (test/fixtures/oidc-idp.mjs, `oidc-provider` without Dynamic Client Registration), a desktop
 * host's OAuth client state for the SDK's own OAuth client, and a browser that goes through the
 * provider's login and consent forms.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Principal } from '../../src/core/principal.js';
import { NODE, ROOT } from './harness.js';

/**
 * How a host's client id reads in logs, audit records and tokens: the first 16 characters of
 * its seal (the id is the registration and a seal over it).
 */
export const tagOf = (clientId: string) => clientId.slice(clientId.lastIndexOf('.') + 1).slice(0, 16);

/** The principal an audit record names. */
export const whoIn = (record: object | undefined) =>
  (record as { principal?: Principal } | undefined)?.principal;

/** Where the host's browser is sent back to: a loopback address, as a desktop host listens on. */
export const HOST_REDIRECT = 'http://127.0.0.1:47777/callback';

/**
 * Starts the identity provider with one pre-registered client whose only redirect is
 * `callback` (the gateway's /oauth/callback); resolves once it listens.
 */
export async function startIdentityProvider(
  callback: string,
): Promise<{ readonly issuer: string; readonly process: ChildProcess }> {
  const child = spawn(NODE, [path.join(ROOT, 'test/fixtures/oidc-idp.mjs')], {
    env: { PATH: process.env.PATH ?? '', CALLBACK: callback },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout! }).once('line', resolve),
  );
  const { issuer } = JSON.parse(line) as { issuer: string };
  return { issuer, process: child };
}

/**
 * A browser, as far as a sign-in needs one: follows redirects, keeps cookies, and submits the
 * forms the identity provider shows (the login form with a user name and password, then the
 * consent form), until it is sent to a URL starting with `stopAt`. Returns that URL, or the
 * page it stopped on when a page has no form (an error page).
 */
export async function browse(
  start: string,
  stopAt: string,
  user = 'alice',
  change: (url: string) => string = (u) => u,
): Promise<{ url?: URL; status: number; page?: string }> {
  const cookies = new Map<string, string>();
  let url = start;
  let init: { method: string; body?: string } = { method: 'GET' };
  for (let step = 0; step < 20; step++) {
    url = change(url);
    if (url.startsWith(stopAt)) return { url: new URL(url), status: 302 };
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(init.body !== undefined && { 'content-type': 'application/x-www-form-urlencoded' }),
      },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location !== null) {
      url = new URL(location, url).href;
      init = { method: 'GET' };
      continue;
    }
    const page = await response.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(page);
    if (form === null) return { status: response.status, page };
    const fields = new URLSearchParams();
    for (const input of page.matchAll(/<input[^>]*>/gi)) {
      const name = /name="([^"]+)"/.exec(input[0])?.[1];
      if (name === undefined) continue;
      const value = /value="([^"]*)"/.exec(input[0])?.[1];
      fields.set(name, name === 'login' ? user : name === 'password' ? 'any password' : (value ?? ''));
    }
    url = new URL(form[1]!.replace(/&amp;/g, '&'), url).href;
    init = { method: 'POST', body: fields.toString() };
  }
  throw new Error(`the sign-in did not end after 20 pages (at ${url})`);
}

/** A desktop host's OAuth client state, in memory: what Claude Code or VS Code keep in their stores. */
export class HostAuth implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  stored?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  get redirectUrl() {
    return HOST_REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'test desktop host',
      redirect_uris: [HOST_REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}
