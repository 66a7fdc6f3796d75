import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/logger.js';
import type { RoutedMessage } from '../../src/core/pipeline/types.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import type { IncomingRequest } from '../../src/core/rpc/peer.js';
import { MAX_TASKS_PAGE, taskRouting, type TaskUpstream } from '../../src/core/tasks/taskRouting.js';

const logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} } as unknown as Logger;

function task(id: string) {
  return { taskId: id, status: 'completed', ttl: null, createdAt: '', lastUpdatedAt: '' };
}

/** Upstreams as pages of task ids, by their own cursor ('' for the first page). */
function routing(pages: Record<string, Record<string, { ids: string[]; next?: string }>>) {
  const upstreams: TaskUpstream[] = Object.keys(pages).map((name) => ({
    name,
    state: 'ready',
    capabilities: { tasks: { list: {} } },
    tools: [],
    era: 'legacy' as const,
  }));
  const asked: string[] = [];
  const tasks = taskRouting({
    owner: () => 'session',
    upstreams: () => upstreams,
    route: () => {},
    respond: () => {},
    ask: () => Promise.reject(new Error('not asked')),
    logger,
    pipeline: (message: RoutedMessage) => {
      const cursor = (message.params?.cursor as string | undefined) ?? '';
      asked.push(`${message.server}:${cursor}`);
      const page = pages[message.server]![cursor]!;
      return Promise.resolve(
        Outcome.of({ tasks: page.ids.map(task), ...(page.next !== undefined && { nextCursor: page.next }) }),
      );
    },
  });
  const list = async (cursor?: string) => {
    let answer: Record<string, unknown> | undefined;
    const request = {
      method: 'tasks/list',
      params: cursor === undefined ? undefined : { cursor },
      meta: undefined,
      onProgress: undefined,
      respond: (outcome: Outcome) => (answer = outcome.result),
    } as unknown as IncomingRequest;
    const handler = new Map(tasks.methods()).get('tasks/list')!;
    await handler(request);
    return answer as { tasks: { taskId: string }[]; nextCursor?: string };
  };
  return { list, asked };
}

async function listAll(
  list: (cursor?: string) => Promise<{ tasks: { taskId: string }[]; nextCursor?: string }>,
) {
  const pages: number[] = [];
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await list(cursor);
    pages.push(page.tasks.length);
    ids.push(...page.tasks.map((t) => t.taskId));
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages.length < 50);
  return { pages, ids };
}

describe('tasks/list across upstreams', () => {
  it('cuts a large upstream page into bounded host pages, and goes on to the next server', async () => {
    const many = Array.from({ length: 250 }, (_, i) => `t${i}`);
    const { list } = routing({ a: { '': { ids: many } }, b: { '': { ids: ['t0'] } } });
    const { pages, ids } = await listAll(list);
    expect(pages).toEqual([MAX_TASKS_PAGE, MAX_TASKS_PAGE, 250 - 2 * MAX_TASKS_PAGE, 1]);
    // 251 tasks, all different handles, though b's "t0" is a's "t0" too.
    expect(new Set(ids).size).toBe(251);
  });

  it('skips empty pages and servers without tasks, following upstream cursors', async () => {
    const { list, asked } = routing({
      a: { '': { ids: [], next: 'p2' }, p2: { ids: ['x'] } },
      b: { '': { ids: [] } },
      c: { '': { ids: ['y', 'z'] } },
    });
    const { pages } = await listAll(list);
    expect(pages).toEqual([1, 2]);
    expect(asked).toEqual(['a:', 'a:p2', 'b:', 'c:']);
  });

  it('refuses a cursor it did not give', async () => {
    const { list } = routing({ a: { '': { ids: ['x'] } } });
    await expect(list('made-up')).rejects.toThrow(/not a cursor this mcp-warden session gave/);
  });
});

describe("a server's tasks/list of the tasks it had the host create", () => {
  /** Routing whose host lists `hostPages` (by its own cursor), and answers to server requests. */
  function hostRouting(hostPages: Record<string, { ids: string[]; next?: string }>) {
    const tasks = taskRouting({
      owner: () => 'session',
      upstreams: () => [],
      route: () => {},
      respond: () => {},
      ask: () => Promise.reject(new Error('not asked')),
      logger,
      pipeline: (message: RoutedMessage) => {
        expect(message.direction).toBe('host');
        const page = hostPages[(message.params?.cursor as string | undefined) ?? '']!;
        return Promise.resolve(
          Outcome.of({
            tasks: page.ids.map(task),
            ...(page.next !== undefined && { nextCursor: page.next }),
          }),
        );
      },
    });
    /** The host ran a request of `server` as task `id`: the server is given its handle. */
    const created = (server: string, id: string) =>
      (tasks.answerForUpstream(server, Outcome.of({ task: task(id) })).result.task as { taskId: string })
        .taskId;
    const list = async (server: string, cursor?: string) => {
      let answer: Record<string, unknown> | undefined;
      const request = {
        method: 'tasks/list',
        params: cursor === undefined ? undefined : { cursor },
        respond: (outcome: Outcome) => (answer = outcome.result),
      } as unknown as IncomingRequest;
      await tasks.listForUpstream(server, request);
      return answer as { tasks: { taskId: string }[]; nextCursor?: string };
    };
    return { tasks, created, list };
  }

  it("shows each server its own tasks only, under its handles, skipping pages of others'", async () => {
    const { created, list } = hostRouting({
      '': { ids: ['h1', 'h2', 'h3'], next: 'c2' },
      c2: { ids: ['h4', 'own-by-host'], next: 'c3' },
      c3: { ids: ['h5'] },
    });
    const a = ['h1', 'h3', 'h5'].map((id) => created('a', id));
    const b = ['h2', 'h4'].map((id) => created('b', id));
    const first = await list('a');
    expect(first.tasks.map((t) => t.taskId)).toEqual(a.slice(0, 2));
    // The host's second page has none of a's: the next answer goes on to the third.
    const second = await list('a', first.nextCursor);
    expect(second.tasks.map((t) => t.taskId)).toEqual([a[2]]);
    expect(second.nextCursor).toBeUndefined();
    const ofB = [];
    let cursor: string | undefined;
    do {
      const page = await list('b', cursor);
      ofB.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(ofB).toEqual(b);
  });

  it("refuses a cursor given to another server, and routes the host's status notifications", async () => {
    const { tasks, created, list } = hostRouting({ '': { ids: ['h1'], next: 'c2' }, c2: { ids: ['h2'] } });
    const handle = created('a', 'h1');
    created('a', 'h2');
    const { nextCursor } = await list('a');
    await expect(list('b', nextCursor)).rejects.toThrow(/not a cursor mcp-warden gave server "b"/);
    expect(tasks.hostStatus({ taskId: 'h1', status: 'completed' })).toEqual({
      server: 'a',
      params: { taskId: handle, status: 'completed' },
    });
    expect(tasks.hostStatus({ taskId: 'unknown', status: 'completed' })).toBeUndefined();
  });
});
