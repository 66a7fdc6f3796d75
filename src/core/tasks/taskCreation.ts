import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { InvalidParamsError } from '../errors.js';
import { envelopeOf } from '../host/answerShape.js';
import type { RoutedMessage, TaskAugmentation } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { createdTask, declaresTasks } from '../protocol/taskMessages.js';
import type { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import type { TaskBook } from './taskBook.js';

/**
 * How the host's calls become tasks: which calls run as one (as the host asked, or driven by the
 * gateway for a host that runs none), how the created task is answered (under its handle, in the
 * host's era's shape), and which tools the host is told run as tasks.
 */
export class TaskCreation {
  /** The last tool list without `execution`, and the list it was made from. */
  private stripped: { from: string; to: string } | undefined;

  constructor(private readonly book: TaskBook) {}

  /**
   * The host initialized. A host that declares the `tasks` capability is taken to run tasks
   * itself; any other is served as a host without tasks (see `augmentation`, `toolsList`).
   */
  hostInitialized(capabilities: Params | undefined): void {
    this.book.hostRunsTasks = capabilities?.tasks !== undefined && capabilities.tasks !== null;
  }

  /**
   * How a tools/call runs as a task: as the host asked (its `task` params), or driven by the
   * gateway for a host without tasks calling a tool that requires one; undefined otherwise.
   */
  augmentation(
    params: Params | undefined,
    definition: Tool,
    origin?: IncomingRequest,
  ): TaskAugmentation | undefined {
    const task = params?.task;
    // A host whose request declares the tasks extension may be answered with a task: a tool its
    // server runs as one is run so, and the host polls it.
    const support = definition.execution?.taskSupport;
    if (
      (support === 'required' || support === 'optional') &&
      origin !== undefined &&
      declaresTasks(envelopeOf(origin)?.capabilities)
    )
      return { params: {}, drivenBy: 'host' };
    if (task !== undefined) {
      if (typeof task !== 'object' || task === null || Array.isArray(task))
        throw new InvalidParamsError(`tools/call ${String(params?.name)}: params.task must be an object`);
      return { params: task as Params, drivenBy: 'host' };
    }
    if (!this.book.hostRunsTasks && definition.execution?.taskSupport === 'required')
      return { params: {}, drivenBy: 'gateway' };
    return undefined;
  }

  /** The answer to a call the host runs as a task: the task, under its handle. */
  created(message: RoutedMessage, outcome: Outcome): Outcome {
    const { book } = this;
    const result = outcome.result;
    const task = createdTask(result);
    // A server may answer at once, without a task: that result goes as it is.
    if (task === undefined) return outcome;
    const taskId = task.taskId as string;
    book.remember(message.server, taskId, message.target);
    const handle = book.handle(message.server, taskId);
    // A flat task (the tasks extension's shape) keeps only its `_meta` besides the task.
    const flat = task === result;
    const rest = book.resultForHost(
      message.server,
      flat ? (result._meta === undefined ? {} : { _meta: result._meta }) : result,
    );
    const dialect = book.dialect();
    // A host that hears statuses on its connection, and runs tasks, is told this one's from now
    // on; a host that hears them on streams has its server told when a stream names the task.
    if (dialect.watchOnCreation && book.hostRunsTasks)
      book
        .upstream(message.server)
        ?.watchTask?.(taskId)
        .catch(() => false);
    return outcome.changed(dialect.created(rest, task, handle, flat));
  }

  /**
   * The tool list as this host should see it: a host without tasks never sees `execution`
   * (the gateway runs required tasks for it, so to that host every tool is an ordinary one).
   */
  toolsList(json: string): string {
    if (this.book.hostRunsTasks || !json.includes('"execution"')) return json;
    if (this.stripped?.from === json) return this.stripped.to;
    const list = JSON.parse(json) as { tools: Params[] };
    const to = JSON.stringify({
      ...list,
      tools: list.tools.map(({ execution: _execution, ...tool }) => tool),
    });
    this.stripped = { from: json, to };
    return to;
  }
}
