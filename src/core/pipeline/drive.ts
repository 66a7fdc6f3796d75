import type { RoutedMessage } from './types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import type { OutgoingOptions } from '../rpc/peer.js';
import { RELATED_TASK, TERMINAL_STATUSES, taskOf } from '../protocol/taskMessages.js';

/** The upstream a driven task runs on (the pipeline's recipient, seen from here). */
export interface TaskPeer {
  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome>;
}

/** Polls no faster than this, whatever the server suggests: a server must not make us spin. */
export const MIN_POLL_MS = 100;
/** Polls at least this often, so a finished task is noticed soon even if the server suggests hours. */
export const MAX_POLL_MS = 5_000;
/** Without a suggestion from the server. */
export const DEFAULT_POLL_MS = 1_000;

/**
 * Runs a task-augmented tool call for a host that cannot: sends the call with `task`, polls
 * `tasks/get` at the server's `pollInterval` (within MIN/MAX_POLL_MS), tells the host each new
 * status as progress, and answers with what `tasks/result` returns. The call's signal bounds it
 * all: the timeout stage (outside) cancels it at the call's limit, and a cancel, by the host or
 * the timeout, cancels the task upstream too. A server that answers the call at once, without a
 * task, is answered as it is.
 *
 * `input_required` goes straight to `tasks/result`: a server delivers the questions it queued for
 * the task (elicitation) while that request is open, and the router passes them to the host.
 */
export async function driveTask(peer: TaskPeer, message: RoutedMessage, params: Params): Promise<Outcome> {
  const { signal } = message;
  // The host is told the task's statuses as progress, numbered here; the server's own progress
  // for the task, numbered its way, would mix with them, so none is asked for.
  const created = await peer.requestOutcome('tools/call', params, { ...message, onProgress: undefined });
  const task = taskOf(created.result);
  if (task === undefined) return created;
  const { taskId } = task;
  let { status, pollInterval } = task;
  let said = task.statusMessage;
  let step = 0;
  const stopCancelling = signal.onCancel(() => {
    void peer.requestOutcome('tasks/cancel', { taskId }, {}).catch(() => {});
  });
  try {
    while (!TERMINAL_STATUSES.has(status) && status !== 'input_required') {
      await pause(Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, pollInterval ?? DEFAULT_POLL_MS)), signal);
      const now = taskOf((await peer.requestOutcome('tasks/get', { taskId }, { signal })).result);
      if (now === undefined) break;
      if (now.status !== status || now.statusMessage !== said) {
        step += 1;
        // A new status with the old message (a task that just completed) is said by its status.
        const text =
          now.statusMessage === undefined || now.statusMessage === said ? now.status : now.statusMessage;
        message.onProgress?.({ progress: step, message: text });
      }
      ({ status, pollInterval } = now);
      said = now.statusMessage;
    }
    let final: Outcome;
    try {
      final = await peer.requestOutcome('tasks/result', { taskId }, message);
    } catch (error) {
      if (status === 'completed' || signal.cancelled) throw error;
      // A failed or cancelled task may have no result to fetch: its status says why.
      return Outcome.of({
        content: [{ type: 'text', text: `The task ${status}${said === undefined ? '' : `: ${said}`}` }],
        isError: true,
      });
    }
    return withoutRelatedTask(final);
  } finally {
    stopCancelling();
  }
}

/** The host never saw the task, so the result's pointer to it (the upstream's own id) is left out. */
function withoutRelatedTask(outcome: Outcome): Outcome {
  const meta = outcome.result._meta as Params | undefined;
  if (meta === undefined || !Object.hasOwn(meta, RELATED_TASK)) return outcome;
  const { [RELATED_TASK]: _related, ...rest } = meta;
  const { _meta: _old, ...result } = outcome.result;
  return outcome.changed(Object.keys(rest).length === 0 ? result : { ...result, _meta: rest });
}

/** Waits `ms`, or rejects with the signal's reason as soon as it is cancelled. */
export function pause(ms: number, signal: RoutedMessage['signal']): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      resolve();
    }, ms);
    const stop = signal.onCancel((reason) => {
      clearTimeout(timer);
      reject(reason);
    });
  });
}
