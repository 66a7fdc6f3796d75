import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CallTimeoutError, HostCancelledError, QueueFullError } from '../../src/core/errors.js';
import { createConcurrencyLimitStage, MAX_OPEN_HOST_REQUESTS } from '../../src/features/limits/stage.js';
import {
  createTimeoutStage,
  HOST_REQUEST_TIMEOUT_MS,
  timeoutLimitsFromConfig,
} from '../../src/features/timeout/stage.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import { compose } from '../../src/core/pipeline/compose.js';
import { derive, enterDepth, pipelineDepth, routedMessage } from '../../src/core/pipeline/routedMessage.js';
import type { Logger } from '../../src/core/logger.js';
import { createConfirmationStage } from '../../src/features/confirmation/stage.js';
import { orderStages, STAGE_ORDER } from '../../src/core/pipeline/order.js';
import type { Next, RoutedMessage, Stage } from '../../src/core/pipeline/types.js';
import { Outcome } from '../../src/core/rpc/outcome.js';

function makeCall(overrides: Partial<RoutedMessage> = {}): RoutedMessage {
  return routedMessage({
    kind: 'tools/call',
    direction: 'upstream',
    exposedName: 'up__slow',
    server: 'up',
    target: 'slow',
    definition: { name: 'slow', inputSchema: { type: 'object' } },
    arguments: {},
    params: undefined,
    meta: undefined,
    signal: new Cancellation(),
    onProgress: undefined,
    record: { repairs: [] },
    ...overrides,
  });
}

const ok = Outcome.of({ content: [{ type: 'text', text: 'ok' }] });

/** An upstream stand-in: answers when told to, and records the signal it was given. */
function controllableUpstream() {
  const calls: { call: RoutedMessage; resolve: (r: Outcome) => void }[] = [];
  const next: Next = (call) => new Promise((resolve) => calls.push({ call, resolve }));
  return { next, calls };
}

describe('pipeline order', () => {
  it('is telemetry, rateLimit, audit, principalLimit, pins, validate, policy, flow, confirmation, timeout, resultRepair, guardrails, replicaLease, concurrencyLimit, telemetryUpstream', () => {
    expect(STAGE_ORDER).toEqual([
      'telemetry',
      'rateLimit',
      'audit',
      'principalLimit',
      'pins',
      'validate',
      'policy',
      'flow',
      'confirmation',
      'timeout',
      'resultRepair',
      'guardrails',
      'replicaLease',
      'concurrencyLimit',
      'telemetryUpstream',
    ]);
  });

  it('runs the stages outermost first, whatever order they are given in', async () => {
    const seen: string[] = [];
    const stage =
      (name: string): Stage =>
      async (call, next) => {
        seen.push(`>${name}`);
        const r = await next(call);
        seen.push(`<${name}`);
        return r;
      };
    const stages = orderStages({
      concurrencyLimit: stage('concurrencyLimit'),
      timeout: stage('timeout'),
      audit: stage('audit'),
      resultRepair: stage('resultRepair'),
      guardrails: stage('guardrails'),
      policy: stage('policy'),
      validate: stage('validate'),
    });
    await compose(stages, async () => ok)(makeCall());
    expect(seen).toEqual([
      '>audit',
      '>validate',
      '>policy',
      '>timeout',
      '>resultRepair',
      '>guardrails',
      '>concurrencyLimit',
      '<concurrencyLimit',
      '<guardrails',
      '<resultRepair',
      '<timeout',
      '<policy',
      '<validate',
      '<audit',
    ]);
  });
});

/** Runs `stage` alone before a terminal that counts what reaches it: the count, once refused. */
async function sentWhenRefused(stage: Stage): Promise<number> {
  let sent = 0;
  const pipeline = compose([stage], async () => {
    sent++;
    return ok;
  });
  await expect(pipeline(makeCall())).rejects.toThrow('a pipeline stage called next() twice for one message');
  return sent;
}

