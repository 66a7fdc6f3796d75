/**
 * Tasks through the gateway served in-process (as `mcp-warden --config` runs it), with the SDK
 * Client as host: server-everything's task tool compared with a direct connection, and two task
 * fixtures whose task ids collide.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  McpError,
  TaskStatusNotificationSchema,
  type CallToolResult,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import {
  FAST_GATEWAY,
  NODE,
  readAudit,
  ROOT,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { connectServed } from './served.js';
import { servedPerTest } from './perTest.js';

const TASK_FIXTURE = path.join(ROOT, 'test/fixtures/task-server.mjs');
/** What a host that runs tasks itself declares. */
const TASK_HOST = { tasks: { list: {}, cancel: {} } };

/**
 * Serves `configFile` once, until every server has connected and been listed, so that the next
 * gateway keeps their listings (as `keepListings` does with the binary).
 */
async function keepListings(configFile: string): Promise<void> {
  const once = await connectServed(configFile);
  await once.client.listTools();
  await once.close();
}

function taskServer(args: string[] = []) {
  return { command: NODE, args: [TASK_FIXTURE, ...args] };
}

/** Runs a task-augmented call the way a host does (the SDK's stream), collecting what it yields. */
async function runAsTask(client: Client, name: string, args: Record<string, unknown>) {
  const created: Task[] = [];
  const statuses: Task[] = [];
  let result: CallToolResult | undefined;
  let error: Error | undefined;
  for await (const message of client.experimental.tasks.callToolStream(
    { name, arguments: args },
    CallToolResultSchema,
    { task: { ttl: 60_000 } },
  )) {
    if (message.type === 'taskCreated') created.push(message.task);
    else if (message.type === 'taskStatus') statuses.push(message.task);
    else if (message.type === 'result') result = message.result as CallToolResult;
    else error = message.error;
  }
  if (error !== undefined) throw error;
  return { task: created[0]!, statuses, result: result! };
}

async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe('server-everything tasks, through the gateway and direct', () => {
  let host: HostSession;
  let direct: Client;
  const notified: Task[] = [];

  beforeAll(async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      mcpServers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    // What the initialize answer declares is what the server declared, however slow its start.
    await keepListings(config);
    host = await shared.connect(config, {
      capabilities: TASK_HOST,
      beforeConnect: (client) =>
        client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
          notified.push(n.params as Task);
        }),
    });
    direct = new Client({ name: 'direct', version: '1' }, { capabilities: TASK_HOST });
    await direct.connect(
      new StdioClientTransport({ command: NODE, args: [serverBin('everything')], stderr: 'ignore' }),
    );
  });
  afterAll(async () => {
    await direct?.close();
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('declares tasks as the server does, and lists the task tool with its execution', async () => {
    expect(host.client.getServerCapabilities()?.tasks).toEqual(direct.getServerCapabilities()?.tasks);
    const tool = (await host.client.listTools()).tools.find(
      (t) => t.name === 'everything__simulate-research-query',
    );
    const directTool = (await direct.listTools()).tools.find((t) => t.name === 'simulate-research-query');
    expect(tool?.execution).toEqual({ taskSupport: 'required' });
    expect(tool?.execution).toEqual(directTool?.execution);
  });

  it('runs simulate-research-query as a task under an opaque handle, with the same report as direct', async () => {
    const via = await runAsTask(host.client, 'everything__simulate-research-query', { topic: 'tides' });
    const straight = await runAsTask(direct, 'simulate-research-query', { topic: 'tides' });

    // The host never sees the upstream's id: the handle is another, longer, opaque string.
    expect(straight.task.taskId).toMatch(/^[0-9a-f]{32}$/);
    expect(via.task.taskId).toMatch(/^[A-Za-z0-9_-]{64,}$/);
    expect(via.task.status).toBe(straight.task.status);
    expect(via.statuses.at(-1)?.status).toBe('completed');
    // Every status the host polled carries the handle it was given.
    for (const status of via.statuses) expect(status.taskId).toBe(via.task.taskId);
    expect(via.result.content).toEqual(straight.result.content);
    // The result's related-task meta points at the handle, not the upstream's id.
    expect(via.result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId: via.task.taskId });

    // The server's status notifications reached the host, re-tagged to the handle.
    const mine = notified.filter((n) => n.taskId === via.task.taskId);
    expect(mine.map((n) => n.status)).toContain('completed');
    expect(notified.every((n) => !/^[0-9a-f]{32}$/.test(n.taskId))).toBe(true);

    // tasks/list shows the task under the same handle.
    const { tasks } = await host.client.experimental.tasks.listTasks();
    expect(tasks.map((t) => t.taskId)).toContain(via.task.taskId);
  });

  it('refuses a forged or altered handle with -32602', async () => {
    const { task } = await runAsTask(host.client, 'everything__simulate-research-query', { topic: 'x' });
    const tasks = host.client.experimental.tasks;
    const forged = await rpcError(tasks.getTask('task-1'));
    expect(forged.code).toBe(-32602);
    expect(forged.message).toContain('not a task handle this mcp-warden session gave');
    const flip = task.taskId.at(-5) === 'A' ? 'B' : 'A';
    const altered = `${task.taskId.slice(0, -5)}${flip}${task.taskId.slice(-4)}`;
    expect((await rpcError(tasks.getTask(altered))).code).toBe(-32602);
    expect((await rpcError(tasks.cancelTask(altered))).code).toBe(-32602);
    expect((await rpcError(host.client.experimental.tasks.listTasks('not-a-cursor'))).code).toBe(-32602);
    // The genuine handle still works.
    expect((await tasks.getTask(task.taskId)).status).toBe('completed');
  });
});

