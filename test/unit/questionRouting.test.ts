import { describe, expect, it } from 'vitest';
import { askerOf, CallsInFlight } from '../../src/core/routing/questionRouting.js';

const RELATED = 'io.modelcontextprotocol/related-task';

describe('askerOf', () => {
  const base = {
    server: 'up',
    method: 'elicitation/create',
    meta: undefined,
    reachable: ['alice', 'bob'],
    ownsTask: (c: string, taskId: string) => c === 'bob' && taskId === 't1',
    fallback: undefined,
  };

  it('names the one connection with a call in flight on the server', () => {
    expect(askerOf({ ...base, callers: ['alice'] })).toBe('alice');
  });

  it('names the connection that started the task a question names', () => {
    expect(askerOf({ ...base, callers: ['alice'], meta: { [RELATED]: { taskId: 't1' } } })).toBe('bob');
  });

  it('refuses a question tied to no call, or to calls of several connections, on a shared server', () => {
    expect(askerOf({ ...base, callers: [] })).toMatch(/no call to that server was in flight/);
    expect(askerOf({ ...base, callers: ['alice', 'bob'] })).toMatch(/calls of 2 host connections/);
  });

  it('falls back only where the caller allows it (one host, or one principal)', () => {
    expect(askerOf({ ...base, callers: [], fallback: () => 'alice' })).toBe('alice');
  });
});

describe('CallsInFlight', () => {
  it('counts a connection until each of its answers settles, failures too', async () => {
    const calls = new CallsInFlight<string>();
    let fail!: (error: Error) => void;
    const failing = calls.track('up', 'alice', new Promise<void>((_, reject) => (fail = reject)));
    const ok = calls.track('up', 'alice', Promise.resolve());
    expect(calls.callers('up')).toEqual(['alice']);
    await ok;
    expect(calls.callers('up')).toEqual(['alice']);
    fail(new Error('no'));
    await failing.catch(() => {});
    expect(calls.callers('up')).toEqual([]);
  });
});