describe('compose', () => {
  it('refuses a second next() from one stage for one message, so nothing is sent twice', async () => {
    const twice: Stage = async (message, next) => {
      await next(message);
      return next(message);
    };
    expect(await sentWhenRefused(twice)).toBe(1);
  });

  it('lets each message through once, however many pass', async () => {
    const pipeline = compose([(message, next) => next(message)], async () => ok);
    expect(await Promise.all([pipeline(makeCall()), pipeline(makeCall())])).toEqual([ok, ok]);
  });

  it('refuses a stage that passes a derived message inward twice', async () => {
    const twice: Stage = async (message, next) => {
      const copy = derive(message, { arguments: { approved: true } });
      await next(copy);
      return next(copy);
    };
    expect(await sentWhenRefused(twice)).toBe(1);
  });

  it('lets a message derived from one that went through pass from the start, and refuses the old one again', async () => {
    const seen: RoutedMessage[] = [];
    const pipeline = compose([(message, next) => next(message)], async (message) => {
      seen.push(message);
      return ok;
    });
    const first = makeCall();
    await pipeline(first);
    const again = derive(first, { params: { again: true } });
    expect(await pipeline(again)).toBe(ok);
    // Nor does a plain copy carry it: how deep a message went is not kept on the message.
    expect(await pipeline({ ...first })).toBe(ok);
    await expect(pipeline(first)).rejects.toThrow('a pipeline stage called next() twice for one message');
    expect(seen).toHaveLength(3);
    expect(seen[1]).toBe(again);
  });
});

describe('routedMessage', () => {
  const given = {
    kind: 'prompts/get',
    direction: 'upstream',
    server: 'up',
    target: 'p',
    exposedName: 'up__p',
  } as const;

  it('makes every message with the same members in the same order, whatever it is given', () => {
    const bare = routedMessage({ ...given, signal: new Cancellation() });
    const full = routedMessage({
      ...given,
      signal: new Cancellation(),
      principal: { kind: 'local' } as unknown as RoutedMessage['principal'],
      answerAs: (outcome) => outcome,
      upstreamEra: 'modern',
      hostEra: 'modern',
      requestId: 7,
      meta: { a: 1 },
      params: { name: 'p' },
      takenOverBy: 'replica-b',
    });
    expect(Object.keys(full)).toEqual(Object.keys(bare));
    expect(bare.record).toEqual({ repairs: [] });
    expect(bare.params).toBeUndefined();
    expect(full.requestId).toBe(7);
  });

  it('gives each message a record of its own unless given one', () => {
    const signal = new Cancellation();
    expect(routedMessage({ ...given, signal }).record).not.toBe(routedMessage({ ...given, signal }).record);
  });
});

describe('confirmation', () => {
  const quiet = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} } as unknown as Logger;

  it("runs the approved copy with every member of the call (its task, id and answer's shape too), the arguments frozen", async () => {
    const stage = createConfirmationStage({
      config: { methods: ['elicitation'], timeoutMs: 5000, offerRemember: false },
      askHost: async () => ({ result: { action: 'accept' } }),
      redact: (value) => value,
      logger: quiet,
    });
    const answerAs = (outcome: Outcome) => outcome;
    const call = makeCall({
      arguments: { path: '/tmp/x' },
      decision: { effect: 'confirm', ruleId: 'ask', reason: 'writes files', source: null },
      task: { params: { ttl: 60000 }, drivenBy: 'gateway' },
      requestId: 5,
      hostEra: 'modern',
      upstreamEra: 'legacy',
      answerAs,
    });
    let ran: RoutedMessage | undefined;
    await stage(call, async (message) => {
      ran = message;
      return ok;
    });
    expect(ran).not.toBe(call);
    expect(ran!.task).toBe(call.task);
    expect(ran!.requestId).toBe(5);
    expect(ran!.answerAs).toBe(answerAs);
    expect(ran!.arguments).toEqual({ path: '/tmp/x' });
    expect(Object.isFrozen(ran!.arguments)).toBe(true);
    expect(ran!.record).toBe(call.record);
    expect(ran!.record.decision?.confirmed).toBe(true);
  });
});

