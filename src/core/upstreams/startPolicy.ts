import type { ServerConfig } from '../../config/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { taskOf, TERMINAL_STATUSES } from '../protocol/taskMessages.js';
import type { ListKind } from './listSync.js';

/**
 * When an upstream's process runs: a lazy server is listed from its last listing and started on
 * the first request that needs it; a server with an idle timeout is stopped once nothing keeps it
 * busy, and started again on demand. This module holds the parts of that which are not the
 * supervisor's: the listing kept between runs (a port the gateway implements) and the watch that
 * decides when a server is idle.
 */

/** What a server listed, as kept between runs to list a lazy server without starting it. */
export interface ServerListing {
  /** Kept for lazy servers only: the lists it is listed from while not running. */
  readonly lists?: Readonly<Record<ListKind, readonly Record<string, unknown>[]>>;
  /** What the server declared in its handshake (the host's initialize answer is made from it). */
  readonly capabilities: Params;
  readonly instructions?: string;
  /** When it was kept (ISO 8601), as read back; a listing being written needs none. */
  readonly keptAt?: string;
}

/**
 * Where listings are kept between runs. `read` gives nothing when the server entry, or the
 * package it runs, changed since the listing was kept: such a listing may describe other tools.
 */
export interface ListingStore {
  read(server: ServerConfig): ServerListing | undefined;
  write(server: ServerConfig, listing: ServerListing): void;
}

/** Whether a server entry starts lazily (its own `start`, which the loader fills from the gateway's). */
export function startsLazily(server: ServerConfig): boolean {
  return server.start === 'lazy';
}

/** The task methods whose answers say how a task stands. */
const TASK_ANSWERS = new Set(['tools/call', 'tasks/get', 'tasks/result', 'tasks/cancel']);

/**
 * How long a task the server said is running keeps it awake without another word about it. A
 * task whose end the gateway never sees (its host stopped polling) must not keep a process alive
 * for ever; polling or a status notification renews it.
 */
export const TASK_KEEPS_AWAKE_MS = 10 * 60_000;

export interface IdleWatchOptions {
  /** Quiet this long makes the server idle; undefined: never. */
  readonly idleMs: number | undefined;
  /** Whether something other than requests keeps the server awake (resource subscriptions). */
  readonly keptAwake: () => boolean;
  /** The server has been idle for `idleMs`. */
  readonly onIdle: () => void;
}

/**
 * Decides when an upstream is idle: no request in flight, no subscription, no running task, for
 * `idleMs`. Each request in flight holds it awake until it settles; the timer starts when the last
 * one does (or when the server becomes ready), and any new request stops it.
 */
export class IdleWatch {
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Task id → when the server last said it was running. */
  private readonly tasks = new Map<string, number>();
  private running = false;

  constructor(private readonly options: IdleWatchOptions) {}

  /** The server is ready: from now on quiet counts. */
  ready(): void {
    this.running = true;
    this.rearm();
  }

  /** The server stopped (idle, failed or for good): nothing to watch until it is ready again. */
  stopped(): void {
    this.running = false;
    this.tasks.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Holds the server awake while `answer` is pending; notes the tasks its answer reports. */
  track<T>(method: string, answer: Promise<T>, result: (value: T) => Params | undefined): Promise<T> {
    if (this.options.idleMs === undefined) return answer;
    this.inFlight++;
    clearTimeout(this.timer);
    this.timer = undefined;
    const settled = () => {
      this.inFlight--;
      this.rearm();
    };
    answer.then((value) => {
      if (TASK_ANSWERS.has(method)) this.noteTask(result(value));
      settled();
    }, settled);
    return answer;
  }

  /** A task status the server pushed (`notifications/tasks/status`). */
  noteTask(params: Params | undefined): void {
    if (this.options.idleMs === undefined || params === undefined) return;
    const task = taskOf(params);
    if (task === undefined) return;
    if (TERMINAL_STATUSES.has(task.status)) this.tasks.delete(task.taskId);
    else this.tasks.set(task.taskId, Date.now());
    this.rearm();
  }

  private busy(now: number): boolean {
    for (const [id, seen] of this.tasks) if (now - seen >= TASK_KEEPS_AWAKE_MS) this.tasks.delete(id);
    return this.inFlight > 0 || this.tasks.size > 0 || this.options.keptAwake();
  }

  private rearm(): void {
    const { idleMs } = this.options;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (idleMs === undefined || !this.running || this.inFlight > 0) return;
    // A running task or a subscription is checked again when the timer fires: either may end
    // without a request of the host's settling here (an unsubscribe does settle, though).
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.running) return;
      if (this.busy(Date.now())) return this.rearm();
      this.options.onIdle();
    }, idleMs);
    this.timer.unref();
  }
}
