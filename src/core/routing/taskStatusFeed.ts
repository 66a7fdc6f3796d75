import { describeError } from '../../lib/describeError.js';
import type { HostDialect } from '../host/hostDialect.js';
import type { ModernHost } from '../host/modernHost.js';
import type { Logger } from '../logger.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Cancellation } from '../rpc/cancellation.js';
import type { RpcPeer } from '../rpc/peer.js';
import type { TaskRouting, TaskUpstream } from '../tasks/taskRouting.js';

/** Where an upstream task's status change goes, for one way a host hears of tasks. */
interface StatusSink {
  /** A 2025-11-25 server's `notifications/tasks/status`. */
  fromLegacyServer(server: string, params: Params | undefined): void;
  /** A 2026-07-28 server's `notifications/tasks`, on the stream the gateway opened for the task. */
  fromModernServer(upstream: TaskUpstream, params: Params | undefined): void;
}

/**
 * The status of the host's tasks, as upstreams tell it: to a host of the handshake revisions as
 * `notifications/tasks/status` under the task's handle, to a modern host as the whole task on the
 * `subscriptions/listen` streams that asked for it (one state at a time per task, in order).
 */
export class TaskStatusFeed {
  private readonly sinks: Readonly<Record<HostDialect['taskStatus'], StatusSink>>;
  /** The status being made for each task a modern host listens for (in order). */
  private readonly pending = new Map<string, Promise<void>>();

  constructor(
    private readonly options: {
      readonly tasks: TaskRouting;
      readonly modern: ModernHost;
      readonly peer: RpcPeer;
      readonly logger: Logger;
    },
  ) {
    const { tasks, peer } = options;
    this.sinks = {
      notifications: {
        fromLegacyServer: (server, params) => {
          const status = tasks.statuses.status(server, params);
          if (status !== undefined) peer.notify('notifications/tasks/status', status);
        },
        fromModernServer: (upstream, params) => {
          const status = tasks.statuses.modernStatus(upstream, params);
          if (status !== undefined) peer.notify('notifications/tasks/status', status);
        },
      },
      streams: {
        fromLegacyServer: (server, params) => this.legacyServerTask(server, params),
        fromModernServer: (upstream, params) => this.modernServerTask(upstream.name, params),
      },
    };
  }

  /** Where a status goes for a host of `dialect`. */
  for(dialect: HostDialect): StatusSink {
    return this.sinks[dialect.taskStatus];
  }

  /**
   * A stream now listens for these handles. A modern server's task may have changed before the
   * stream was there to hear it: the stream starts with where the task stands.
   */
  listening(handles: readonly string[]): void {
    const { tasks } = this.options;
    for (const handle of handles) {
      const server = tasks.statuses.relayedServerOf(handle)?.name;
      if (server !== undefined) this.inOrder(handle, server, () => tasks.statuses.relayedState(handle));
    }
  }

  /** A stream that listened for these handles ended: those no other stream names are let go. */
  unwatch(handles: readonly string[]): void {
    for (const handle of handles)
      if (!this.options.modern.listensToTask(handle)) this.options.tasks.statuses.unwatch(handle);
  }

  /**
   * A 2025-11-25 server's task changed: a modern host's streams that listen for it get the task
   * as its `tasks/get` would show it (result, error or questions inlined).
   */
  private legacyServerTask(server: string, params: Params | undefined): void {
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') return;
    const handle = this.options.tasks.handleOf(server, taskId);
    if (!this.options.modern.listensToTask(handle)) return;
    this.inOrder(handle, server, () => this.options.tasks.statuses.heldState(handle, new Cancellation()));
  }

  /**
   * A 2026-07-28 server's task changed: a modern host's streams that listen for it get the task
   * as its `tasks/get` would show it (its questions the gateway's own).
   */
  private modernServerTask(server: string, params: Params | undefined): void {
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') return;
    const handle = this.options.tasks.handleOf(server, taskId);
    if (!this.options.modern.listensToTask(handle)) return;
    this.inOrder(handle, server, () => this.options.tasks.statuses.relayedState(handle, params));
  }

  /** Tells the streams listening for `handle` the state `state` makes, after the ones before it. */
  private inOrder(handle: string, server: string, state: () => Promise<Params | undefined>): void {
    const previous = this.pending.get(handle) ?? Promise.resolve();
    const next = previous
      .then(state)
      .then(
        (task) => {
          if (task !== undefined) this.options.modern.taskStatus(handle, task);
        },
        (error: unknown) =>
          this.options.logger.warn(
            `could not tell the host the status of a task of ${server}: ${describeError(error)}`,
          ),
      )
      .finally(() => {
        if (this.pending.get(handle) === next) this.pending.delete(handle);
      });
    this.pending.set(handle, next);
  }
}