describe('a task that asks the host a question (input_required)', () => {
  it("passes the server's elicitation to the host, tied to the task's handle", async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      mcpServers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    const asked: { message: string; related: unknown }[] = [];
    const host = await connectServed(config, {
      capabilities: { ...TASK_HOST, elicitation: {} },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push({
            message: request.params.message,
            related: request.params._meta?.['io.modelcontextprotocol/related-task'],
          });
          return { action: 'accept', content: { interpretation: 'historical' } };
        }),
    });
    try {
      const { task, result } = await runAsTask(host.client, 'everything__simulate-research-query', {
        topic: 'tides',
        ambiguous: true,
      });
      expect(asked).toHaveLength(1);
      expect(asked[0]!.message).toContain('[everything] The research query "tides"');
      expect(asked[0]!.related).toEqual({ taskId: task.taskId });
      expect(textOf(result)).toContain('# Research Report: tides (historical)');
    } finally {
      await host.close();
    }
  });
});

describe('a host without tasks and a tool that requires one', () => {
  let host: HostSession;

  beforeAll(async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      mcpServers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    host = await shared.connect(config);
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('gets the final report, with progress, where a direct connection cannot call the tool', async () => {
    const { tools } = await host.client.listTools();
    const tool = tools.find((t) => t.name === 'everything__simulate-research-query');
    expect(tool).toBeDefined();
    expect(tool).not.toHaveProperty('execution');

    const progress: string[] = [];
    const result = await host.client.callTool(
      { name: 'everything__simulate-research-query', arguments: { topic: 'tides' } },
      CallToolResultSchema,
      { onprogress: (p) => progress.push(p.message ?? '') },
    );
    expect(textOf(result)).toContain('# Research Report: tides');
    expect(result._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
    expect(progress).toContain('Generating report...');

    const direct = new Client({ name: 'direct', version: '1' });
    await direct.connect(
      new StdioClientTransport({ command: NODE, args: [serverBin('everything')], stderr: 'ignore' }),
    );
    await direct.listTools();
    await expect(
      direct.callTool({ name: 'simulate-research-query', arguments: { topic: 'tides' } }),
    ).rejects.toThrow(/requires task-based execution/);
    await direct.close();
  });
});

/** A host that runs sampling as a task when asked (as the SDK lets a client do with a task store). */
function samplingTaskHost(client: Client): void {
  client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    const answer = {
      role: 'assistant' as const,
      content: { type: 'text' as const, text: 'sampled!' },
      model: 'm',
    };
    if (request.params.task === undefined || extra.taskStore === undefined) return answer;
    const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: 50 });
    setTimeout(() => void extra.taskStore?.storeTaskResult(task.taskId, 'completed', answer), 100);
    return { task };
  });
}

const SAMPLING_TASK_HOST = {
  sampling: {},
  tasks: { cancel: {}, requests: { sampling: { createMessage: {} } } },
};

