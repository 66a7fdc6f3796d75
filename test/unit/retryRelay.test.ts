/**
 * The retry relay's bounds, over an in-memory publish/subscribe standing in for the store: a
 * holder nobody listens for is reported gone at once, a silent one after the store's timeout (and
 * told to drop the retry, which it then does not serve), and a live one's answer comes back in
 * order. The same relay over a real redis-server: test/integration/replicaRetries.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/logger.js';
import type { SharedStore } from '../../src/lib/store/sharedStore.js';
import { createRetryRelay, type MirroredAnswer, type Reply } from '../../src/http/retryRelay.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;

/** Channels and their listeners; `hold` keeps a channel's messages until `release` (a stopped process). */
function memoryStore() {
  const listeners = new Map<string, (message: string) => void>();
  const held = new Map<string, string[]>();
  const store = {
    publish(channel: string, message: string) {
      const listener = listeners.get(channel);
      if (listener === undefined) return Promise.resolve(0);
      const queue = held.get(channel);
      if (queue !== undefined) queue.push(message);
      else queueMicrotask(() => listener(message));
      return Promise.resolve(1);
    },
    listen(channel: string, listener: (message: string) => void) {
      listeners.set(channel, listener);
      return Promise.resolve();
    },
  } as unknown as SharedStore;
  return {
    store,
    hold: (channel: string) => held.set(channel, []),
    release(channel: string) {
      const queue = held.get(channel) ?? [];
      held.delete(channel);
      for (const message of queue) listeners.get(channel)!(message);
    },
  };
}

/** What the replica the host waits on saw of the answer. */
function recorder() {
  const seen: string[] = [];
  let settle!: () => void;
  const done = new Promise<void>((resolve) => (settle = resolve));
  const out: MirroredAnswer = {
    head: (status) => seen.push(`head ${status}`),
    chunk: (text) => seen.push(`chunk ${text}`),
    end: (text) => {
      seen.push(`end ${text ?? ''}`);
      settle();
    },
    lost: (why) => {
      seen.push(`lost ${why}`);
      settle();
    },
  };
  return { seen, done, out };
}

const retry = { principal: 'p', body: { id: 1 }, headers: {} };

describe('retry relay', () => {
  it('reports a holder nobody listens for as gone at once', async () => {
    const { store } = memoryStore();
    const sender = createRetryRelay({ store, replica: 'b', timeoutMs: 60_000, logger: quiet });
    await sender.listen(() => {});
    const { seen, done, out } = recorder();
    sender.sendOn('a', retry, out);
    await done;
    expect(seen).toEqual(['lost it is gone (no replica of that name is listening)']);
  });

  it('mirrors what the holder writes, in order, and ends with its end', async () => {
    const { store } = memoryStore();
    const sender = createRetryRelay({ store, replica: 'b', timeoutMs: 60_000, logger: quiet });
    const holder = createRetryRelay({ store, replica: 'a', timeoutMs: 60_000, logger: quiet });
    await sender.listen(() => {});
    const served: unknown[] = [];
    await holder.listen((got, reply: Reply) => {
      served.push(got);
      reply.writeHead(200, { 'Content-Type': 'text/event-stream' });
      reply.write('one');
      reply.write('two');
      reply.end('last');
    });
    const { seen, done, out } = recorder();
    sender.sendOn('a', retry, out);
    await done;
    expect(served).toEqual([{ ...retry, from: 'b' }]);
    expect(seen).toEqual(['head 200', 'chunk one', 'chunk two', 'end last']);
  });

  it('gives up on a silent holder after the timeout, and the holder, woken, does not serve the retry', async () => {
    const memory = memoryStore();
    const sender = createRetryRelay({ store: memory.store, replica: 'b', timeoutMs: 50, logger: quiet });
    const holder = createRetryRelay({ store: memory.store, replica: 'a', timeoutMs: 50, logger: quiet });
    await sender.listen(() => {});
    let served = 0;
    await holder.listen(() => served++);
    memory.hold('retries:a');
    const { seen, done, out } = recorder();
    sender.sendOn('a', retry, out);
    await done;
    expect(seen).toEqual(['lost it did not answer within 50 ms']);
    // The retry and the cancel reach the holder together once it wakes.
    memory.release('retries:a');
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(served).toBe(0);
  });
});
