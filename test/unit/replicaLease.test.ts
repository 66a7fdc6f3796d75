import { describe, expect, it, vi } from 'vitest';
import { NotServingError, TurnQueueFullError } from '../../src/core/errors.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import type { Next, RoutedMessage, Stage } from '../../src/core/pipeline/types.js';
import { principalKey, type Principal } from '../../src/core/principal.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { sha256Hex } from '../../src/lib/hash.js';
import { createReplicaLeaseStage } from '../../src/features/replicaLease/stage.js';
import type { LeaseAttempt, LeaseStorage } from '../../src/features/replicaLease/storeLeases.js';
import { derive } from '../../src/core/pipeline/routedMessage.js';
import { toolCall } from './toolCall.js';

const ALICE: Principal = { source: 'token', subject: 'alice', issuer: 'https://idp.test' };
const BOB: Principal = { source: 'token', subject: 'bob', issuer: 'https://idp.test' };
const ok = Outcome.of({ content: [{ type: 'text', text: 'ok' }] });

/**
 * The store's leases in memory, as the Lua scripts keep them (holder, claim on the next turn,
 * both expiring), shared by the "replicas" of a test; `announce: false` drops every release
 * announcement, as an outage of the store's publish/subscribe would.
 */
class FakeLeases {
  readonly held = new Map<string, { token: string; until: number }>();
  readonly claims = new Map<string, { token: string; until: number }>();
  readonly listeners: ((key: string) => void)[] = [];
  renewals = 0;
  failing: Error | undefined;

  constructor(private readonly announce = true) {}

  /** One replica's view: its own listener on the shared announcements. */
  storage(): LeaseStorage {
    return {
      acquire: (key, token, ttlMs, claimMs) => this.acquire(key, token, ttlMs, claimMs),
      renew: async (key, token, ttlMs) => {
        this.fail();
        this.renewals++;
        const lease = this.live(this.held, key);
        // A lease nobody holds (the store lost it) is its holder's again.
        if (lease === undefined) this.held.set(key, { token, until: Date.now() + ttlMs });
        else if (lease.token !== token) return false;
        else lease.until = Date.now() + ttlMs;
        return true;
      },
      release: async (key, token) => {
        this.fail();
        let dropped = false;
        for (const map of [this.held, this.claims])
          if (this.live(map, key)?.token === token) dropped = map.delete(key);
        if (dropped && this.announce) for (const listener of this.listeners) listener(key);
      },
      onReleased: async (listener) => void this.listeners.push(listener),
    };
  }

  private async acquire(key: string, token: string, ttlMs: number, claimMs: number): Promise<LeaseAttempt> {
    this.fail();
    const holder = this.live(this.held, key);
    const claim = this.live(this.claims, key);
    if (holder === undefined) {
      if (claim === undefined || claim.token === token) {
        this.held.set(key, { token, until: Date.now() + ttlMs });
        this.claims.delete(key);
        return { held: true };
      }
      return { held: false, retryInMs: claim.until - Date.now() };
    }
    if (claim === undefined || claim.token === token)
      this.claims.set(key, { token, until: Date.now() + claimMs });
    return { held: false, retryInMs: holder.until - Date.now() };
  }

  private live(map: Map<string, { token: string; until: number }>, key: string) {
    const entry = map.get(key);
    if (entry !== undefined && entry.until <= Date.now()) map.delete(key);
    return map.get(key);
  }

  private fail(): void {
    if (this.failing) throw this.failing;
  }
}

function replica(
  leases: FakeLeases,
  options: { ttlMs?: number; pollMs?: number; waiters?: number; logger?: Logger; audited?: Stage } = {},
) {
  return createReplicaLeaseStage({
    leases: leases.storage(),
    waitersFor: (server) => (server === 'memory' ? (options.waiters ?? 8) : undefined),
    ttlMs: options.ttlMs ?? 60_000,
    pollMs: options.pollMs ?? 60_000,
    logger: options.logger ?? silentLogger,
    ...(options.audited !== undefined && { audited: options.audited }),
  });
}

