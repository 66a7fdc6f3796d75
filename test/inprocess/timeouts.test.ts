/**
 * Call timeouts in-process, on vitest's fake clock: the gateway and an upstream McpServer over
 * memory, so "on time" is exact (not a moment early, not a moment late) however loaded the
 * machine is. A hung tool through the built binary and the fixture server, on the real clock, is
 * in test/integration/callPipeline.test.ts.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { textOf } from '../integration/harness.js';
import type { InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

let running: InProcessGateway | undefined;
const each = servedPerTest();
afterEach(async () => {
  vi.useRealTimers();
});

/** The clocks the gateway's timers read; message delivery (microtasks) stays real. */
const fakeClock = () =>
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'],
  });

function upstream() {
  const seen = { hangId: undefined as unknown, cancelled: [] as unknown[] };
  let called!: () => void;
  const hangCalled = new Promise<void>((resolve) => (called = resolve));
  const make = () => {
    const server = new McpServer({ name: 'up', version: '1' });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({
      content: [{ type: 'text', text }],
    }));
    server.registerTool('hang', { inputSchema: {} }, (_args, extra) => {
      seen.hangId = extra.requestId;
      extra.signal.addEventListener('abort', () => seen.cancelled.push(extra.requestId));
      called();
      return new Promise<never>(() => {});
    });
    server.registerTool('sleep', { inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
      // Progress every 100 ms when the request carries a token: never 300 ms silent.
      const token = extra._meta?.progressToken;
      for (let done = 0; done < ms; done += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        if (token !== undefined)
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: done + 100, total: ms },
          });
      }
      return { content: [{ type: 'text', text: `slept ${ms}` }] };
    });
    return server;
  };
  return { make, seen, hangCalled };
}

describe('timeouts', () => {
  it('a hung tool times out on time, the upstream is told to cancel, and the gateway keeps serving', async () => {
    const up = upstream();
    running = await each.inProcess({
      config: "servers:\n  up: { command: unused, tools: { timeouts: { hang: '300ms' } } }\n",
      upstreams: { up: up.make },
    });
    const { client } = running;
    await client.listTools();
    fakeClock();
    let settled = false;
    const call = client.callTool({ name: 'up__hang', arguments: {} }).finally(() => (settled = true));
    await up.hangCalled;
    await vi.advanceTimersByTimeAsync(299);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const result = await call;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      '[mcp-warden] Tool "hang" on server "up" timed out: no answer or progress for 300ms (its timeout); the call was cancelled upstream.',
    );
    expect(textOf(await client.callTool({ name: 'up__echo', arguments: { text: 'still serving' } }))).toBe(
      'still serving',
    );
    expect(up.seen.cancelled).toEqual([up.seen.hangId]);
  });

  it('progress keeps a long call alive past its idle timeout', async () => {
    const up = upstream();
    running = await each.inProcess({
      config: "servers:\n  up: { command: unused, timeout: '300ms' }\n",
      upstreams: { up: up.make },
    });
    fakeClock();
    const call = running.client.callTool({ name: 'up__sleep', arguments: { ms: 800 } });
    await vi.advanceTimersByTimeAsync(800);
    expect(textOf(await call)).toBe('slept 800');
  });
});
