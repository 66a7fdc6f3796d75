import type { Params } from '../protocol/jsonRpc.js';
import { RELATED_TASK } from '../protocol/taskMessages.js';

/**
 * Which host connection a server's own request (an elicitation, a sampling request, roots/list)
 * is put to. Such a question carries the data of the call that caused it, so it must reach the
 * host whose call that is and no other: with several users behind one listener, the "last host
 * that used this server" may be someone else.
 *
 * Over HTTP the tie is on the wire: a question that comes on the answer stream of one of our
 * POSTs is part of the call that POST carried (the transport marks it, see postedStreams.ts).
 * Over stdio nothing ties a server's request to the call it is part of, so the tie is made from
 * what the gateway knows: the calls each connection has in flight on that server (a question
 * asked while exactly one connection waits on the server is that connection's), and the task a
 * question names in its related-task `_meta` (the connection that started the task).
 */
/** Counts each connection's requests in flight on each upstream (by the caller's key). */
export class CallsInFlight<C> {
  readonly #byUpstream = new Map<string, Map<C, number>>();
  #lastStarted = 0;

  /** Counts `connection`'s request on upstream `key` until `answer` settles; returns `answer`. */
  track<T>(key: string, connection: C, answer: Promise<T>): Promise<T> {
    this.#lastStarted = performance.now();
    let counts = this.#byUpstream.get(key);
    if (counts === undefined) this.#byUpstream.set(key, (counts = new Map()));
    counts.set(connection, (counts.get(connection) ?? 0) + 1);
    const done = (): void => {
      const left = (counts.get(connection) ?? 1) - 1;
      if (left > 0) counts.set(connection, left);
      else counts.delete(connection);
      if (counts.size === 0 && this.#byUpstream.get(key) === counts) this.#byUpstream.delete(key);
    };
    answer.then(done, done);
    return answer;
  }

  /** When the latest request was tracked (`performance.now()`); 0 before any. */
  get lastStarted(): number {
    return this.#lastStarted;
  }

  /** The connections with a request in flight on upstream `key` now. */
  callers(key: string): C[] {
    return [...(this.#byUpstream.get(key)?.keys() ?? [])];
  }
}

/** The task a server's request says it is part of (its related-task `_meta`), if any. */
export function relatedTaskOf(meta: Params | undefined): string | undefined {
  const related = meta?.[RELATED_TASK] as Params | undefined;
  return typeof related?.taskId === 'string' ? related.taskId : undefined;
}

export interface AskerQuery<C> {
  readonly server: string;
  readonly method: string;
  readonly meta: Params | undefined;
  /** The connections with a request in flight on this server now. */
  readonly callers: readonly C[];
  /**
   * The connection whose call's answer stream carried the question (HTTP), or undefined when
   * the transport cannot tell or that connection is gone.
   */
  readonly postedFor?: C | undefined;
  /** Every connection this server's messages may reach. */
  readonly reachable: readonly C[];
  /** Whether `connection` started this server's task `taskId` (see TaskRouting). */
  readonly ownsTask: (connection: C, taskId: string) => boolean;
  /**
   * Where a question tied to no call may go without crossing between users: the one stdio host
   * of a gateway without a listener, or the connection of the one principal a per-principal
   * process serves that used it last. Undefined when the server is shared by several users.
   */
  readonly fallback: (() => C | undefined) | undefined;
}

/**
 * The connection that caused a server's question, or why none can be named: a question tied to
 * no call of a server shared by several users is refused rather than shown to anyone.
 */
export function askerOf<C>(query: AskerQuery<C>): C | string {
  const { server, method, callers } = query;
  if (query.postedFor !== undefined) return query.postedFor;
  const taskId = relatedTaskOf(query.meta);
  if (taskId !== undefined) {
    const owner = query.reachable.find((c) => query.ownsTask(c, taskId));
    if (owner !== undefined) return owner;
  }
  if (callers.length === 1) return callers[0]!;
  const fallback = query.fallback?.();
  if (fallback !== undefined) return fallback;
  if (callers.length === 0)
    return `mcp-warden refuses ${method} from server "${server}": it came while no call to that server was in flight, and on a server shared by several users a question is put only to the user whose call caused it`;
  return `mcp-warden refuses ${method} from server "${server}": calls of ${callers.length} host connections to that server are in flight and nothing in the request says whose call it belongs to; it is put to no one rather than to the wrong user`;
}
