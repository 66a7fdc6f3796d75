import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ServerConfig } from '../../src/config/types.js';
import { PrincipalLimitError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/logger.js';
import type { Principal } from '../../src/core/principal.js';
import {
  isolatedServers,
  PrincipalPools,
  sharedServers,
  type PrincipalView,
} from '../../src/core/upstreams/principalPools.js';
import type { Upstream } from '../../src/core/upstreams/upstream.js';
import type { UpstreamPool } from '../../src/core/upstreams/upstreamPool.js';

const server = (name: string, extra: Partial<ServerConfig> = {}) =>
  ({ name, transport: 'stdio', shared: false, ...extra }) as ServerConfig;
const SERVERS = [
  server('files'),
  server('search', { shared: true }),
  server('remote', { transport: 'http' }),
];
const who = (subject: string): Principal => ({ source: 'token', subject, issuer: 'https://idp' });
const quiet = { info: () => {}, warn: () => {} } as unknown as Logger;

/** A pool of named stand-in upstreams that records whether it was started and stopped. */
function fakePool(names: readonly string[]) {
  const upstreams = names.map((name) => ({ name }) as Upstream);
  const pool = {
    upstreams,
    byName: new Map(upstreams.map((u) => [u.name, u])),
    started: false,
    stopped: false,
    start: async () => void (pool.started = true),
    stop: async () => void (pool.stopped = true),
  };
  return pool;
}

let now = 0;
let made: { view: PrincipalView; pool: ReturnType<typeof fakePool> }[] = [];
function pools(limits: { idleMs: number; maxProcesses: number }, shared = fakePool(['search', 'remote'])) {
  return new PrincipalPools({
    servers: SERVERS,
    shared: shared as unknown as UpstreamPool,
    limits,
    logger: quiet,
    now: () => now,
    makePool: (view) => {
      const pool = fakePool(['files']);
      made.push({ view, pool });
      return pool as unknown as UpstreamPool;
    },
  });
}
const poolsOf = (view: PrincipalView) => made.filter((m) => m.view === view).map((m) => m.pool);

beforeEach(() => {
  vi.useFakeTimers();
  now = 0;
  made = [];
});
afterEach(() => vi.useRealTimers());

describe('principal pools', () => {
  it('after the managed settings change, every principal gets fresh own processes and the shared pool as it is now', async () => {
    const shared = fakePool(['search', 'remote']);
    const p = pools({ idleMs: 1000, maxProcesses: 10 }, shared);
    const alice = p.view(who('alice'));
    await alice.run('files', async () => 'ok');
    const [first] = poolsOf(alice);
    // The shared pool put a fresh upstream in place of one (as UpstreamPool.replace does).
    const search = { name: 'search' } as Upstream;
    shared.upstreams[0] = search;
    shared.byName.set('search', search);
    p.reset(SERVERS.map((s) => (s.name === 'files' ? { ...s, blockedByManaged: 'denied' } : s)));
    expect(first?.stopped).toBe(true);
    expect(alice.byName.get('search')).toBe(search);
    expect(alice.byName.get('files')).toBe(poolsOf(alice)[1]?.byName.get('files'));
    expect(p.running).toBe(0);
  });

  it('isolates stdio servers not marked shared, and only behind a listener', () => {
    expect(isolatedServers(SERVERS).map((s) => s.name)).toEqual(['files']);
    expect(sharedServers({ servers: SERVERS }).map((s) => s.name)).toEqual(['files', 'search', 'remote']);
    expect(sharedServers({ servers: SERVERS, listen: {} }).map((s) => s.name)).toEqual(['search', 'remote']);
  });

  it('gives each principal one view, its own process in config order among the shared ones', async () => {
    const p = pools({ idleMs: 1000, maxProcesses: 10 });
    const alice = p.view(who('alice'));
    expect(p.view(who('alice'))).toBe(alice);
    const bob = p.view(who('bob'));
    expect(alice.upstreams.map((u) => u.name)).toEqual(['files', 'search', 'remote']);
    expect(alice.byName.get('files')).not.toBe(bob.byName.get('files'));
    expect(alice.byName.get('search')).toBe(bob.byName.get('search'));
    expect(p.running).toBe(0);
    await alice.run('search', async () => 'ok');
    expect(poolsOf(alice)[0]!.started).toBe(false); // a shared server's call starts nothing of hers
    await alice.run('files', async () => 'ok');
    expect(poolsOf(alice)[0]!.started).toBe(true);
    expect(p.running).toBe(1);
    await p.stop();
  });

  it('stops an idle principal after idleMs, never one with a request in flight', async () => {
    const p = pools({ idleMs: 1000, maxProcesses: 10 });
    const alice = p.view(who('alice'));
    alice.connections++;
    let finish!: () => void;
    const running = alice.run('files', () => new Promise<void>((resolve) => (finish = resolve)));
    await vi.advanceTimersByTimeAsync(0);
    now = 5000;
    await vi.advanceTimersByTimeAsync(1000);
    expect(poolsOf(alice)[0]!.stopped).toBe(false);
    finish();
    await running;
    now = 5999;
    await vi.advanceTimersByTimeAsync(250);
    expect(poolsOf(alice)[0]!.stopped).toBe(false);
    now = 6001;
    await vi.advanceTimersByTimeAsync(250);
    expect(poolsOf(alice)[0]!.stopped).toBe(true);
    expect(alice.running).toBe(0);
    // Her next request starts a fresh pool.
    await alice.run('files', async () => 'ok');
    expect(poolsOf(alice)).toHaveLength(2);
    expect(poolsOf(alice)[1]!.started).toBe(true);
    await p.stop();
  });

  it('makes room by stopping the least recently used idle principal, and refuses when all are busy', async () => {
    const p = pools({ idleMs: 60_000, maxProcesses: 2 });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((s) => p.view(who(s))) as [
      PrincipalView,
      PrincipalView,
      PrincipalView,
      PrincipalView,
    ];
    now = 1;
    await a.start();
    now = 2;
    await b.start();
    now = 3;
    await a.run('files', async () => 'ok'); // a is now the more recently used
    await c.start();
    expect(poolsOf(b)[0]!.stopped).toBe(true);
    expect(poolsOf(a)[0]!.stopped).toBe(false);
    // a and c busy: d cannot start, and is told which bound.
    const holds: (() => void)[] = [];
    const busy = [a, c].map((v) => v.run('files', () => new Promise<void>((r) => holds.push(r))));
    await vi.advanceTimersByTimeAsync(0);
    const refused = await d.start().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PrincipalLimitError);
    expect((refused as Error).message).toContain('(listen.perPrincipal.maxProcesses: 2)');
    holds.forEach((release) => release());
    await Promise.all(busy);
    await expect(d.start()).resolves.toBeUndefined();
    await p.stop();
  });
});
