import type { Params } from './jsonRpc.js';

/** The `_meta` key that ties a message to a task (results, notifications, requests). */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/** The 2026-07-28 tasks extension's name, as capabilities declare it. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Whether modern capabilities (a server's, or a request's client capabilities) declare tasks. */
export function declaresTasks(capabilities: Params | undefined): boolean {
  const extensions = capabilities?.extensions;
  return typeof extensions === 'object' && extensions !== null && TASKS_EXTENSION in extensions;
}

/** Statuses after which a task changes no more. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** The parts of a task the gateway reads. */
export interface TaskState {
  readonly taskId: string;
  readonly status: string;
  readonly statusMessage: string | undefined;
  readonly pollInterval: number | undefined;
}

/**
 * The task in a result: a CreateTaskResult's `task`, or a task itself (`tasks/get`,
 * `tasks/cancel`). Undefined when the result holds none (a server that ran the call at once).
 */
export function taskOf(result: Params): TaskState | undefined {
  const inner = result.task;
  const task =
    typeof inner === 'object' && inner !== null && !Array.isArray(inner) ? (inner as Params) : result;
  const { taskId, status, statusMessage, pollInterval } = task;
  if (typeof taskId !== 'string' || typeof status !== 'string') return undefined;
  return {
    taskId,
    status,
    statusMessage: typeof statusMessage === 'string' ? statusMessage : undefined,
    pollInterval:
      typeof pollInterval === 'number' && Number.isFinite(pollInterval) ? pollInterval : undefined,
  };
}

/**
 * `meta` with its related-task id replaced by `map(id)`; the same object when it has none. When
 * `map` answers undefined (an id that cannot be translated), the related-task member is left out.
 */
export function retagRelatedTask(
  meta: Params | undefined,
  map: (taskId: string) => string | undefined,
): Params | undefined {
  if (meta === undefined || !Object.hasOwn(meta, RELATED_TASK)) return meta;
  const related = meta[RELATED_TASK] as Params | undefined;
  const { [RELATED_TASK]: _old, ...rest } = meta;
  const id = typeof related?.taskId === 'string' ? map(related.taskId) : undefined;
  if (id === undefined) return Object.keys(rest).length === 0 ? undefined : rest;
  return { ...rest, [RELATED_TASK]: { ...related, taskId: id } };
}

/** How each era spells a task's lifetime and its polling interval. */
const SPELLINGS = {
  legacy: { ttl: 'ttl', poll: 'pollInterval' },
  modern: { ttl: 'ttlMs', poll: 'pollIntervalMs' },
} as const;

/** The task's own fields, whichever era's shape `source` has, in the 2025-11-25 shape. */
export function legacyTask(source: Params): Params {
  return taskAs(source, 'legacy', 'modern');
}

/** The task's own fields, whichever era's shape `source` has, in the 2026-07-28 shape. */
export function modernTask(source: Params): Params {
  return taskAs(source, 'modern', 'legacy');
}

function taskAs(source: Params, era: 'legacy' | 'modern', other: 'legacy' | 'modern'): Params {
  const to = SPELLINGS[era];
  const from = SPELLINGS[other];
  const task: Params = {
    taskId: source.taskId,
    status: source.status,
    createdAt: source.createdAt,
    lastUpdatedAt: source.lastUpdatedAt,
    // A lifetime in neither spelling is unlimited (null).
    [to.ttl]: pick(source[to.ttl], source[from.ttl]) ?? null,
  };
  const poll = pick(source[to.poll], source[from.poll]);
  if (poll !== undefined) task[to.poll] = poll;
  if (typeof source.statusMessage === 'string') task.statusMessage = source.statusMessage;
  return task;
}

/** The first of two spellings that is a number. */
function pick(first: unknown, second: unknown): number | undefined {
  if (typeof first === 'number') return first;
  return typeof second === 'number' ? second : undefined;
}

/**
 * The task a created-task answer holds, in either era's shape (`{ task }`, or flat with
 * `resultType: "task"`); undefined for an ordinary result.
 */
export function createdTask(result: Params): Params | undefined {
  const inner = result.task;
  if (typeof inner === 'object' && inner !== null && typeof (inner as Params).taskId === 'string')
    return inner as Params;
  return result.resultType === 'task' && typeof result.taskId === 'string' ? result : undefined;
}
