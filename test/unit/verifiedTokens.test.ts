import { generateKeyPair, SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../src/core/logger.js';
import { tokenPrincipal } from '../../src/core/principal.js';
import { createTokenVerifier, type TokenVerifier } from '../../src/http/auth.js';

const ISSUER = 'https://gateway.test';
const AUDIENCE = 'https://gateway.test/mcp';
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;

/** A verifier that takes tokens signed with its own key (no identity provider to fetch from). */
async function setup(): Promise<{
  verifier: TokenVerifier;
  sign: (sub: string, expiresInSeconds: number) => Promise<string>;
}> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const verifier = createTokenVerifier(
    {
      issuer: 'https://idp.test',
      audience: AUDIENCE,
      requiredScopes: [],
      claims: [],
      clockSkewMs: 0,
      jwksCooldownMs: 30_000,
    },
    {
      logger: quiet,
      own: { issuer: ISSUER, key: publicKey, alg: 'ES256', principalOf: (p) => tokenPrincipal(p, []) },
    },
  );
  const sign = (sub: string, expiresInSeconds: number) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + expiresInSeconds)
      .sign(privateKey);
  return { verifier, sign };
}

describe('the verified-token memory read at once (TokenVerifier.known)', () => {
  afterEach(() => vi.useRealTimers());

  it('knows a token only after verify passed it, and only as `Bearer <token>`', async () => {
    const { verifier, sign } = await setup();
    const token = await sign('alice', 3600);
    expect(verifier.known(`Bearer ${token}`)).toBeUndefined();
    const principal = await verifier.verify(`Bearer ${token}`);
    expect(principal.subject).toBe('alice');
    expect(verifier.known(`Bearer ${token}`)).toEqual(principal);
    // Other spellings of the same header are left to verify, which takes them.
    for (const header of [`bearer ${token}`, `Bearer  ${token}`, `Bearer ${token} `]) {
      expect(verifier.known(header)).toBeUndefined();
      expect((await verifier.verify(header)).subject).toBe('alice');
    }
    expect(verifier.known(undefined)).toBeUndefined();
    expect(verifier.known('Bearer ')).toBeUndefined();
  });

  it('never knows a token that was refused, nor one altered after it passed', async () => {
    const { verifier, sign } = await setup();
    const token = await sign('bob', 3600);
    await verifier.verify(`Bearer ${token}`);
    const altered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(verifier.known(`Bearer ${altered}`)).toBeUndefined();
    await expect(verifier.verify(`Bearer ${altered}`)).rejects.toThrow();
    expect(verifier.known(`Bearer ${altered}`)).toBeUndefined();
  });

  it('forgets a token at its exp, though it was known a moment before', async () => {
    const { verifier, sign } = await setup();
    const token = await sign('carol', 20);
    await verifier.verify(`Bearer ${token}`);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    vi.setSystemTime(Date.now() + 10_000);
    expect(verifier.known(`Bearer ${token}`)?.subject).toBe('carol');
    vi.setSystemTime(Date.now() + 11_000);
    expect(verifier.known(`Bearer ${token}`)).toBeUndefined();
  });

  it("takes a connection's repeated header from that connection, never past its token's exp, and nothing else by it", async () => {
    const { verifier, sign } = await setup();
    const token = await sign('dave', 20);
    const other = await sign('erin', 3600);
    const connection = {};
    expect(verifier.known(`Bearer ${token}`, connection)).toBeUndefined();
    await verifier.verify(`Bearer ${token}`);
    expect(verifier.known(`Bearer ${token}`, connection)?.subject).toBe('dave');
    // The same text made anew, as each request's header is: known on the connection as before.
    expect(verifier.known(`Bearer ${token}`.split('').join(''), connection)?.subject).toBe('dave');
    // Another token on the same connection is judged on its own: unknown until verified.
    expect(verifier.known(`Bearer ${other}`, connection)).toBeUndefined();
    const altered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(verifier.known(`Bearer ${altered}`, connection)).toBeUndefined();
    expect(verifier.known(`Bearer ${token}`, connection)?.subject).toBe('dave');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    vi.setSystemTime(Date.now() + 21_000);
    expect(verifier.known(`Bearer ${token}`, connection)).toBeUndefined();
  });
});
