/**
 * Token exchange (RFC 8693) for one upstream, against a fake token endpoint: what is sent, what
 * is kept per principal and for how long, one exchange at a time, a fresh one after a 401, the
 * bound on what is kept, the failures and how they read, and the fallback to a sign-in.
 */
import { inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import type { TokenExchangeConfig } from '../../src/config/types.js';
import { silentLogger } from '../../src/core/logger.js';
import { osPrincipal, tokenPrincipal, type Principal } from '../../src/core/principal.js';
import { SubjectTokens } from '../../src/core/subjectTokens.js';
import type { HttpAuthorization } from '../../src/core/transports/httpTransport.js';
import {
  MAX_EXCHANGED_TOKENS,
  TOKEN_EXCHANGE_GRANT,
  TokenExchange,
  TokenExchangeError,
  type TokenExchangeRecord,
} from '../../src/features/upstreamAuth/tokenExchange.js';

const ENDPOINT = 'https://idp.example/token';
const CONFIG: TokenExchangeConfig = {
  tokenEndpoint: ENDPOINT,
  clientId: 'warden',
  clientSecret: 's3cret',
  clientAuth: 'basic',
  audience: 'crm',
  resource: 'https://crm.example/mcp',
  scopes: ['crm.read'],
  fallback: 'error',
};

const principal = (sub: string): Principal => tokenPrincipal({ sub, iss: 'https://idp.example' }, []);
/** A principal's own token: a JWT-shaped text whose `exp` is in an hour. */
const ownToken = (sub: string, exp = Math.floor(Date.now() / 1000) + 3600) =>
  `h.${Buffer.from(JSON.stringify({ sub, exp })).toString('base64url')}.sig`;

type Answer = { status: number; body: unknown } | Error;

function setup(
  options: { config?: Partial<TokenExchangeConfig>; answer?: (form: URLSearchParams) => Answer } = {},
) {
  let now = 1_000_000;
  const requests: { url: string; headers: Record<string, string>; form: URLSearchParams }[] = [];
  let issued = 0;
  const answer =
    options.answer ??
    ((form: URLSearchParams) => ({
      status: 200,
      body: {
        access_token: `exchanged-${issued++}-for-${subjectOf(form.get('subject_token')!)}`,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        expires_in: 600,
        scope: 'crm.read',
      },
    }));
  const gates: (() => void)[] = [];
  let held = false;
  const fetchFn = vi.fn(async (url: string | URL, init?: RequestInit) => {
    const form = new URLSearchParams(String(init?.body));
    requests.push({ url: String(url), headers: init?.headers as Record<string, string>, form });
    if (held) await new Promise<void>((resolve) => gates.push(resolve));
    const a = answer(form);
    if (a instanceof Error) throw a;
    return new Response(JSON.stringify(a.body), {
      status: a.status,
      headers: { 'content-type': 'application/json' },
    });
  });
  const subjects = new SubjectTokens({ now: () => now });
  const records: { event: TokenExchangeRecord; principal: Principal }[] = [];
  const exchange = new TokenExchange({
    server: 'crm',
    config: { ...CONFIG, ...options.config },
    subjectTokens: subjects,
    fetchFn,
    discoverEndpoint: () => Promise.reject(new Error('not used')),
    now: () => now,
    log: silentLogger,
    record: (event, p) => records.push({ event, principal: p }),
  });
  const signIn = (sub: string, token = ownToken(sub)) => {
    subjects.remember(principal(sub), token);
    return token;
  };
  return {
    exchange,
    fetchFn,
    requests,
    records,
    subjects,
    signIn,
    advance: (ms: number) => (now += ms),
    hold: () => (held = true),
    release: () => {
      held = false;
      for (const g of gates.splice(0)) g();
    },
  };
}

function subjectOf(token: string): string {
  return (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string }).sub;
}

