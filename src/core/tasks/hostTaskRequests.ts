import { InvalidParamsError } from '../errors.js';
import { envelopeOf } from '../host/answerShape.js';
import type { Logger } from '../logger.js';
import type { Next, RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import type { HostRunTasksOptions } from './hostRunTasks.js';
import type { TaskBook } from './taskBook.js';
import { fetchedPage, pageOfTasks, type FetchedPage, type ListPosition } from './taskListPaging.js';
import type { TaskQuestions } from './taskQuestions.js';

export interface HostTaskRequestsOptions {
  readonly book: TaskBook;
  readonly questions: TaskQuestions;
  readonly route: HostRunTasksOptions['route'];
  /** The pipeline itself, for `tasks/list`, which asks several upstreams for one answer. */
  readonly pipeline: Next;
  /** Answers `request` with what `answer` settles with (errors through the router's boundary). */
  readonly respond: (request: IncomingRequest, answer: Promise<Outcome>, message: RoutedMessage) => void;
  readonly logger: Logger;
}

const TASK_METHODS = ['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/update'] as const;

/**
 * A host's requests about its tasks: `tasks/get`, `tasks/result`, `tasks/cancel` and
 * `tasks/update` name one task by its handle and go to the server that holds it (translated when
 * the two speak different eras, see TaskQuestions); `tasks/list` pages through every server's.
 */
export class HostTaskRequests {
  constructor(private readonly options: HostTaskRequestsOptions) {}

  /** The methods this serves to the host, with their handlers. */
  methods(): [string, (request: IncomingRequest) => Promise<void> | void][] {
    const byHandle = TASK_METHODS.map((method): [string, (request: IncomingRequest) => void] => [
      method,
      (r) => this.byHandle(r, method),
    ]);
    return [...byHandle, ['tasks/list', (r) => this.list(r)]];
  }

  private byHandle(request: IncomingRequest, kind: (typeof TASK_METHODS)[number]): void {
    const { book, questions } = this.options;
    const handle = request.params?.taskId;
    const ref = book.open(handle, kind);
    // Whatever else the request says (a tasks/update's answers) goes on with the upstream's id.
    const { _meta: _meta, ...own } = request.params ?? {};
    const message = book.aboutTask(request, kind, ref, handle as string, { ...own, taskId: ref.taskId });
    const upstream = book.upstream(ref.server);
    const how = upstream === undefined ? 'passOn' : book.dialect().translation(upstream.era);
    // A modern server's `tasks/result` holds no questions: it passes as it is.
    if (how === 'passOn' || (how === 'relayQuestions' && kind === 'tasks/result'))
      return this.options.route(request, message, (outcome) => book.taskResultForHost(ref, outcome));
    const capabilities = envelopeOf(request)?.capabilities;
    const answer = questions.answer(how, { ref, handle: handle as string, kind, message, capabilities });
    this.options.respond(request, answer, message);
  }

  private async list(request: IncomingRequest): Promise<void> {
    const { book } = this.options;
    const owner = book.owner();
    const serving = book
      .upstreams()
      .filter((u) => u.state === 'ready' && (u.capabilities.tasks as Params | undefined)?.list !== undefined);
    const given = request.params?.cursor;
    let from: ListPosition = { index: 0, cursor: undefined, skip: 0 };
    if (given !== undefined) {
      const position = book.handles.openCursor(given, owner);
      if (position === undefined)
        throw new InvalidParamsError(
          'tasks/list: params.cursor is not a cursor this mcp-warden session gave (altered, or from before a restart)',
        );
      const index = serving.findIndex((u) => u.name === position.server);
      if (index < 0)
        throw new InvalidParamsError(
          `tasks/list: server "${position.server}" of this cursor no longer serves tasks; list again from the start`,
        );
      from = { index, cursor: position.cursor, skip: position.skip };
    }
    const page = await pageOfTasks({
      lists: serving.length,
      from,
      fetch: (index, cursor) => this.page(request, serving[index]!.name, cursor),
      keep: (index, task) =>
        typeof task.taskId === 'string' && book.mayKnow(serving[index]!.name, task.taskId),
    });
    const { after } = page;
    const next =
      after === undefined
        ? undefined
        : book.handles.cursor({
            server: serving[after.index]!.name,
            cursor: after.cursor,
            skip: after.skip,
            owner,
          });
    // Only empty pages so far: the tasks' server does not matter then.
    const server = page.tasks.length > 0 ? serving[page.index]!.name : '';
    const tasks = page.tasks.flatMap((task) =>
      typeof task.taskId === 'string' ? [{ ...task, taskId: book.handle(server, task.taskId) }] : [],
    );
    request.respond(Outcome.of({ tasks, ...(next !== undefined && { nextCursor: next }) }));
  }

  /** One upstream's page of tasks; a server that fails is logged and passed over. */
  private async page(
    request: IncomingRequest,
    server: string,
    cursor: string | undefined,
  ): Promise<FetchedPage> {
    const params = cursor === undefined ? {} : { cursor };
    try {
      const outcome = await this.options.pipeline(
        this.options.book.message(request, 'tasks/list', 'upstream', server, params),
      );
      return fetchedPage(outcome.result);
    } catch (error) {
      this.options.logger.warn(
        `tasks/list: left out the tasks of ${server}: ${error instanceof Error ? error.message : String(error)}`,
      );
      return { tasks: [], next: undefined };
    }
  }
}
