import { describeError } from '../../lib/describeError.js';
import { NotServingError, UpstreamFailedError, UpstreamRpcError } from '../errors.js';
import type { Logger } from '../logger.js';
import { Cancellation } from '../rpc/cancellation.js';
import { RpcErrorCode, type Params } from '../protocol/jsonRpc.js';
import type { OutgoingOptions } from '../rpc/peer.js';
import { META } from '../protocol/envelope.js';

export interface ResourceStreamsOptions {
  /** Sends `subscriptions/listen` with this filter on the connection; settles when the stream ends. */
  readonly open: (notifications: Params, options: OutgoingOptions) => Promise<unknown>;
  /** How long the server gets to acknowledge a stream. */
  readonly timeoutMs: number;
  readonly server: string;
  readonly log: Logger;
}

/**
 * At most this many URIs are watched on one server at once: each holds a request open on its
 * connection, so hosts subscribing without end must not grow it without end.
 */
export const MAX_RESOURCE_STREAMS = 256;

/** At most this many tasks are watched on one server at once (a stream each, as for URIs). */
export const MAX_TASK_STREAMS = 256;

/** What one stream watches: a resource's updates, or a task's status. */
interface Watched {
  /** The filter field that names it (`resourceSubscriptions`, `taskIds`). */
  readonly field: 'resourceSubscriptions' | 'taskIds';
  /** The URI or the task id. */
  readonly name: string;
}

interface Stream extends Watched {
  /** The field and name together: the stream's key in the table. */
  readonly key: string;
  readonly cancel: Cancellation;
  id: number | undefined;
  acknowledged: boolean;
  /** Settles once the server acknowledged the stream (with the URI) or it failed first. */
  readonly ready: Promise<void>;
  accept(): void;
  refuse(error: Error): void;
}

/**
 * Resource updates from a modern server, for subscriptions made the legacy way. The stateless
 * revision has no `resources/subscribe`: a client opens a `subscriptions/listen` stream naming the
 * URIs it watches, and the stream's filter is fixed when it opens. So each subscribed URI gets a
 * stream of its own here: a subscribe opens one and is answered once the server acknowledges it
 * (naming the URI), an unsubscribe cancels it. The streams live as long as the connection; a
 * restart opens them again from the subscriptions the host still holds.
 *
 * Task statuses of the tasks extension come the same way (`taskIds`): a stream per task a
 * 2025-11-25 host runs on the server, cancelled when the task ends.
 */
export class ResourceStreams {
  private readonly byKey = new Map<string, Stream>();
  private readonly byId = new Map<number, Stream>();
  /** How many streams watch tasks (the rest watch resources). */
  private tasks = 0;

  constructor(private readonly options: ResourceStreamsOptions) {}

  /** Opens the URI's stream (once); resolves when the server has agreed to send its updates. */
  subscribe(uri: string): Promise<void> {
    if (
      this.byKey.size - this.tasks >= MAX_RESOURCE_STREAMS &&
      !this.byKey.has(keyOf('resourceSubscriptions', uri))
    )
      return Promise.reject(
        new NotServingError(
          `mcp-warden watches at most ${MAX_RESOURCE_STREAMS} resources of server "${this.options.server}" at once; unsubscribe from one first`,
        ),
      );
    return this.watch({ field: 'resourceSubscriptions', name: uri });
  }

  /**
   * Opens a stream for the status of the server's task `taskId` (`notifications/tasks`), once;
   * resolves when the server has agreed. Past MAX_TASK_STREAMS it is refused.
   */
  watchTask(taskId: string): Promise<void> {
    if (this.tasks >= MAX_TASK_STREAMS && !this.byKey.has(keyOf('taskIds', taskId)))
      return Promise.reject(
        new NotServingError(
          `mcp-warden watches at most ${MAX_TASK_STREAMS} tasks of server "${this.options.server}" at once`,
        ),
      );
    return this.watch({ field: 'taskIds', name: taskId });
  }

  /** Stops watching the task: its stream is cancelled (the server is told). */
  unwatchTask(taskId: string): void {
    const stream = this.byKey.get(keyOf('taskIds', taskId));
    if (stream !== undefined) this.end(stream, new Error('the task ended'));
  }