describe('a server that has the host run sampling as a task (trigger-sampling-request-async)', () => {
  it('is offered the tool and completes it through the gateway as it does direct', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      mcpServers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    const host = await connectServed(config, {
      capabilities: SAMPLING_TASK_HOST,
      taskStore: new InMemoryTaskStore(),
      beforeConnect: samplingTaskHost,
    });
    // The host's own options: a task store so it can run requests as tasks.
    const direct = new Client(
      { name: 'direct', version: '1' },
      { capabilities: SAMPLING_TASK_HOST, taskStore: new InMemoryTaskStore() },
    );
    samplingTaskHost(direct);
    await direct.connect(
      new StdioClientTransport({ command: NODE, args: [serverBin('everything')], stderr: 'ignore' }),
    );
    try {
      const listed = (await host.client.listTools()).tools.map((t) => t.name);
      expect(listed).toContain('everything__trigger-sampling-request-async');
      const via = textOf(
        await host.client.callTool({
          name: 'everything__trigger-sampling-request-async',
          arguments: { prompt: 'hi' },
        }),
      );
      const straight = textOf(
        await direct.callTool({ name: 'trigger-sampling-request-async', arguments: { prompt: 'hi' } }),
      );
      const withoutIds = (text: string) => text.replace(/("taskId": "|Task created: )[^"\n]+/g, '$1ID');
      expect(via).toContain('[COMPLETED] Async sampling completed!');
      expect(withoutIds(via)).toBe(withoutIds(straight));
    } finally {
      await host.close();
      await direct.close();
    }
  });

  it('is not offered to a host whose tasks do not cover sampling', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      mcpServers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    const host = await connectServed(config, { capabilities: { sampling: {}, tasks: { list: {} } } });
    try {
      const listed = (await host.client.listTools()).tools.map((t) => t.name);
      expect(listed).toContain('everything__trigger-sampling-request');
      expect(listed).not.toContain('everything__trigger-sampling-request-async');
    } finally {
      await host.close();
    }
  });
});

