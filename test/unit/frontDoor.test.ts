/**
 * The front door's bounds and redirect rules, which the integration test cannot reach in full:
 * what it keeps between requests is capped and expires, and which redirect URIs a host may
 * register and use.
 */
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../src/http/frontDoor/bounded.js';
import { redirectProblem, sameRedirect } from '../../src/http/frontDoor/frontDoor.js';

describe('BoundedMap', () => {
  it('never holds more than its cap: the entry used longest ago goes first', () => {
    const map = new BoundedMap<number>(3);
    const until = Date.now() + 60_000;
    for (let i = 0; i < 3; i++) map.set(`k${i}`, i, until);
    expect(map.get('k0')).toBe(0); // k0 is now the most recently used
    map.set('k3', 3, until);
    expect(map.size).toBe(3);
    expect(map.get('k1')).toBeUndefined();
    expect([map.get('k0'), map.get('k2'), map.get('k3')]).toEqual([0, 2, 3]);
  });

  it('gives nothing for an expired entry, and what is taken is gone', () => {
    const map = new BoundedMap<string>(10);
    const now = 1_000_000;
    map.set('old', 'x', now);
    map.set('code', 'y', now + 1000);
    expect(map.get('old', now)).toBeUndefined();
    expect(map.take('code', now)).toBe('y');
    expect(map.take('code', now)).toBeUndefined();
  });
});

describe('redirect URIs a host may register', () => {
  it.each([
    'https://vscode.dev/redirect',
    'http://127.0.0.1:33418/',
    'http://localhost:6274/callback',
    'http://[::1]/cb',
    'cursor://anysphere.cursor-mcp/oauth/callback',
  ])('%s is accepted', (uri) => {
    expect(redirectProblem(uri)).toBeUndefined();
  });

  it.each([
    ['http://evil.example/cb', 'is not https, http to a loopback address'],
    ['javascript:alert(1)', 'is not https, http to a loopback address'],
    ['data:text/html,hi', 'is not https, http to a loopback address'],
    ['https://x.example/cb#frag', 'has a #fragment'],
    ['https://user:pw@x.example/cb', 'carries credentials'],
    ['not a url', 'is not a URL'],
    [`https://x.example/${'a'.repeat(600)}`, 'at most 512 characters'],
  ])('%s is refused, saying why', (uri, says) => {
    expect(redirectProblem(uri)).toContain(says);
  });

  it('a loopback redirect matches on any port, and nothing else does', () => {
    expect(sameRedirect('http://127.0.0.1:33418/', 'http://127.0.0.1:59656/')).toBe(true);
    expect(sameRedirect('http://127.0.0.1/', 'http://127.0.0.1:59656/')).toBe(true);
    expect(sameRedirect('http://127.0.0.1/cb', 'http://127.0.0.1:5/other')).toBe(false);
    expect(sameRedirect('http://127.0.0.1/cb', 'http://localhost:5/cb')).toBe(false);
    expect(sameRedirect('https://x.example/cb', 'https://x.example:8443/cb')).toBe(false);
  });
});