function call(principal: Principal | undefined, server = 'memory'): RoutedMessage {
  return toolCall({ principal, server, target: 'write' });
}

/** An upstream that answers each request when the test says so, noting which are running. */
function upstream() {
  const running: { label: string; finish: () => void }[] = [];
  const started: string[] = [];
  const next =
    (label: string): Next =>
    () =>
      new Promise((resolve) => {
        started.push(label);
        const entry = { label, finish: () => resolve(ok) };
        running.push(entry);
      });
  const finish = (label: string): void => {
    const at = running.findIndex((r) => r.label === label);
    running.splice(at, 1)[0]!.finish();
  };
  return { next, running, started, finish };
}

describe('the turn at a principal’s own process over replicas', () => {
  it("runs one of alice's requests at a time over two replicas, the second waiting for the first", async () => {
    const leases = new FakeLeases();
    const [one, two] = [replica(leases), replica(leases)];
    const up = upstream();
    const first = call(ALICE);
    const second = call(ALICE);
    const a = one(first, up.next('first'));
    await expect.poll(() => up.started).toEqual(['first']);
    const b = two(second, up.next('second'));
    await expect
      .poll(() => second.record.waitingOn)
      .toMatch(/another replica is using alice@https:\/\/idp\.test's own process of server "memory"/);
    expect(up.started).toEqual(['first']);
    up.finish('first');
    await a;
    await expect.poll(() => up.started).toEqual(['first', 'second']);
    up.finish('second');
    await b;
    expect(first.record.leaseWaitMs).toBeUndefined();
    expect(second.record.leaseWaitMs).toEqual(expect.any(Number));
    expect(second.record.waitingOn).toBeUndefined();
    expect(leases.held.size).toBe(0);
  });

  it('queues requests of one replica behind each other, and bounds how many wait', async () => {
    const leases = new FakeLeases();
    const one = replica(leases, { waiters: 1 });
    const up = upstream();
    const a = one(call(ALICE), up.next('a'));
    const waiting = call(ALICE);
    const b = one(waiting, up.next('b'));
    await expect.poll(() => up.started).toEqual(['a']);
    await expect(one(call(ALICE), up.next('c'))).rejects.toThrow(TurnQueueFullError);
    await expect(one(call(ALICE), up.next('c'))).rejects.toThrow(
      /alice@https:\/\/idp\.test's own process of server "memory" runs one request at a time, and 1 of their requests already wait for it here/,
    );
    up.finish('a');
    await a;
    await expect.poll(() => up.started).toEqual(['a', 'b']);
    up.finish('b');
    await b;
    expect(waiting.record.leaseWaitMs).toEqual(expect.any(Number));
  });

  it('does not hold bob up behind alice, nor a server whose processes run in parallel', async () => {
    const leases = new FakeLeases();
    const [one, two] = [replica(leases), replica(leases)];
    const up = upstream();
    const alice = one(call(ALICE), up.next('alice'));
    await expect.poll(() => up.started).toEqual(['alice']);
    const bob = two(call(BOB), up.next('bob'));
    const parallel = two(call(ALICE, 'files'), up.next('files'));
    const stdioHost = two(call(undefined), up.next('nobody'));
    await expect.poll(() => [...up.started].sort()).toEqual(['alice', 'bob', 'files', 'nobody']);
    for (const label of ['bob', 'files', 'nobody', 'alice']) up.finish(label);
    await Promise.all([alice, bob, parallel, stdioHost]);
  });

  it('lets a waiting request give up when it is cancelled (its timeout), handing its place on', async () => {
    const leases = new FakeLeases();
    const [one, two] = [replica(leases), replica(leases)];
    const up = upstream();
    const holder = one(call(ALICE), up.next('holder'));
    await expect.poll(() => up.started).toEqual(['holder']);
    const gaveUp = call(ALICE);
    const behind = call(ALICE);
    const waiting = two(gaveUp, up.next('gave-up'));
    const queued = two(behind, up.next('behind'));
    await expect.poll(() => gaveUp.record.waitingOn).toBeDefined();
    gaveUp.signal.cancel(new Error('timed out'));
    await expect(waiting).rejects.toThrow('timed out');
    await expect.poll(() => behind.record.waitingOn).toBeDefined();
    up.finish('holder');
    await holder;
    await expect.poll(() => up.started).toEqual(['holder', 'behind']);
    up.finish('behind');
    await queued;
  });

  it("gives the turn to another replica's waiter first when the holder's replica has more waiting", async () => {
    const leases = new FakeLeases();
    const [one, two] = [replica(leases), replica(leases)];
    const up = upstream();
    const a1 = one(call(ALICE), up.next('one-1'));
    await expect.poll(() => up.started).toEqual(['one-1']);
    const a2 = one(call(ALICE), up.next('one-2'));
    const remote = call(ALICE);
    const b1 = two(remote, up.next('two-1'));
    await expect.poll(() => remote.record.waitingOn).toBeDefined();
    up.finish('one-1');
    await a1;
    await expect.poll(() => up.started).toEqual(['one-1', 'two-1']);
    up.finish('two-1');
    await b1;
    await expect.poll(() => up.started).toEqual(['one-1', 'two-1', 'one-2']);
    up.finish('one-2');
    await a2;
  });

  it('asks the store again on its own when the announcement of a release is lost', async () => {
    const leases = new FakeLeases(false);
    const [one, two] = [replica(leases, { pollMs: 20 }), replica(leases, { pollMs: 20 })];
    const up = upstream();
    const a = one(call(ALICE), up.next('first'));
    await expect.poll(() => up.started).toEqual(['first']);
    const b = two(call(ALICE), up.next('second'));
    up.finish('first');
    await a;
    await expect.poll(() => up.started).toEqual(['first', 'second']);
    up.finish('second');
    await b;
  });

  it('renews the lease while a request runs, and a holder that stopped renewing loses it to a waiter', async () => {
    const leases = new FakeLeases();
    const one = replica(leases, { ttlMs: 60, pollMs: 20 });
    const up = upstream();
    const a = one(call(ALICE), up.next('long'));
    await expect.poll(() => leases.renewals).toBeGreaterThanOrEqual(3);
    expect(leases.held.size).toBe(1);
    up.finish('long');
    await a;
    // A replica that died holds a lease nobody renews: the waiter gets it once it runs out.
    leases.held.set(sha256Hex(`${principalKey(ALICE)}\u0000memory`), {
      token: 'dead',
      until: Date.now() + 60,
    });
    const after = call(ALICE);
    const b = one(after, up.next('after-death'));
    await expect.poll(() => up.started).toContain('after-death');
    expect(after.record.leaseWaitMs).toBeGreaterThanOrEqual(50);
    up.finish('after-death');
    await b;
  });

  it('says once when a running request lost its lease, and stops renewing it', async () => {
    vi.useFakeTimers();
    try {
      const leases = new FakeLeases();
      const warnings: string[] = [];
      const logger = { ...silentLogger, warn: (message: string) => void warnings.push(message) };
      const one = replica(leases, { ttlMs: 60, pollMs: 20, logger });
      const up = upstream();
      const running = one(call(ALICE), up.next('long'));
      await vi.advanceTimersByTimeAsync(0);
      expect(leases.held.size).toBe(1);
      // Another replica took it while this one's renewals did not reach the store.
      const [key] = [...leases.held.keys()];
      leases.held.set(key!, { token: 'another', until: Date.now() + 60_000 });
      await vi.advanceTimersByTimeAsync(20);
      const renewals = leases.renewals;
      await vi.advanceTimersByTimeAsync(200);
      expect(leases.renewals).toBe(renewals);
      expect(warnings).toEqual([
        expect.stringMatching(
          /the turn at alice@https:\/\/idp\.test's own process of server "memory" was lost while a request ran \(it ran out before it could be renewed\): another replica may start one at the same time/,
        ),
      ]);
      up.finish('long');
      await running;
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses the request, saying why, when the store fails', async () => {
    const leases = new FakeLeases();
    leases.failing = new Error('the store redis://127.0.0.1:6379/ did not answer within 2000 ms (script)');
    const one = replica(leases);
    const up = upstream();
    const refused = one(call(ALICE), up.next('never'));
    await expect(refused).rejects.toThrow(NotServingError);
    await expect(refused).rejects.toThrow(
      /Server "memory" runs one request at a time for each user over all replicas, and alice@https:\/\/idp\.test's turn could not be taken: the store redis:\/\/127\.0\.0\.1:6379\/ did not answer within 2000 ms \(script\)\. The call was not run/,
    );
    expect(up.started).toEqual([]);
    // The next request of the same user is not stuck behind the refused one.
    leases.failing = undefined;
    const next = one(call(ALICE), up.next('later'));
    await expect.poll(() => up.started).toEqual(['later']);
    up.finish('later');
    await next;
  });
});

/** A call of alice's that the host runs as a task. */
function taskCall(): RoutedMessage {
  return derive(call(ALICE), { task: { params: { ttl: 60_000 }, drivenBy: 'host' } });
}

/** A request about alice's task `taskId`, as the router sends one. */
function aboutTask(kind: 'tasks/get' | 'tasks/result' | 'tasks/cancel', taskId: string): RoutedMessage {
  return derive(call(ALICE), { kind, params: { taskId }, arguments: { taskId } });
}

/**
 * A server running one task, `task-1`: the call creating it answers at once, and `tasks/get`
 * answers with its status now (or the error `failing` says, as a server that forgot it does).
 */
function taskServer(created: Record<string, unknown> = {}) {
  const server = {
    status: 'working',
    asked: 0,
    failing: undefined as Error | undefined,
    next: (async (message) => {
      if (message.kind === 'tools/call')
        return Outcome.of({ task: { taskId: 'task-1', status: 'working', pollInterval: 20, ...created } });
      if (message.kind === 'tasks/get') {
        server.asked++;
        if (server.failing !== undefined) throw server.failing;
      }
      return Outcome.of({ taskId: 'task-1', status: server.status });
    }) as Next,
  };
  return server;
}

describe('the turn of a task', () => {
  it("is held by alice's task until its server says it ended, though the host never asks", async () => {
    const leases = new FakeLeases();
    const [one, two] = [replica(leases), replica(leases)];
    const server = taskServer();
    await one(taskCall(), server.next);
    expect(leases.held.size).toBe(1);
    const up = upstream();
    const waiting = call(ALICE);
    const second = two(waiting, up.next('second'));
    await expect.poll(() => waiting.record.waitingOn).toBeDefined();
    // The gateway asks the server itself; while it says the task works, the turn stays the task's.
    await expect.poll(() => server.asked).toBeGreaterThanOrEqual(2);
    expect(up.started).toEqual([]);
    server.status = 'completed';
    await expect.poll(() => up.started).toEqual(['second']);
    up.finish('second');
    await second;
    const asked = server.asked;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.asked).toBe(asked);
  });

  it("lets the task's own requests through at once, and ends its turn when their answers show it ended", async () => {
    for (const [kind, status] of [
      ['tasks/get', 'failed'],
      ['tasks/cancel', 'cancelled'],
      ['tasks/result', 'completed'],
    ] as const) {
      const leases = new FakeLeases();
      const [one, two] = [replica(leases), replica(leases)];
      // The server suggests a slow poll: what ends the turn here is the host's request.
      const server = taskServer({ pollInterval: 60_000 });
      await one(taskCall(), server.next);
      const up = upstream();
      const waiting = call(ALICE);
      const second = two(waiting, up.next('second'));
      await expect.poll(() => waiting.record.waitingOn).toBeDefined();
      // Asked while it works: answered without waiting for the turn its task holds.
      await one(aboutTask('tasks/get', 'task-1'), server.next);
      // Another task's request says nothing of this one.
      server.status = status;
      await one(aboutTask(kind, 'task-9'), server.next);
      expect(leases.held.size, kind).toBe(1);
      await one(aboutTask(kind, 'task-1'), server.next);
      await expect.poll(() => up.started, { timeout: 500 }).toEqual(['second']);
      up.finish('second');
      await second;
    }
  });

  it('gives the turn up when the task outlives its time to live, or its server cannot say how it stands', async () => {
    const infos: string[] = [];
    const logger = { ...silentLogger, info: (message: string) => void infos.push(message) };
    const leases = new FakeLeases();
    const one = replica(leases, { logger });
    const lasting = taskServer({ ttl: 150, pollInterval: 60_000 });
    await one(taskCall(), lasting.next);
    expect(leases.held.size).toBe(1);
    await expect.poll(() => leases.held.size).toBe(0);
    expect(infos).toEqual([
      `alice@https://idp.test's task task-1 at server "memory" no longer holds their turn: its time to live ran out`,
    ]);
    const forgetting = taskServer();
    forgetting.failing = new Error('no task task-1');
    await one(taskCall(), forgetting.next);
    await expect.poll(() => leases.held.size).toBe(0);
    expect(infos[1]).toMatch(
      /no longer holds their turn: its server could not say how it stands: no task task-1/,
    );
  });

  it('keeps the turn on this replica for the next request here until the task ends', async () => {
    const leases = new FakeLeases();
    const one = replica(leases);
    const server = taskServer();
    await one(taskCall(), server.next);
    const up = upstream();
    const queued = one(call(ALICE), up.next('queued'));
    await expect.poll(() => server.asked).toBeGreaterThanOrEqual(2);
    expect(up.started).toEqual([]);
    server.status = 'completed';
    await expect.poll(() => up.started).toEqual(['queued']);
    up.finish('queued');
    await queued;
  });

  it("passes its own polls through the audit stage as the gateway's, keeping the turn while none can be recorded", async () => {
    const leases = new FakeLeases();
    const audited: RoutedMessage[] = [];
    let refusal: Error | undefined = new Error('the audit log cannot be written');
    const audit: Stage = (message, next) => {
      audited.push(message);
      return refusal === undefined ? next(message) : Promise.reject(refusal);
    };
    const one = replica(leases, { audited: audit });
    const server = taskServer();
    await one(taskCall(), server.next);
    // Refused before they were sent: the server is not asked, and the task may still be working.
    await expect.poll(() => audited.length).toBeGreaterThanOrEqual(3);
    expect(server.asked).toBe(0);
    expect(leases.held.size).toBe(1);
    refusal = undefined;
    server.status = 'completed';
    await expect.poll(() => leases.held.size).toBe(0);
    expect(server.asked).toBeGreaterThan(0);
    for (const poll of audited)
      expect(poll).toMatchObject({ kind: 'tasks/get', principal: ALICE, record: { origin: 'gateway' } });
  });

  it('holds no turn for a task that ended as it was created, nor for a task the gateway runs itself', async () => {
    const leases = new FakeLeases();
    const one = replica(leases);
    await one(taskCall(), async () => Outcome.of({ task: { taskId: 'task-1', status: 'completed' } }));
    expect(leases.held.size).toBe(0);
    const driven = derive(call(ALICE), { task: { params: {}, drivenBy: 'gateway' } });
    await one(driven, taskServer().next);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(leases.held.size).toBe(0);
  });
});
