import { describe, expect, it } from 'vitest';
import { DeniedError, QuestionWithdrawnError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/logger.js';
import type { Params } from '../../src/core/protocol/jsonRpc.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { bridgeTaskRequest } from '../../src/core/tasks/taskBridge.js';
import { TaskInput } from '../../src/core/tasks/taskInput.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
const ask = (message: string) => ({
  method: 'elicitation/create',
  params: { message, requestedSchema: {} },
});
const WHO = { action: 'accept', content: { name: 'Ada' } };

const done = { status: 'completed', result: { content: [{ type: 'text', text: 'ok' }] } };

/**
 * A 2025-11-25 host's `tasks/result` for a modern server's task whose `tasks/get` answers come
 * from `states` in turn (the last one repeating), until it is given answers: it is done then. `host` answers each question (or refuses it).
 * Records the questions asked and what goes upstream.
 */
function legacyHostResult(
  states: readonly Params[],
  host: (message: string, signal: Cancellation) => Promise<Params>,
) {
  const upstream: [string, Params][] = [];
  const asked: string[] = [];
  let poll = 0;
  const outcome = bridgeTaskRequest({
    method: 'tasks/result',
    server: 'm',
    params: { taskId: 'up-1' },
    taskId: 'up-1',
    handle: 'h1',
    how: 'pollForResult',
    send: (method, params) => {
      upstream.push([method, params]);
      if (method !== 'tasks/get') return Promise.resolve(Outcome.of({}));
      const answered = upstream.some(([sent]) => sent === 'tasks/update');
      const state = answered ? done : states[Math.min(poll++, states.length - 1)]!;
      return Promise.resolve(Outcome.of({ taskId: 'up-1', pollIntervalMs: 1, ...state }));
    },
    ask: async (_method, params, signal) => {
      const message = String(params?.message);
      asked.push(message);
      return Outcome.of(await host(message, signal));
    },
    signal: new Cancellation(),
    input: new TaskInput(),
    capabilities: undefined,
    logger: quiet,
  });
  return { outcome, upstream, asked };
}

const asking = (requests: Params) => ({ status: 'input_required', inputRequests: requests });
const updates = (upstream: [string, Params][]) =>
  upstream.filter(([method]) => method === 'tasks/update').map(([, params]) => params.inputResponses);

describe('the questions of a modern server’s task, for a 2025-11-25 host', () => {
  it('are asked one at a time in the listed order, and answered upstream together', async () => {
    const both = asking({ who: ask('Who?'), where: ask('Where?') });
    const { outcome, upstream, asked } = legacyHostResult([both], (message) =>
      Promise.resolve(message === 'Who?' ? WHO : { action: 'decline' }),
    );
    expect((await outcome).result).toMatchObject({ content: [{ text: 'ok' }] });
    expect(asked).toEqual(['Who?', 'Where?']);
    expect(updates(upstream)).toEqual([{ who: WHO, where: { action: 'decline' } }]);
  });

  it('withdraws the question at the host when the listing leaves it out, and never sends its answer', async () => {
    let withdrawn: unknown;
    const states = [asking({ who: ask('Who?'), where: ask('Where?') })];
    const { outcome, upstream, asked } = legacyHostResult(states, (message, signal) => {
      if (message === 'Who?') return Promise.resolve(WHO);
      // While the host is asked where, the server stops listing it.
      states.push(asking({ who: ask('Who?') }));
      return new Promise((resolve) =>
        signal.onCancel((reason) => {
          withdrawn = reason;
          resolve({ action: 'accept', content: { place: 'too late' } });
        }),
      );
    });
    await outcome;
    expect(asked).toEqual(['Who?', 'Where?']);
    expect(withdrawn).toBeInstanceOf(QuestionWithdrawnError);
    expect(updates(upstream)).toEqual([{ who: WHO }]);
  });

  it('answers tasks/result with the host’s refusal of a question', async () => {
    const { outcome, upstream } = legacyHostResult([asking({ who: ask('Who?') })], () =>
      Promise.reject(new DeniedError('no questions here', 'no-questions')),
    );
    await expect(outcome).rejects.toThrow('no questions here');
    expect(updates(upstream)).toEqual([]);
  });
});