describe('two task servers whose task ids collide', () => {
  let host: HostSession;
  let auditFile: string;
  let recordA: string;
  const notified: Task[] = [];

  beforeAll(async () => {
    const dir = tempDir();
    auditFile = path.join(dir, 'audit.jsonl');
    recordA = path.join(dir, 'a.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        mcpServers: {
          a: taskServer(['--done', '3', '--record', recordA]),
          b: taskServer(['--done', '2']),
        },
      },
      dir,
    );
    host = await shared.connect(config, {
      capabilities: TASK_HOST,
      beforeConnect: (client) =>
        client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
          notified.push(n.params as Task);
        }),
    });
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('merges tasks/list across both servers, page by page, with a cursor', async () => {
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await host.client.experimental.tasks.listTasks(cursor);
      pages.push(page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined && pages.length < 10);
    // a: 3 tasks in pages of 2, then b: 2 tasks; both servers number theirs task-1, task-2, ...
    expect(pages.map((p) => p.length)).toEqual([2, 1, 2]);
    const all = pages.flat();
    expect(new Set(all).size).toBe(5);
    for (const handle of all) expect(handle).not.toMatch(/^task-/);
  });

  it('gives the same upstream id on two servers two handles, each routed to its own server', async () => {
    // Each server's next task is task-4 (a) and task-3 (b); make them collide on task-4.
    const first = await runAsTask(host.client, 'b__report', { n: 1 });
    const [onA, onB] = await Promise.all([
      runAsTask(host.client, 'a__report', { n: 5 }),
      runAsTask(host.client, 'b__report', { n: 7 }),
    ]);
    expect(first.task.taskId).not.toBe(onA.task.taskId);
    expect(onA.task.taskId).not.toBe(onB.task.taskId);
    // The two upstreams both called their task "task-4": the record of a shows its own id.
    const sent = readFileSync(recordA, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { method: string; params?: { taskId?: string } });
    expect(sent.filter((m) => m.method === 'tasks/result').map((m) => m.params?.taskId)).toContain('task-4');
    // Each result came from its own server (n doubled), repaired (structuredContent from its text).
    expect(onA.result.structuredContent).toEqual({ total: 10, tool: 'report' });
    expect(onB.result.structuredContent).toEqual({ total: 14, tool: 'report' });
    const tasks = host.client.experimental.tasks;
    expect((await tasks.getTask(onA.task.taskId)).taskId).toBe(onA.task.taskId);

    // Status notifications arrived under the handles, never under the upstreams' ids.
    expect(notified.some((n) => n.taskId === onA.task.taskId && n.status === 'completed')).toBe(true);
    expect(notified.some((n) => n.taskId === onB.task.taskId && n.status === 'completed')).toBe(true);
    expect(notified.every((n) => !n.taskId.startsWith('task-'))).toBe(true);

    // Audit: the call that created the task is judged and recorded; each follow-up is a request
    // record of its own kind; the result's repair is recorded on tasks/result.
    const records = readAudit(auditFile);
    const calls = records.filter((r) => r.type === 'call' && r.tool === 'a__report');
    expect(calls.length).toBeGreaterThan(0);
    const results = records.filter(
      (r) => r.type === 'request' && r.method === 'tasks/result' && r.server === 'a',
    ) as unknown as { repairs?: string[]; target?: string; decision: { effect: string } }[];
    expect(results.length).toBeGreaterThan(0);
    expect(results.at(-1)?.target).toBe('report');
    expect(results.at(-1)?.repairs?.length).toBeGreaterThan(0);
    expect(results.at(-1)?.decision.effect).toBe('allow');
    expect(records.some((r) => r.type === 'request' && r.method === 'tasks/get')).toBe(true);
    expect(records.some((r) => r.type === 'request' && r.method === 'tasks/list')).toBe(true);
  });

  it('runs a required-task tool for a host without tasks, and cancels it upstream when the host cancels', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'slow.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        mcpServers: { slow: taskServer(['--task-ms', '60000', '--record', record]), quick: taskServer() },
      },
      dir,
    );
    const plain = await connectServed(config);
    try {
      const { tools } = await plain.client.listTools();
      expect(tools.find((t) => t.name === 'quick__required-work')).not.toHaveProperty('execution');
      const result = await plain.client.callTool({ name: 'quick__required-work', arguments: { n: 4 } });
      expect(JSON.parse(textOf(result))).toEqual({ total: 8, tool: 'required-work' });

      const controller = new AbortController();
      const pending = plain.client.callTool(
        { name: 'slow__required-work', arguments: {} },
        CallToolResultSchema,
        {
          signal: controller.signal,
        },
      );
      // Cancel once the gateway has started polling the task.
      await waitFor(() => methodsIn(record).includes('tasks/get'));
      controller.abort('changed my mind');
      await expect(pending).rejects.toThrow();
      await waitFor(() => methodsIn(record).includes('tasks/cancel'));
    } finally {
      await plain.close();
    }
  });
});

describe('a task the gateway runs, past the call timeout', () => {
  it('ends with the timeout, and the task is cancelled upstream', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'slow.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        servers: { slow: { ...taskServer(['--task-ms', '60000', '--record', record]), timeout: '500ms' } },
      },
      dir,
    );
    const plain = await connectServed(config);
    try {
      const result = await plain.client.callTool({ name: 'slow__required-work', arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/500 ?ms/);
      await waitFor(() => methodsIn(record).includes('tasks/cancel'));
    } finally {
      await plain.close();
    }
  });
});

function methodsIn(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { method: string }).method);
  } catch {
    return [];
  }
}

