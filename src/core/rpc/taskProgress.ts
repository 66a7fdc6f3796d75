import { TERMINAL_STATUSES } from '../protocol/taskMessages.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { ProgressListener } from './progress.js';

/**
 * Most tasks whose progress is kept on one connection at once. Past it, the oldest task's
 * progress is let go (its later progress is dropped, as for any unknown token), so a server that
 * creates tasks and never ends them cannot grow the table.
 */
export const MAX_TASK_PROGRESS = 1_000;

/** The id of a task a result created, when it created one that is not yet over. */
export function createdTaskId(result: Params): string | undefined {
  const task = result.task;
  if (typeof task !== 'object' || task === null || Array.isArray(task)) return undefined;
  const { taskId, status } = task as Params;
  if (typeof taskId !== 'string') return undefined;
  return typeof status === 'string' && TERMINAL_STATUSES.has(status) ? undefined : taskId;
}

/** The task a request or notification concerns by its `taskId`. */
export function taskIdIn(params: Params | undefined): string | undefined {
  const taskId = params?.taskId;
  return typeof taskId === 'string' ? taskId : undefined;
}

/**
 * Progress of requests answered with a task. The spec keeps a request's progress token valid
 * for the life of the task it created, so a server may go on reporting under it after its answer:
 * the request's progress listener is kept by its token until the task ends (a terminal status
 * notification, or the answer to `tasks/result` or `tasks/cancel` for it), bounded by `max`.
 */
export class TaskProgress {
  private readonly byToken = new Map<
    number,
    { readonly taskId: string; readonly listener: ProgressListener }
  >();
  private readonly tokenOf = new Map<string, number>();

  constructor(private readonly max = MAX_TASK_PROGRESS) {}

  get size(): number {
    return this.byToken.size;
  }

  keep(token: number, taskId: string, listener: ProgressListener): void {
    this.release(taskId);
    if (this.byToken.size >= this.max) {
      const oldest = this.byToken.entries().next().value;
      if (oldest !== undefined) this.release(oldest[1].taskId);
    }
    this.byToken.set(token, { taskId, listener });
    this.tokenOf.set(taskId, token);
  }

  listener(token: unknown): ProgressListener | undefined {
    return typeof token === 'number' ? this.byToken.get(token)?.listener : undefined;
  }

  release(taskId: string | undefined): void {
    if (taskId === undefined) return;
    const token = this.tokenOf.get(taskId);
    if (token === undefined) return;
    this.tokenOf.delete(taskId);
    this.byToken.delete(token);
  }

  /** A status notification: a task that ended lets its progress go. */
  status(params: Params | undefined): void {
    const status = params?.status;
    if (typeof status === 'string' && TERMINAL_STATUSES.has(status)) this.release(taskIdIn(params));
  }
}