  private watch(watched: Watched): Promise<void> {
    const key = keyOf(watched.field, watched.name);
    const existing = this.byKey.get(key);
    if (existing !== undefined) return existing.ready;
    const { server, timeoutMs, log } = this.options;
    const what = watched.field === 'taskIds' ? `task ${watched.name}` : JSON.stringify(watched.name);
    let accept!: () => void;
    let refuse!: (error: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      accept = resolve;
      refuse = reject;
    });
    const stream: Stream = {
      ...watched,
      key,
      cancel: new Cancellation(),
      id: undefined,
      acknowledged: false,
      ready,
      accept: () => {
        clearTimeout(timer);
        stream.acknowledged = true;
        accept();
      },
      refuse: (error) => {
        clearTimeout(timer);
        this.end(stream, error);
        refuse(error);
      },
    };
    const timer = setTimeout(
      () =>
        stream.refuse(
          new UpstreamFailedError(
            server,
            `did not acknowledge a subscriptions/listen stream within ${timeoutMs} ms`,
          ),
        ),
      timeoutMs,
    );
    this.byKey.set(key, stream);
    if (watched.field === 'taskIds') this.tasks += 1;
    this.options
      .open(
        { [watched.field]: [watched.name] },
        {
          signal: stream.cancel,
          onSent: (id) => {
            stream.id = id;
            this.byId.set(id, stream);
          },
        },
      )
      .then(
        () => {
          // The server closed the stream on its own (it is shutting down, say).
          if (!stream.acknowledged)
            return stream.refuse(
              new UpstreamFailedError(server, 'closed a subscriptions/listen stream unacknowledged'),
            );
          if (this.forget(stream))
            log.warn(`ended the update stream for ${what}; the host gets no updates for it`);
        },
        (error: unknown) => {
          const reason = error instanceof Error ? error : new Error(String(error));
          if (!stream.acknowledged) return stream.refuse(reason);
          if (this.forget(stream)) log.warn(`the update stream for ${what} failed: ${describeError(reason)}`);
        },
      );
    return ready;
  }

  /** Stops the URI's updates: its stream is cancelled (the server is told). */
  unsubscribe(uri: string): void {
    const stream = this.byKey.get(keyOf('resourceSubscriptions', uri));
    if (stream !== undefined) this.end(stream, new Error('the host unsubscribed'));
  }

  /**
   * A `notifications/subscriptions/acknowledged` from the server: true when it acknowledged one
   * of these streams (which then counts as subscribed only if the server names its URI).
   */
  acknowledged(params: Params | undefined): boolean {
    const id = (params?._meta as Params | undefined)?.[META.subscriptionId];
    const stream = typeof id === 'number' ? this.byId.get(id) : undefined;
    if (stream === undefined || stream.acknowledged) return stream !== undefined;
    const granted = (params?.notifications as Params | undefined)?.[stream.field];
    if (Array.isArray(granted) && granted.includes(stream.name)) stream.accept();
    else
      stream.refuse(
        new UpstreamRpcError(
          this.options.server,
          RpcErrorCode.InvalidParams,
          `server "${this.options.server}" declined updates for ${stream.field === 'taskIds' ? `task ${stream.name}` : JSON.stringify(stream.name)}`,
        ),
      );
    return true;
  }

  /** Whether `uri`'s updates are being received (or asked for). */
  has(uri: string): boolean {
    return this.byKey.has(keyOf('resourceSubscriptions', uri));
  }

  private end(stream: Stream, reason: Error): void {
    if (this.forget(stream)) stream.cancel.cancel(reason);
  }

  /** Drops the stream from the tables; false when it was gone already. */
  private forget(stream: Stream): boolean {
    if (this.byKey.get(stream.key) !== stream) return false;
    this.byKey.delete(stream.key);
    if (stream.field === 'taskIds') this.tasks -= 1;
    if (stream.id !== undefined) this.byId.delete(stream.id);
    return true;
  }
}

function keyOf(field: Watched['field'], name: string): string {
  return `${field}\u0000${name}`;
}