/** Waits for `check` to hold, re-checking as the event loop turns; fails after 10 s. */
async function waitFor(check: () => boolean): Promise<void> {
  const until = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('progress a server reports for a task after creating it', () => {
  /** Runs `report` as a task, collecting the progress the host's onprogress sees. */
  async function progressOf(client: Client, name: string): Promise<number[]> {
    const seen: number[] = [];
    let result: CallToolResult | undefined;
    for await (const message of client.experimental.tasks.callToolStream(
      { name, arguments: { n: 2 } },
      CallToolResultSchema,
      { task: { ttl: 60_000 }, onprogress: (p) => seen.push(p.progress) },
    )) {
      if (message.type === 'result') result = message.result as CallToolResult;
      if (message.type === 'error') throw message.error;
    }
    expect(textOf(result!)).toContain('"total":4');
    return seen;
  }

  it('reaches the host through the gateway as it does direct', async () => {
    const args = ['--progress', '3', '--task-ms', '400'];
    const direct = new Client({ name: 'direct', version: '1' }, { capabilities: TASK_HOST });
    await direct.connect(
      new StdioClientTransport({ command: NODE, args: [TASK_FIXTURE, ...args], stderr: 'ignore' }),
    );
    const directSeen = await progressOf(direct, 'report');
    await direct.close();
    expect(directSeen).toEqual([1, 2, 3]);

    const config = writeConfig({ gateway: FAST_GATEWAY, mcpServers: { a: taskServer(args) } });
    const host = await connectServed(config, { capabilities: TASK_HOST });
    try {
      expect(await progressOf(host.client, 'a__report')).toEqual(directSeen);
    } finally {
      await host.close();
    }
  });
});

describe('servers that list the tasks they had the host create', () => {
  const host_ = { ...SAMPLING_TASK_HOST, tasks: { ...SAMPLING_TASK_HOST.tasks, list: {} } };
  interface Report {
    created: string[];
    listed: string[];
    capabilities: { tasks?: { list?: object } };
  }
  const report = async (client: Client, name: string, count: number): Promise<Report> =>
    JSON.parse(textOf(await client.callTool({ name, arguments: { count } }))) as Report;
  /** Waits until the host has completed every task it runs (it tells the server when it does). */
  /** Every task in the host's own store, page by page. */
  const hostTasks = async (store: InMemoryTaskStore): Promise<Task[]> => {
    const all: Task[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.listTasks(cursor);
      all.push(...page.tasks);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return all;
  };
  const allDone = (store: InMemoryTaskStore) =>
    vi.waitFor(
      async () => {
        expect((await hostTasks(store)).every((t) => t.status === 'completed')).toBe(true);
      },
      { timeout: 5_000, interval: 50 },
    );

  it('see their own tasks only, across the host’s pages, as a direct connection sees them', async () => {
    const directStore = new InMemoryTaskStore();
    const direct = new Client(
      { name: 'direct', version: '1' },
      { capabilities: host_, taskStore: directStore },
    );
    samplingTaskHost(direct);
    await direct.connect(new StdioClientTransport({ command: NODE, args: [TASK_FIXTURE], stderr: 'ignore' }));
    const straight = await report(direct, 'host-tasks', 6);
    await allDone(directStore);
    await direct.close();
    expect(straight.listed).toEqual(straight.created);
    expect(straight.capabilities.tasks?.list).toBeDefined();

    const config = writeConfig({ gateway: FAST_GATEWAY, mcpServers: { a: taskServer(), b: taskServer() } });
    const store = new InMemoryTaskStore();
    const host = await connectServed(config, {
      capabilities: host_,
      taskStore: store,
      beforeConnect: samplingTaskHost,
    });
    try {
      // The host pages its list by 10: a's six, then b's six, then one more of a's.
      const a1 = await report(host.client, 'a__host-tasks', 6);
      const b = await report(host.client, 'b__host-tasks', 6);
      const a2 = await report(host.client, 'a__host-tasks', 1);
      expect(a1.capabilities.tasks?.list).toBeDefined();
      expect(a1.listed).toEqual(a1.created);
      expect(b.listed).toEqual(b.created);
      expect(a2.listed).toEqual([...a1.created, ...a2.created]);
      // Handles, not the host's ids: what the host's own list shows is never what a server sees.
      const hostIds = (await hostTasks(store)).map((t) => t.taskId);
      expect(hostIds).toHaveLength(13);
      for (const id of [...a2.listed, ...b.listed]) expect(hostIds).not.toContain(id);

      // Each task's status notifications (the host completes them) reach their own server only.
      const statuses = async (name: string) =>
        JSON.parse(textOf(await host.client.callTool({ name, arguments: {} }))) as {
          taskId: string;
          status: string;
        }[];
      const aCreated = [...a1.created, ...a2.created];
      await vi.waitFor(
        async () => {
          const completed = (await statuses('a__host-task-statuses')).filter((s) => s.status === 'completed');
          expect(new Set(completed.map((s) => s.taskId))).toEqual(new Set(aCreated));
        },
        { timeout: 5_000, interval: 50 },
      );
      const onA = await statuses('a__host-task-statuses');
      const onB = await statuses('b__host-task-statuses');
      expect(onA.every((s) => aCreated.includes(s.taskId))).toBe(true);
      expect(onB.every((s) => b.created.includes(s.taskId))).toBe(true);
      await allDone(store);
    } finally {
      await host.close();
    }
  });
});
