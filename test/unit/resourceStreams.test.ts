import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/logger.js';
import { MAX_RESOURCE_STREAMS, ResourceStreams } from '../../src/core/upstreams/resourceStreams.js';

const logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} } as unknown as Logger;

describe('resource update streams to a modern server', () => {
  it('watches a bounded number of URIs at once, refusing one more with a message naming the bound', async () => {
    let opened = 0;
    const streams = new ResourceStreams({
      // The server never acknowledges; each stream stays open until it is unsubscribed.
      open: (_filter, { signal }) => {
        opened++;
        return new Promise((_resolve, reject) => signal?.onCancel((reason) => reject(reason)));
      },
      timeoutMs: 60_000,
      server: 'm',
      log: logger,
    });
    const waiting = Array.from({ length: MAX_RESOURCE_STREAMS }, (_, i) =>
      streams.subscribe(`r://${i}`).catch(() => 'ended'),
    );
    await expect(streams.subscribe('r://one-more')).rejects.toThrow(
      `mcp-warden watches at most ${MAX_RESOURCE_STREAMS} resources of server "m" at once`,
    );
    expect(opened).toBe(MAX_RESOURCE_STREAMS);
    // The same URI again is the stream already open, not one more.
    void streams.subscribe('r://0').catch(() => 'ended');
    expect(opened).toBe(MAX_RESOURCE_STREAMS);
    // Room again once one is let go.
    streams.unsubscribe('r://0');
    void streams.subscribe('r://one-more').catch(() => 'ended');
    expect(opened).toBe(MAX_RESOURCE_STREAMS + 1);
    for (let i = 1; i < MAX_RESOURCE_STREAMS; i++) streams.unsubscribe(`r://${i}`);
    streams.unsubscribe('r://one-more');
    expect(new Set(await Promise.all(waiting))).toEqual(new Set(['ended']));
  });
});