describe('token exchange', () => {
  it("sends the principal's token to the token endpoint with the grant, resource, audience and scope, authenticated by Basic", async () => {
    const t = setup();
    const alice = t.signIn('alice');
    expect(await t.exchange.tokenFor(principal('alice'))).toBe('exchanged-0-for-alice');
    const [request] = t.requests;
    expect(request!.url).toBe(ENDPOINT);
    expect(Object.fromEntries(request!.form)).toEqual({
      grant_type: TOKEN_EXCHANGE_GRANT,
      subject_token: alice,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      resource: 'https://crm.example/mcp',
      audience: 'crm',
      scope: 'crm.read',
    });
    expect(request!.headers.authorization).toBe(`Basic ${Buffer.from('warden:s3cret').toString('base64')}`);
  });

  it('sends the client in the form with clientAuth post, and no resource with resource: false', async () => {
    const t = setup({ config: { clientAuth: 'post', resource: false } });
    t.signIn('alice');
    await t.exchange.tokenFor(principal('alice'));
    const { form, headers } = t.requests[0]!;
    expect(headers.authorization).toBeUndefined();
    expect(form.get('client_id')).toBe('warden');
    expect(form.get('client_secret')).toBe('s3cret');
    expect(form.has('resource')).toBe(false);
  });

  it("keeps each principal's token for that principal alone, one exchange for concurrent calls, renewed beside the calls before expiry", async () => {
    const t = setup();
    t.signIn('alice');
    t.signIn('bob');
    t.hold();
    const concurrent = [1, 2, 3].map(() => t.exchange.tokenFor(principal('alice')));
    const bobs = t.exchange.tokenFor(principal('bob'));
    await vi.waitFor(() => expect(t.fetchFn).toHaveBeenCalledTimes(2));
    t.release();
    expect(await Promise.all(concurrent)).toEqual(Array(3).fill('exchanged-0-for-alice'));
    expect(await bobs).toBe('exchanged-1-for-bob');
    // Held: no new exchange while far from expiry (600 s, renewed 60 s ahead).
    t.advance(539_000);
    expect(await t.exchange.tokenFor(principal('alice'))).toBe('exchanged-0-for-alice');
    expect(t.fetchFn).toHaveBeenCalledTimes(2);
    // In its last minute the held token is still sent, at once, and a new one is exchanged beside.
    t.advance(2_000);
    t.hold();
    expect(await t.exchange.tokenFor(principal('alice'))).toBe('exchanged-0-for-alice');
    await vi.waitFor(() => expect(t.fetchFn).toHaveBeenCalledTimes(3));
    expect(await t.exchange.tokenFor(principal('alice'))).toBe('exchanged-0-for-alice');
    t.release();
    await vi.waitFor(async () =>
      expect(await t.exchange.tokenFor(principal('alice'))).toBe('exchanged-2-for-alice'),
    );
    expect(t.fetchFn).toHaveBeenCalledTimes(3);
    // In its last seconds a token is not sent: the call waits for the new one.
    t.advance(596_000);
    t.hold();
    let got: string | undefined;
    const waiting = t.exchange.tokenFor(principal('alice')).then((token) => (got = token));
    await vi.waitFor(() => expect(t.fetchFn).toHaveBeenCalledTimes(4));
    expect(got).toBeUndefined();
    t.release();
    await waiting;
    expect(got).toBe('exchanged-3-for-alice');
  });

  it('exchanges again after the server refused the token held, but not when another request already did', async () => {
    const t = setup();
    t.signIn('alice');
    const first = await t.exchange.tokenFor(principal('alice'));
    const second = await t.exchange.rejected(principal('alice'), first);
    expect(second).not.toBe(first);
    // A late 401 for the old token: the new one is tried, without another exchange.
    expect(await t.exchange.rejected(principal('alice'), first)).toBe(second);
    expect(t.fetchFn).toHaveBeenCalledTimes(2);
  });

  it(`keeps at most ${MAX_EXCHANGED_TOKENS} tokens, dropping the one obtained longest ago`, async () => {
    const t = setup();
    for (let i = 0; i <= MAX_EXCHANGED_TOKENS; i++) {
      t.signIn(`p${i}`);
      await t.exchange.tokenFor(principal(`p${i}`));
    }
    const calls = t.fetchFn.mock.calls.length;
    await t.exchange.tokenFor(principal(`p${MAX_EXCHANGED_TOKENS}`));
    expect(t.fetchFn).toHaveBeenCalledTimes(calls);
    await t.exchange.tokenFor(principal('p0'));
    expect(t.fetchFn).toHaveBeenCalledTimes(calls + 1);
  });

  it.each<[string, Answer, string, boolean]>([
    [
      'invalid_grant',
      { status: 400, body: { error: 'invalid_grant', error_description: 'subject not allowed' } },
      'the identity provider refused the exchange: invalid_grant (subject not allowed)',
      true,
    ],
    [
      'unauthorized_client',
      { status: 400, body: { error: 'unauthorized_client' } },
      'the identity provider refused the exchange: unauthorized_client',
      true,
    ],
    [
      'a 503 without an OAuth error',
      { status: 503, body: 'down' },
      'the identity provider at https://idp.example/token answered HTTP 503',
      false,
    ],
    [
      'a connection refused',
      new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') }),
      'the identity provider could not be reached at https://idp.example/token: fetch failed: connect ECONNREFUSED',
      false,
    ],
    [
      'a token of another type',
      { status: 200, body: { access_token: 'x', token_type: 'DPoP', expires_in: 60 } },
      'the identity provider issued a token of type "DPoP"; only bearer tokens are sent',
      false,
    ],
  ])('fails clearly on %s, and audits it without a token', async (_name, answer, message, refused) => {
    const t = setup({ answer: () => answer });
    const alice = t.signIn('alice');
    const failure = await t.exchange.tokenFor(principal('alice')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(TokenExchangeError);
    expect((failure as TokenExchangeError).message).toBe(message);
    expect((failure as TokenExchangeError).refused).toBe(refused);
    expect(t.records).toEqual([
      {
        event: { type: 'upstream_token_exchange', server: 'crm', outcome: 'failure', error: message },
        principal: principal('alice'),
      },
    ]);
    expect(JSON.stringify(t.records)).not.toContain(alice);
  });

  it('audits a success with the expiry and scopes, never a token', async () => {
    const t = setup();
    const alice = t.signIn('alice');
    const token = await t.exchange.tokenFor(principal('alice'));
    expect(t.records).toEqual([
      {
        event: {
          type: 'upstream_token_exchange',
          server: 'crm',
          outcome: 'success',
          expiresAt: new Date(1_000_000 + 600_000).toISOString(),
          scopes: ['crm.read'],
        },
        principal: principal('alice'),
      },
    ]);
    expect(JSON.stringify(t.records)).not.toContain(alice);
    expect(JSON.stringify(t.records)).not.toContain(token);
  });

  it('refuses without asking anyone when there is no token of the principal to exchange, or it has expired', async () => {
    const t = setup();
    await expect(t.exchange.tokenFor(osPrincipal())).rejects.toThrow(
      /token exchange needs the bearer token of the principal making the call/,
    );
    await expect(t.exchange.tokenFor(principal('carol'))).rejects.toThrow(
      'the gateway holds no bearer token of carol@https://idp.example to exchange',
    );
    t.signIn('dave', ownToken('dave', 1_000));
    await expect(t.exchange.tokenFor(principal('dave'))).rejects.toThrow(
      "dave@https://idp.example's own token has expired",
    );
    expect(t.fetchFn).not.toHaveBeenCalled();
  });

  it('falls back to the interactive sign-in only when configured, and only for a refusal', async () => {
    const refusing = setup({ answer: () => ({ status: 400, body: { error: 'invalid_grant' } }) });
    refusing.signIn('alice');
    const enter = vi.fn();
    const fallback: HttpAuthorization & { enter: () => void } = {
      provider: { tokens: () => ({ access_token: 'signed-in', token_type: 'Bearer' }) } as never,
      refreshAfterRejection: () => Promise.resolve('signed-in-again'),
      enter,
    };
    const withFallback = refusing.exchange.authorization(principal('alice'), fallback);
    expect(await withFallback.provider.tokens()).toEqual({ access_token: 'signed-in', token_type: 'Bearer' });
    expect(enter).toHaveBeenCalledTimes(1);
    // Without a fallback the refusal is the connection's error.
    const without = refusing.exchange.authorization(principal('alice'), undefined);
    await expect(without.provider.tokens()).rejects.toThrow('invalid_grant');

    // An identity provider that is down is no refusal: no sign-in is offered for it.
    const down = setup({ answer: () => new TypeError('fetch failed') });
    down.signIn('alice');
    const enterDown = vi.fn();
    const downAuth = down.exchange.authorization(principal('alice'), { ...fallback, enter: enterDown });
    await expect(downAuth.provider.tokens()).rejects.toThrow('could not be reached');
    expect(enterDown).not.toHaveBeenCalled();
  });
});

describe('subject tokens', () => {
  it('never print or serialize a token', () => {
    const subjects = new SubjectTokens();
    const token = ownToken('alice');
    subjects.remember(principal('alice'), token);
    expect(subjects.current(principal('alice'))).toEqual({ token, expired: false });
    expect(JSON.stringify({ subjects })).not.toContain(token);
    expect(inspect(subjects, { showHidden: true, depth: 5 })).not.toContain(token);
    expect(subjects.current(principal('bob'))).toBeUndefined();
  });
});
