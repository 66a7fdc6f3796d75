import { describe, expect, it } from 'vitest';
import { TOKEN_CACHE_MS, TokenCache } from '../../src/features/upstreamAuth/tokenCache.js';
import type { SecretStore, TokenRecord } from '../../src/features/upstreamAuth/records.js';

const ACCOUNT = 'oauth:tokens:local:https://mcp.example.com/mcp';
const recordWith = (token: string): TokenRecord => ({
  server: 'remote',
  url: 'https://mcp.example.com/mcp',
  authorizationServer: 'https://as.example.com',
  client: { client_id: 'warden' },
  tokens: { access_token: token, token_type: 'Bearer' },
  scopes: ['mcp'],
});

/** A store in memory that counts its reads. */
function countingStore() {
  const secrets = new Map<string, string>();
  const store: SecretStore & { reads: number } = {
    reads: 0,
    get(account) {
      store.reads++;
      return Promise.resolve(secrets.get(account));
    },
    set(account, secret) {
      secrets.set(account, secret);
      return Promise.resolve();
    },
    delete(account) {
      return Promise.resolve(secrets.delete(account));
    },
    list: () => Promise.resolve([...secrets.keys()]),
  };
  return store;
}

describe('TokenCache', () => {
  it('reads the store once for many requests, and again once the held record is old', async () => {
    const store = countingStore();
    await store.set(ACCOUNT, JSON.stringify(recordWith('a1')));
    let now = 1_000;
    const cache = new TokenCache(
      () => Promise.resolve(store),
      () => now,
    );
    for (let i = 0; i < 50; i++) expect((await cache.read(ACCOUNT))?.tokens.access_token).toBe('a1');
    expect(store.reads).toBe(1);
    // Another process signs in again: seen once the held record is old enough.
    await store.set(ACCOUNT, JSON.stringify(recordWith('a2')));
    now += TOKEN_CACHE_MS;
    expect((await cache.read(ACCOUNT))?.tokens.access_token).toBe('a2');
    expect(store.reads).toBe(2);
  });

  it("holds this process's own writes at once, forgets a sign-out, and reads afresh when asked", async () => {
    const store = countingStore();
    const cache = new TokenCache(
      () => Promise.resolve(store),
      () => 0,
    );
    await cache.write(ACCOUNT, recordWith('r1'));
    expect((await cache.read(ACCOUNT))?.tokens.access_token).toBe('r1');
    expect(store.reads).toBe(0);
    await store.set(ACCOUNT, JSON.stringify(recordWith('other')));
    expect((await cache.fresh(ACCOUNT))?.tokens.access_token).toBe('other');
    await cache.delete(ACCOUNT);
    expect(await cache.read(ACCOUNT)).toBeUndefined();
    expect(store.reads).toBe(2);
  });
});