describe('derive', () => {
  it("takes the old message's members with the changes over them, and nothing besides", () => {
    const extra = Symbol('extra');
    const old = Object.assign(makeCall({ meta: { m: 1 }, requestId: 3, takenOverBy: 'replica-b' }), {
      [extra]: 1,
      stray: true,
    });
    enterDepth(old, 4);
    const made = derive(old, { arguments: { x: 2 } });
    expect(made).not.toBe(old);
    expect(made.arguments).toEqual({ x: 2 });
    expect(old.arguments).toEqual({});
    expect(made.meta).toBe(old.meta);
    expect(made.requestId).toBe(3);
    expect(made.signal).toBe(old.signal);
    // A copy made by a stage still says which replica took the call over, for its record.
    expect(made.takenOverBy).toBe('replica-b');
    // What the stages write reaches the same audit record.
    expect(made.record).toBe(old.record);
    // The old message's own symbol stays behind; the pipeline's depth starts afresh.
    expect(Object.getOwnPropertySymbols(made)).not.toContain(extra);
    expect(pipelineDepth(old)).toBe(4);
    expect(pipelineDepth(made)).toBeUndefined();
    expect('stray' in made).toBe(false);
    expect(Object.keys(made)).toEqual(Object.keys(routedMessage(old)));
  });
});

