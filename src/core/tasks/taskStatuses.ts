import type { Logger } from '../logger.js';
import { derive } from '../pipeline/routedMessage.js';
import type { Params } from '../protocol/jsonRpc.js';
import { legacyTask } from '../protocol/taskMessages.js';
import type { Cancellation } from '../rpc/cancellation.js';
import type { TaskBook, TaskUpstream } from './taskBook.js';
import { ended, type TaskQuestions } from './taskQuestions.js';

/**
 * The statuses of the host's tasks, as their servers tell them, made into what the host hears:
 * `notifications/tasks/status` under the handle for a host of the handshake revisions, the whole
 * task as its `tasks/get` would show it for a modern host's streams. Also which tasks a modern
 * host's streams can be told of, and when a server's stream for a task is closed.
 */
export class TaskStatuses {
  /** Servers whose status notifications a host without tasks was not sent (logged once each). */
  private readonly notTold = new Set<string>();

  constructor(
    private readonly options: {
      readonly book: TaskBook;
      readonly questions: TaskQuestions;
      readonly logger: Logger;
    },
  ) {}

  /** A `notifications/tasks/status` for the host, or undefined (with the reason logged) when it has none. */
  status(server: string, params: Params | undefined): Params | undefined {
    const { book } = this.options;
    if (!book.hostRunsTasks) {
      // Once per server: a task says its status many times, and the reason is always the same.
      if (!this.notTold.has(server)) {
        this.notTold.add(server);
        this.options.logger.info(
          `did not forward notifications/tasks/status from ${server}: the host did not declare tasks, so mcp-warden runs its tasks (said once per server)`,
        );
      }
      return undefined;
    }
    if (typeof params?.taskId !== 'string' || !book.mayKnow(server, params.taskId)) return undefined;
    return { ...book.resultForHost(server, params), taskId: book.handle(server, params.taskId) };
  }

  /**
   * A modern server's `notifications/tasks` for a 2025-11-25 host: its `notifications/tasks/status`
   * (the task in that revision's shape, under its handle), or undefined when the host has none.
   * A task that ended is watched no more.
   */
  modernStatus(upstream: TaskUpstream, params: Params | undefined): Params | undefined {
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') return undefined;
    if (ended(params!)) upstream.unwatchTask?.(taskId);
    return this.status(upstream.name, {
      ...legacyTask(params!),
      ...(params!._meta !== undefined && { _meta: params!._meta }),
    });
  }

  /**
   * The server of the task `handle` when the gateway asks its questions itself (a modern server,
   * a modern host): such a task's stream starts with where it stands. Undefined for any other.
   */
  relayedServerOf(handle: string): TaskUpstream | undefined {
    const { book } = this.options;
    const ref = book.openHandle(handle);
    const upstream = ref === undefined ? undefined : book.upstream(ref.server);
    if (upstream === undefined) return undefined;
    const how = book.dialect().translation(upstream.era);
    return how === 'relayQuestions' ? upstream : undefined;
  }

  /**
   * The task `handle` of a server whose questions the gateway asks, as a modern host's stream
   * gets it (see TaskQuestions.relayedState); undefined when it is no such task of this host.
   * A task that ended is watched no more.
   */
  async relayedState(handle: string, pushed?: Params): Promise<Params | undefined> {
    const { book } = this.options;
    const ref = book.openHandle(handle);
    const upstream = this.relayedServerOf(handle);
    if (ref === undefined || upstream === undefined) return undefined;
    const message = book.aboutTask(undefined, 'tasks/get', ref, '', { taskId: ref.taskId });
    const shown = await this.options.questions.relayedState(ref, handle, message, pushed);
    if (ended(shown)) upstream.unwatchTask?.(ref.taskId);
    return shown;
  }

  /**
   * The task `handle` of a 2025-11-25 server as a modern host's `tasks/get` shows it (without
   * `resultType`), for a status notification; undefined when it is no task of this host.
   */
  async heldState(handle: string, signal: Cancellation): Promise<Params | undefined> {
    const { book } = this.options;
    const ref = book.openHandle(handle);
    if (ref === undefined) return undefined;
    const asked = book.aboutTask(undefined, 'tasks/get', ref, handle, { taskId: ref.taskId });
    const message = derive(asked, { signal });
    return this.options.questions.heldState(ref, handle, message);
  }

  /**
   * Of `handles` a modern host wants status notifications for, those the gateway can give: its
   * own tasks on servers that push their statuses unasked, and on servers that agree to push them
   * on a stream the gateway opens per task (see `unwatch`).
   */
  async watch(handles: readonly string[]): Promise<string[]> {
    const { book } = this.options;
    const told = await Promise.all(
      handles.map(async (handle) => {
        const ref = book.openHandle(handle);
        const upstream = ref === undefined ? undefined : book.upstream(ref.server);
        return upstream?.watchTask === undefined ? false : upstream.watchTask(ref!.taskId);
      }),
    );
    return handles.filter((_, i) => told[i]);
  }

  /** No stream of the host listens for `handle` any more: its server's stream for it is closed. */
  unwatch(handle: string): void {
    const { book } = this.options;
    const ref = book.openHandle(handle);
    if (ref === undefined) return;
    book.upstream(ref.server)?.unwatchTask?.(ref.taskId);
  }
}
