import { describe, expect, it } from 'vitest';
import { UpstreamFailedError, UpstreamRpcError } from '../../src/core/errors.js';
import type { JsonRpcMessage } from '../../src/core/protocol/jsonRpc.js';
import { RpcPeer } from '../../src/core/rpc/peer.js';
import { SENT, type MessageTransport } from '../../src/core/rpc/transport.js';
import { TaskProgress } from '../../src/core/rpc/taskProgress.js';

/** An upstream peer whose answers the test writes. */
function upstreamPeer() {
  const transport: MessageTransport = { start: async () => {}, close: async () => {}, send: () => SENT };
  const notified: string[] = [];
  const peer = new RpcPeer({
    transport,
    errors: {
      remote: (e) => new UpstreamRpcError('up', e.code, e.message, e.data),
      failed: (detail, cause) => new UpstreamFailedError('up', detail, { cause }),
      cancelled: (reason) => new Error(reason),
    },
    onNotification: (n) => notified.push(n.method),
    onRequest: () => {},
  });
  const receive = (message: JsonRpcMessage) => transport.onmessage!(message);
  const progress = (token: number, value: number) =>
    receive({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: token, progress: value },
    });
  return { peer, receive, progress, notified };
}

describe('progress after a request is answered with a task', () => {
  it('is passed on until the task ends with a status notification', async () => {
    const { peer, receive, progress, notified } = upstreamPeer();
    const seen: unknown[] = [];
    const call = peer.request(
      'tools/call',
      { name: 't', task: {} },
      { onProgress: (p) => seen.push(p.progress) },
    );
    receive({ jsonrpc: '2.0', id: 1, result: { task: { taskId: 'x', status: 'working' } } });
    await call;
    progress(1, 1);
    expect(peer.tasksWithProgress).toBe(1);
    receive({
      jsonrpc: '2.0',
      method: 'notifications/tasks/status',
      params: { taskId: 'x', status: 'completed' },
    });
    progress(1, 2);
    expect(seen).toEqual([1]);
    expect(peer.tasksWithProgress).toBe(0);
    // The status notification still reaches whoever handles notifications.
    expect(notified).toEqual(['notifications/tasks/status']);
  });

  it('is let go when tasks/result or tasks/cancel for the task is answered, even with an error', async () => {
    const { peer, receive } = upstreamPeer();
    for (const [n, id] of [
      [1, 'a'],
      [2, 'b'],
    ] as const) {
      const call = peer.request('tools/call', { name: 't' }, { onProgress: () => {} });
      receive({ jsonrpc: '2.0', id: n, result: { task: { taskId: id, status: 'working' } } });
      await call;
    }
    expect(peer.tasksWithProgress).toBe(2);
    const result = peer.request('tasks/result', { taskId: 'a' });
    receive({ jsonrpc: '2.0', id: 3, result: { content: [] } });
    await result;
    const cancel = peer.request('tasks/cancel', { taskId: 'b' });
    receive({ jsonrpc: '2.0', id: 4, error: { code: -32602, message: 'gone' } });
    await expect(cancel).rejects.toThrow();
    expect(peer.tasksWithProgress).toBe(0);
  });

  it('is not kept for an answer without a task, or for a task already over', async () => {
    const { peer, receive } = upstreamPeer();
    const plain = peer.request('tools/call', {}, { onProgress: () => {} });
    receive({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    await plain;
    const over = peer.request('tools/call', {}, { onProgress: () => {} });
    receive({ jsonrpc: '2.0', id: 2, result: { task: { taskId: 'x', status: 'failed' } } });
    await over;
    expect(peer.tasksWithProgress).toBe(0);
  });
});

describe('TaskProgress', () => {
  it('keeps at most `max` tasks, letting the oldest go first', () => {
    const table = new TaskProgress(2);
    table.keep(1, 'a', () => {});
    table.keep(2, 'b', () => {});
    table.keep(3, 'c', () => {});
    expect(table.size).toBe(2);
    expect(table.listener(1)).toBeUndefined();
    expect(table.listener(2)).toBeDefined();
    expect(table.listener(3)).toBeDefined();
  });
});