describe('timeout interceptor', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const limits = { idleMs: 1000, maxMs: 5000 };

  it('fires at the idle limit, aborts the upstream signal with the reason, and names server, tool and limit', async () => {
    const upstream = controllableUpstream();
    const pending = createTimeoutStage({ limitsFor: () => limits })(makeCall(), upstream.next);
    const settled = pending.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(999);
    expect(upstream.calls[0]!.call.signal.cancelled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = (await settled) as CallTimeoutError;
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(error.kind).toBe('idle');
    expect(error.message).toBe(
      'Tool "slow" on server "up" timed out: no answer or progress for 1s (its timeout); the call was cancelled upstream.',
    );
    expect(upstream.calls[0]!.call.signal.reason).toBe(error);
  });

  it('drops an answer that arrives after the timeout', async () => {
    const upstream = controllableUpstream();
    const settled = createTimeoutStage({ limitsFor: () => limits })(makeCall(), upstream.next).then(
      (r) => r,
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(1000);
    upstream.calls[0]!.resolve(ok);
    expect(await settled).toBeInstanceOf(CallTimeoutError);
  });

  it('restarts the idle timer on progress, forwards the progress, and still enforces the hard maximum', async () => {
    const upstream = controllableUpstream();
    const hostProgress: unknown[] = [];
    const settled = createTimeoutStage({ limitsFor: () => limits })(
      makeCall({ onProgress: (p) => hostProgress.push(p) }),
      upstream.next,
    ).catch((e: unknown) => e);
    const { call } = upstream.calls[0]!;
    for (let t = 0; t < 4; t++) {
      await vi.advanceTimersByTimeAsync(900);
      call.onProgress!({ progress: t });
    }
    // 3600 ms in: well past one idle period, still alive thanks to progress.
    expect(call.signal.cancelled).toBe(false);
    expect(hostProgress).toHaveLength(4);
    for (let t = 0; t < 2; t++) {
      await vi.advanceTimersByTimeAsync(900);
      call.onProgress!({ progress: 10 + t });
    }
    const error = (await settled) as CallTimeoutError;
    expect(error.kind).toBe('max');
    expect(error.message).toContain('it ran for 5s, its maximum (maxTimeout), despite progress');
  });

  it('enforces the hard maximum even when it equals the idle limit', async () => {
    const upstream = controllableUpstream();
    const settled = createTimeoutStage({ limitsFor: () => ({ idleMs: 1000, maxMs: 1000 }) })(
      makeCall(),
      upstream.next,
    ).catch((e: unknown) => e);
    const { call } = upstream.calls[0]!;
    await vi.advanceTimersByTimeAsync(600);
    call.onProgress!({ progress: 1 });
    await vi.advanceTimersByTimeAsync(400);
    expect(((await settled) as CallTimeoutError).kind).toBe('max');
  });

  it('tells a host cancellation apart from a timeout', async () => {
    const upstream = controllableUpstream();
    const host = new Cancellation();
    const settled = createTimeoutStage({ limitsFor: () => limits })(
      makeCall({ signal: host }),
      upstream.next,
    ).catch((e: unknown) => e);
    const reason = new HostCancelledError('user pressed stop');
    host.cancel(reason);
    expect(await settled).toBe(reason);
    expect(upstream.calls[0]!.call.signal.reason).toBe(reason);
  });

  it('times out each of several calls at its own deadline, whichever answered first', async () => {
    const upstream = controllableUpstream();
    const timeout = createTimeoutStage({ limitsFor: () => limits });
    const first = timeout(makeCall(), upstream.next);
    await vi.advanceTimersByTimeAsync(300);
    const second = timeout(makeCall(), upstream.next).catch((e: unknown) => e);
    upstream.calls[0]!.resolve(ok);
    expect(await first).toBe(ok);
    await vi.advanceTimersByTimeAsync(999);
    expect(upstream.calls[1]!.call.signal.cancelled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await second).toBeInstanceOf(CallTimeoutError);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fails a call whose inner stage throws, and leaves no timer behind', async () => {
    const throwing: Next = () => {
      throw new Error('stage threw');
    };
    const timeout = createTimeoutStage({ limitsFor: () => limits });
    await expect(timeout(makeCall(), throwing)).rejects.toThrow('stage threw');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('passes a result through and clears its timers', async () => {
    const upstream = controllableUpstream();
    const pending = createTimeoutStage({ limitsFor: () => limits })(makeCall(), upstream.next);
    upstream.calls[0]!.resolve(ok);
    expect(await pending).toBe(ok);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('concurrency limit', () => {
  const servers = [{ name: 'up', maxConcurrency: 2, maxQueue: 1 }];

  it('runs at most maxConcurrency at once, queues maxQueue more, and refuses the rest', async () => {
    const upstream = controllableUpstream();
    const limit = createConcurrencyLimitStage({ servers });
    const results = [1, 2, 3].map(() => limit(makeCall(), upstream.next));
    await Promise.resolve();
    expect(upstream.calls).toHaveLength(2);
    await expect(limit(makeCall(), upstream.next)).rejects.toThrow(QueueFullError);
    await expect(limit(makeCall(), upstream.next)).rejects.toThrow(
      'Server "up" is busy: 2 calls are running and 1 are waiting (maxConcurrency/maxQueue); try again later.',
    );
    upstream.calls[0]!.resolve(ok);
    await results[0];
    await vi.waitFor(() => expect(upstream.calls).toHaveLength(3));
    upstream.calls[1]!.resolve(ok);
    upstream.calls[2]!.resolve(ok);
    await Promise.all(results);
  });

  it('follows an edit of the servers: an unchanged one keeps its gate and its calls, an added one is bounded', async () => {
    const upstream = controllableUpstream();
    const limit = createConcurrencyLimitStage({ servers: [{ name: 'up', maxConcurrency: 1, maxQueue: 0 }] });
    const running = limit(makeCall(), upstream.next);
    limit.serversChanged([
      { name: 'up', maxConcurrency: 1, maxQueue: 0 },
      { name: 'added', maxConcurrency: 1, maxQueue: 0 },
    ]);
    // The call in flight still holds the only slot of the unchanged server.
    await expect(limit(makeCall(), upstream.next)).rejects.toThrow(QueueFullError);
    const added = limit(makeCall({ server: 'added' }), upstream.next);
    await expect(limit(makeCall({ server: 'added' }), upstream.next)).rejects.toThrow(
      /Server "added" is busy/,
    );
    upstream.calls[0]!.resolve(ok);
    upstream.calls[1]!.resolve(ok);
    await Promise.all([running, added]);
  });

  it('never sends a call that was aborted while it waited', async () => {
    const upstream = controllableUpstream();
    const limit = createConcurrencyLimitStage({
      servers: [{ name: 'up', maxConcurrency: 1, maxQueue: 5 }],
    });
    const first = limit(makeCall(), upstream.next);
    const cancellation = new Cancellation();
    const second = limit(makeCall({ signal: cancellation }), upstream.next).catch((e: unknown) => e);
    cancellation.cancel(new Error('timed out while queued'));
    // Answered at once, while the first call still holds the only slot.
    expect(((await second) as Error).message).toBe('timed out while queued');
    expect(upstream.calls).toHaveLength(1);
    upstream.calls[0]!.resolve(ok);
    await first;
    expect(upstream.calls).toHaveLength(1);
  });

  it('keeps the waiting calls in order when one leaves from the middle, and counts it out of maxQueue', async () => {
    const upstream = controllableUpstream();
    const limit = createConcurrencyLimitStage({
      servers: [{ name: 'up', maxConcurrency: 1, maxQueue: 3 }],
    });
    const call = (name: string, signal = new Cancellation()) =>
      limit(makeCall({ target: name, signal }), upstream.next).catch((e: unknown) => e);
    const cancellation = new Cancellation();
    const running = [call('first'), call('a'), call('b', cancellation), call('c')];
    cancellation.cancel(new Error('gave up'));
    expect(((await running[2]) as Error).message).toBe('gave up');
    // b's place is free again: one more may wait, and the one after it is refused.
    running.push(call('d'));
    expect(await call('e')).toBeInstanceOf(QueueFullError);
    for (let i = 0; i < 4; i++) {
      await vi.waitFor(() => expect(upstream.calls).toHaveLength(i + 1));
      upstream.calls[i]!.resolve(ok);
    }
    await Promise.all(running);
    expect(upstream.calls.map((c) => c.call.target)).toEqual(['first', 'a', 'c', 'd']);
  });

  it('frees the slot of a call that failed, or whose stage threw', async () => {
    const limit = createConcurrencyLimitStage({
      servers: [{ name: 'up', maxConcurrency: 1, maxQueue: 5 }],
    });
    const failing: Next = () => Promise.reject(new Error('upstream said no'));
    const throwing: Next = () => {
      throw new Error('stage threw');
    };
    await expect(limit(makeCall(), failing)).rejects.toThrow('upstream said no');
    await expect(limit(makeCall(), throwing)).rejects.toThrow('stage threw');
    expect(await limit(makeCall(), async () => ok)).toBe(ok);
  });
});

describe('requests a server makes of the host', () => {
  const hostRequest = (overrides: Partial<RoutedMessage> = {}): RoutedMessage =>
    makeCall({ kind: 'elicitation/create', direction: 'host', target: '', exposedName: '', ...overrides });

  it('are refused beyond the open bound per server, and the bound frees as they are answered', async () => {
    const upstream = controllableUpstream();
    const limit = createConcurrencyLimitStage({ servers: [{ name: 'up', maxConcurrency: 1, maxQueue: 0 }] });
    const open = Array.from({ length: MAX_OPEN_HOST_REQUESTS }, () => limit(hostRequest(), upstream.next));
    await expect(limit(hostRequest(), upstream.next)).rejects.toThrow(
      `Server "up" already has ${MAX_OPEN_HOST_REQUESTS} requests open with the host`,
    );
    // Another server has its own bound.
    void limit(hostRequest({ server: 'other' }), upstream.next);
    expect(upstream.calls).toHaveLength(MAX_OPEN_HOST_REQUESTS + 1);
    upstream.calls[0]!.resolve(ok);
    await open[0];
    void limit(hostRequest(), upstream.next);
    expect(upstream.calls).toHaveLength(MAX_OPEN_HOST_REQUESTS + 2);
  });

  it('time out when the host never answers, cancelling the question', async () => {
    vi.useFakeTimers();
    try {
      const upstream = controllableUpstream();
      const stage = createTimeoutStage({ limitsFor: () => ({ idleMs: 1000, maxMs: 1000 }) });
      const settled = stage(hostRequest(), upstream.next).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(1000);
      const error = (await settled) as CallTimeoutError;
      expect(error.message).toBe('elicitation/create from server "up" got no answer from the host within 1s');
      expect(upstream.calls[0]!.call.signal.reason).toBe(error);
    } finally {
      vi.useRealTimers();
    }
  });

  it('are given the host-request limit by the config reader, whatever the server', () => {
    const limitsFor = timeoutLimitsFromConfig({
      servers: [],
      gateway: { callTimeoutMs: 5, maxCallTimeoutMs: 10 },
    } as never);
    expect(limitsFor({ kind: 'roots/list', server: 'up', target: '', direction: 'host' })).toEqual({
      idleMs: HOST_REQUEST_TIMEOUT_MS,
      maxMs: HOST_REQUEST_TIMEOUT_MS,
    });
  });
});
