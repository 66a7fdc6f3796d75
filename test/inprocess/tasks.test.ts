/**
 * Tasks in-process: the SDK's McpServer with its experimental task support behind the gateway,
 * the SDK Client as a host that runs tasks, and a host of 2026-07-28 that does not. What the
 * built binary shows with server-everything and the task fixture is in
 * test/integration/tasks.test.ts.
 */
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type InProcessGateway, type InProcessModernGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

const RELATED = 'io.modelcontextprotocol/related-task';
const TASK_HOST = { tasks: { list: {}, cancel: {} } };

const each = servedPerTest();

/** The server's task store, noting each task the server was asked about (tasks/get, tasks/result). */
class RecordingStore extends InMemoryTaskStore {
  readonly seen: { method: string; taskId?: string }[] = [];
  override getTask(taskId: string, sessionId?: string) {
    this.seen.push({ method: 'get', taskId });
    return super.getTask(taskId, sessionId);
  }
  override getTaskResult(taskId: string, sessionId?: string) {
    this.seen.push({ method: 'result', taskId });
    return super.getTaskResult(taskId, sessionId);
  }
}

/** A server that runs `work` as a task; the test finishes each task when it likes. */
function taskServer(support: 'optional' | 'required') {
  const store = new RecordingStore();
  const seen = store.seen;
  const finish = new Map<string, (text: string) => Promise<void>>();
  const make = () => {
    const server = new McpServer(
      { name: 'up', version: '1' },
      {
        capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
        taskStore: store,
      },
    );
    server.experimental.tasks.registerToolTask(
      'work',
      { inputSchema: { text: z.string() }, execution: { taskSupport: support } },
      {
        createTask: async ({ text }, extra) => {
          const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: 100 });
          seen.push({ method: 'create', taskId: task.taskId });
          finish.set(task.taskId, (suffix) =>
            extra.taskStore.storeTaskResult(task.taskId, 'completed', {
              content: [{ type: 'text', text: `${text}${suffix}` }],
            }),
          );
          return { task };
        },
        getTask: async (_args, extra) => (await extra.taskStore.getTask(extra.taskId))!,
        getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
      },
    );
    return server;
  };
  return { make, store, seen, finish };
}

async function host(make: () => McpServer): Promise<InProcessGateway> {
  return each.inProcess({
    config: 'servers:\n  up: { command: unused }\n',
    upstreams: { up: make },
    client: { capabilities: TASK_HOST },
  });
}

async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe('a task-augmented tools/call through the gateway, in-process', () => {
  it('answers with a handle; tasks/get and tasks/result reach the server under its own id', async () => {
    const up = taskServer('optional');
    const { client } = await host(up.make);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'up__work')?.execution).toEqual({ taskSupport: 'optional' });

    const created = await client.request(
      {
        method: 'tools/call',
        params: { name: 'up__work', arguments: { text: 'tide' }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const handle = created.task.taskId;
    const upstreamId = up.seen.find((s) => s.method === 'create')?.taskId;
    expect(upstreamId).toMatch(/^[0-9a-f]{32}$/);
    // The host is given a sealed handle, never the server's id.
    expect(handle).not.toBe(upstreamId);
    expect(handle).toMatch(/^[A-Za-z0-9_-]{64,}$/);
    expect(created.task.status).toBe('working');

    const working = await client.experimental.tasks.getTask(handle);
    expect(working.taskId).toBe(handle);
    expect(working.status).toBe('working');
    expect(up.seen).toContainEqual({ method: 'get', taskId: upstreamId });

    await up.finish.get(upstreamId!)!(' done');
    const done = await client.experimental.tasks.getTask(handle);
    expect(done.status).toBe('completed');
    const result = await client.experimental.tasks.getTaskResult(handle, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'tide done' }]);
    // The result names the task by the host's handle.
    expect(result._meta?.[RELATED]).toEqual({ taskId: handle });
    expect(up.seen).toContainEqual({ method: 'result', taskId: upstreamId });
  });

  it("a handle is the host connection's own: another gateway's host is refused, and the server is not asked", async () => {
    const up = taskServer('optional');
    const first = await host(up.make);
    const second = await host(up.make);
    const created = await first.client.request(
      {
        method: 'tools/call',
        params: { name: 'up__work', arguments: { text: 'mine' }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const handle = created.task.taskId;
    const asked = up.seen.length;

    const refused = await rpcError(second.client.experimental.tasks.getTask(handle));
    expect(refused.code).toBe(-32602);
    expect(refused.message).toContain('not a task handle this mcp-warden session gave');
    const result = await rpcError(
      second.client.experimental.tasks.getTaskResult(handle, CallToolResultSchema),
    );
    expect(result.code).toBe(-32602);
    expect(up.seen.length).toBe(asked);

    // The host that created it still can.
    expect((await first.client.experimental.tasks.getTask(handle)).status).toBe('working');
  });
});

describe('a 2026-07-28 host and a tool that runs only as a task, in-process', () => {
  it('the gateway runs the task for it and answers with the result', async () => {
    const up = taskServer('required');
    const modern: InProcessModernGateway = await each.inProcessModern({
      config: 'servers:\n  up: { command: unused }\n',
      upstreams: { up: up.make },
    });
    const list = await modern.request('tools/list');
    const tool = (list.result?.['tools'] as { name: string; execution?: unknown }[]).find(
      (t) => t.name === 'up__work',
    );
    expect(tool).toBeDefined();
    expect(tool).not.toHaveProperty('execution');

    const call = modern.request('tools/call', { name: 'up__work', arguments: { text: 'ebb' } });
    // The gateway created the task upstream and polls it; finish it once it has asked.
    await expect.poll(() => up.seen.some((s) => s.method === 'get')).toBe(true);
    const upstreamId = up.seen.find((s) => s.method === 'create')!.taskId!;
    await up.finish.get(upstreamId)!(' flowed');
    const answer = await call;
    expect(answer.error).toBeUndefined();
    expect(answer.result?.['resultType']).toBe('complete');
    expect(answer.result?.['content']).toEqual([{ type: 'text', text: 'ebb flowed' }]);
    expect(answer.result).not.toHaveProperty('task');
    expect(up.seen).toContainEqual({ method: 'result', taskId: upstreamId });
  });
});
