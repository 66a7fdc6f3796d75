import type { Logger } from '../logger.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import { HostRunTasks } from './hostRunTasks.js';
import { HostTaskRequests, type HostTaskRequestsOptions } from './hostTaskRequests.js';
import { remember, TaskBook, type TaskBookOptions } from './taskBook.js';
import { TaskCreation } from './taskCreation.js';
import { TaskInput } from './taskInput.js';
import { TaskQuestions, type TaskQuestionsOptions } from './taskQuestions.js';
import { TaskRelay } from './taskRelay.js';
import { TaskStatuses } from './taskStatuses.js';

export { MAX_LIST_FETCHES, MAX_TASKS_PAGE } from './taskListPaging.js';
export { MAX_REMEMBERED_TASKS, type TaskUpstream } from './taskBook.js';

/** What task routing is built from (see each part's options). */
export interface TaskRoutingOptions
  extends
    TaskBookOptions,
    Pick<TaskQuestionsOptions, 'ask' | 'record'>,
    Omit<HostTaskRequestsOptions, 'book' | 'questions'> {
  /**
   * The task questions held for the host (see TaskMemory), which whoever made them lets go of;
   * one of its own when absent (tests).
   */
  readonly memory?: TaskMemory;
}

/**
 * What the gateway holds of one host's tasks: the questions of 2025-11-25 servers' tasks held
 * for a modern host (taskInput.ts), and those of modern servers' tasks, which the gateway
 * asks and relays (taskRelay.ts). A connection that lasts has its own; the stateless
 * requests of one principal, each a connection of its own, share one, so that the questions one
 * request's `tasks/get` showed are answered by a later request's `tasks/update`.
 */
export class TaskMemory {
  readonly input = new TaskInput();
  readonly relay: TaskRelay;

  constructor(logger: Logger) {
    this.relay = new TaskRelay(this.input, logger);
  }

  /** Lets go of every question held (whoever waits on one gets `reason`). */
  close(reason: Error): void {
    this.relay.close(reason);
    this.input.close(reason);
  }
}

/** The collaborators task routing is made of (see `taskRouting`, which builds them). */
export interface TaskRoutingParts {
  readonly book: TaskBook;
  readonly creation: TaskCreation;
  readonly requests: HostTaskRequests;
  readonly statuses: TaskStatuses;
  readonly hostRun: HostRunTasks;
}

/**
 * Tasks across the gateway, for one host connection, wired from its parts: the host sees each
 * upstream task under a handle (handles.ts) that says which server holds it, and every request
 * about a task passes the one pipeline as its own kind of message.
 */
export function taskRouting(options: TaskRoutingOptions): TaskRouting {
  const { pipeline, logger } = options;
  const book = new TaskBook(options);
  const memory = options.memory ?? new TaskMemory(logger);
  const questions = new TaskQuestions({ ...options, book, input: memory.input, relay: memory.relay });
  return new TaskRouting({
    book,
    creation: new TaskCreation(book),
    requests: new HostTaskRequests({ ...options, book, questions }),
    statuses: new TaskStatuses({ book, questions, logger }),
    hostRun: new HostRunTasks({
      handles: book.handles,
      route: options.route,
      pipeline,
      message: (request, kind, server, params) => book.message(request, kind, 'host', server, params),
      metaForUpstream: (server, meta) => book.metaForUpstream(server, meta),
      remember,
    }),
  });
}

/**
 * What the router's parts ask of tasks, each answered by the part it belongs to: creation
 * answers (TaskCreation), the host's task requests (HostTaskRequests), statuses fed to the host
 * (TaskStatuses), the tasks the host runs for servers (HostRunTasks) and the handle book.
 */
export class TaskRouting {
  constructor(private readonly parts: TaskRoutingParts) {}

  /** The methods this serves to the host, with their handlers. */
  methods(): [string, (request: IncomingRequest) => Promise<void> | void][] {
    return this.parts.requests.methods();
  }

  hostInitialized(capabilities: Params | undefined): void {
    this.parts.creation.hostInitialized(capabilities);
  }

  get creation(): TaskCreation {
    return this.parts.creation;
  }

  get statuses(): TaskStatuses {
    return this.parts.statuses;
  }

  toolsList(json: string): string {
    return this.parts.creation.toolsList(json);
  }

  metaForHost(server: string, meta: Params | undefined): Params | undefined {
    return this.parts.book.metaForHost(server, meta);
  }

  metaForUpstream(server: string, meta: Params | undefined): Params | undefined {
    return this.parts.book.metaForUpstream(server, meta);
  }

  /** The handle of `server`'s task `taskId`, as this host knows it. */
  handleOf(server: string, taskId: string): string {
    return this.parts.book.handle(server, taskId);
  }

  /** Whether this host started `server`'s task `taskId` (it knows which tool runs it). */
  ownsTask(server: string, taskId: string): boolean {
    return this.parts.book.ownsTask(server, taskId);
  }

  /** The host's answer to `server`'s request, its task (if it ran one) under a handle for that server. */
  answerForUpstream(server: string, outcome: Outcome): Outcome {
    return this.parts.hostRun.answerForUpstream(server, outcome);
  }

  /** A server follows up a task it had the host create (see HostRunTasks). */
  fromUpstream(server: string, request: IncomingRequest): void {
    this.parts.hostRun.fromUpstream(server, request);
  }

  /** A server lists the tasks it had the host create (see HostRunTasks). */
  listForUpstream(server: string, request: IncomingRequest): Promise<void> {
    return this.parts.hostRun.listForUpstream(server, request);
  }

  /** The host's status notification for one of its tasks, for the server that had it run it. */
  hostStatus(params: Params | undefined): { server: string; params: Params } | undefined {
    return this.parts.hostRun.hostStatus(params);
  }
}
