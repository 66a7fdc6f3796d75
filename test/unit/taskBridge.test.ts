import { describe, expect, it } from 'vitest';
import { bridgeTaskRequest, type TaskBridgeOptions } from '../../src/core/tasks/taskBridge.js';
import { TaskInput } from '../../src/core/tasks/taskInput.js';
import { QuestionWithdrawnError } from '../../src/core/errors.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import type { Params } from '../../src/core/protocol/jsonRpc.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import type { Logger } from '../../src/core/logger.js';

const RELATED = 'io.modelcontextprotocol/related-task';

/** A modern host's tasks/get of the 2025-11-25 server's task `h1`, which the server reports as `task`. */
function modernHostGet(input: TaskInput, task: Params): Promise<Outcome> {
  const options: TaskBridgeOptions = {
    method: 'tasks/get',
    server: 'legacy',
    params: { taskId: 'up-1' },
    taskId: 'up-1',
    handle: 'h1',
    how: 'holdResult',
    send: (method) =>
      Promise.resolve(
        Outcome.of(method === 'tasks/get' ? task : { content: [{ type: 'text', text: 'done' }] }),
      ),
    ask: () => Promise.reject(new Error('not asked here')),
    signal: new Cancellation(),
    input,
    capabilities: { elicitation: {} },
    logger: { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger,
  };
  return bridgeTaskRequest(options);
}

describe('bridgeTaskRequest for a modern host', () => {
  it('withdraws the questions still open when the task ends, telling the server why, and ignores a late answer', async () => {
    const input = new TaskInput();
    input.hold('h1', { elicitation: {} }, () => new Promise<Outcome>(() => {}));
    const asked = input.ask(
      'elicitation/create',
      { message: 'Name?', requestedSchema: {}, _meta: { [RELATED]: { taskId: 'h1' } } },
      {},
    )!;
    const shown = await modernHostGet(input, { taskId: 'up-1', status: 'cancelled' });
    expect(shown.result).toMatchObject({ taskId: 'h1', status: 'cancelled' });
    expect(shown.result).not.toHaveProperty('inputRequests');
    // The server's request is answered with why (an error of ours, not an internal one).
    await expect(asked).rejects.toThrow(QuestionWithdrawnError);
    await expect(asked).rejects.toThrow('its task was cancelled');
    // The host answers it anyway: ignored, nothing answered.
    expect(input.answer('h1', { t1: { action: 'decline' } })).toEqual({ now: [], withdrawn: ['t1'] });
  });
});
