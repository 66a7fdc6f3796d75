import { describe, expect, it } from 'vitest';
import { TaskInput } from '../../src/core/tasks/taskInput.js';
import { TaskRelay, type RelayContext } from '../../src/core/tasks/taskRelay.js';
import { DeniedError, InvalidParamsError, UpstreamFailedError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/logger.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import type { Params } from '../../src/core/protocol/jsonRpc.js';
import { Outcome } from '../../src/core/rpc/outcome.js';

const LIMITS = { maxTasks: 1, maxQuestions: 16, firstQuestionMs: 10_000 };
const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
const NAME = { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: {} } };

/**
 * A relay over a TaskInput, whose questions reach the input the way the pipeline's terminal
 * delivers them (after a hop), unless `deny` refuses them on the way. Records what goes upstream.
 */
function setUp(deny = false) {
  const input = new TaskInput(LIMITS);
  const relay = new TaskRelay(input, quiet);
  const sent: [string, Params][] = [];
  let asked = 0;
  const context = (handle = 'h1'): RelayContext => ({
    handle,
    server: 'm',
    taskId: `up-${handle}`,
    send: (method, params) => {
      sent.push([method, params]);
      return Promise.resolve(Outcome.of({}));
    },
    ask: async (method, params, meta, signal) => {
      asked++;
      await Promise.resolve();
      if (deny) throw new DeniedError('no questions here', 'no-questions');
      return input.ask(method, { ...params, _meta: meta }, { signal })!;
    },
    capabilities: { elicitation: {} },
    signal: new Cancellation(),
  });
  return { input, relay, sent, context, asked: () => asked };
}

const inputRequired = (requests: Params) => ({
  taskId: 'up-h1',
  status: 'input_required',
  inputRequests: requests,
});

describe('TaskRelay', () => {
  it('shows the server’s questions under its own keys, once, and relays answers under the server’s', async () => {
    const { relay, sent, context, asked } = setUp();
    const shown = await relay.view(context(), inputRequired({ who: NAME }));
    expect(shown.taskId).toBe('h1');
    const requests = shown.inputRequests as Record<string, { params: Params }>;
    const [key] = Object.keys(requests);
    expect(key).not.toBe('who');
    expect(requests[key!]!.params._meta).toEqual({
      'io.modelcontextprotocol/related-task': { taskId: 'h1' },
    });
    // A second listing of the same question asks nothing more.
    expect((await relay.view(context(), inputRequired({ who: NAME }))).inputRequests).toEqual(requests);
    expect(asked()).toBe(1);
    // The server's key is not one the host was shown.
    await expect(relay.update('h1', { who: { action: 'decline' } })).rejects.toThrow(InvalidParamsError);
    const answer = { action: 'accept', content: { name: 'Ada' } };
    expect(await relay.update('h1', { [key!]: answer })).toEqual({ who: answer });
    // Repeated: ignored, nothing to send.
    expect(await relay.update('h1', { [key!]: answer })).toBeUndefined();
    expect(sent).toEqual([]);
  });

  it('cancels the task upstream when a question is refused, and shows it failed with the refusal', async () => {
    const { relay, sent, context } = setUp(true);
    const shown = await relay.view(context(), inputRequired({ who: NAME }));
    expect(shown).toMatchObject({
      status: 'failed',
      error: { message: expect.stringContaining('no questions here') },
    });
    expect(shown).not.toHaveProperty('inputRequests');
    expect(sent).toEqual([['tasks/cancel', { taskId: 'up-h1' }]]);
    // The server now says cancelled; the host still learns why.
    expect(await relay.view(context(), { taskId: 'up-h1', status: 'cancelled' })).toMatchObject({
      status: 'failed',
    });
  });

  it('is bounded: too many questions in one listing, too many tasks asking at once', async () => {
    const { relay, context } = setUp();
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`q${i}`, NAME]));
    await expect(relay.view(context(), inputRequired(many))).rejects.toThrow(UpstreamFailedError);
    await relay.view(context('h1'), inputRequired({ who: NAME }));
    await expect(relay.view(context('h2'), inputRequired({ who: NAME }))).rejects.toThrow(/at most 1 tasks/);
  });

  it('lets go of a task that ended: its open questions are withdrawn, a late answer ignored', async () => {
    const { input, relay, sent, context } = setUp();
    await relay.view(context(), inputRequired({ who: NAME }));
    expect(Object.keys(input.inputRequests('h1'))).toHaveLength(1);
    await relay.view(context(), { taskId: 'up-h1', status: 'completed', result: { content: [] } });
    expect(input.holds('h1')).toBe(false);
    expect(await relay.update('h1', { t1: { action: 'decline' } })).toBeUndefined();
    // A key it never showed is still refused.
    await expect(relay.update('h1', { t9: { action: 'decline' } })).rejects.toThrow(/no open question/);
    expect(sent).toEqual([]);
  });

  describe('a question its server stops listing', () => {
    const WHERE = { method: 'elicitation/create', params: { message: 'Where?', requestedSchema: {} } };
    const keysShown = (shown: Params) => Object.keys((shown.inputRequests ?? {}) as Params);

    it('is withdrawn from the host, and an answer to it is ignored, never sent on', async () => {
      const { input, relay, context } = setUp();
      const first = await relay.view(context(), inputRequired({ who: NAME, where: WHERE }));
      const [who, where] = keysShown(first);
      const asked = input.inputRequests('h1') as Record<string, { params: Params }>;
      expect(asked[where!]!.params.message).toBe('Where?');
      // The server answered "where" some other way: its listing leaves it out.
      expect(keysShown(await relay.view(context(), inputRequired({ who: NAME })))).toEqual([who]);
      expect(Object.keys(input.inputRequests('h1'))).toEqual([who]);
      // An answer to it alone: ignored (no error), nothing to send.
      expect(await relay.update('h1', { [where!]: { action: 'accept', content: {} } })).toBeUndefined();
      // Together with one still asked: only that one goes on.
      const answer = { action: 'accept', content: { name: 'Ada' } };
      expect(await relay.update('h1', { [where!]: { action: 'decline' }, [who!]: answer })).toEqual({
        who: answer,
      });
    });

    it('is withdrawn when the task moves on to working; the task is not failed for it', async () => {
      const { input, relay, sent, context } = setUp();
      await relay.view(context(), inputRequired({ who: NAME }));
      const shown = await relay.view(context(), { taskId: 'up-h1', status: 'working' });
      expect(shown).toMatchObject({ status: 'working' });
      expect(shown).not.toHaveProperty('inputRequests');
      expect(input.inputRequests('h1')).toEqual({});
      expect(sent).toEqual([]);
      // Listed again later: asked again, under a new key.
      const again = await relay.view(context(), inputRequired({ who: NAME }));
      expect(keysShown(again)).toEqual(['t2']);
    });

    it('is not withdrawn by a listing whose request left before the question was first listed', async () => {
      const { input, relay, context } = setUp();
      // A poll leaves, another's answer lists the question, then the first poll's (older) answer comes.
      const old = { ...context(), sentAfter: relay.listed() };
      await relay.view(context(), inputRequired({ who: NAME }));
      await relay.view(old, { taskId: 'up-h1', status: 'working' });
      expect(Object.keys(input.inputRequests('h1'))).toEqual(['t1']);
      // A poll that left after it was listed does withdraw it.
      const fresh = { ...context(), sentAfter: relay.listed() };
      await relay.view(fresh, { taskId: 'up-h1', status: 'working' });
      expect(input.inputRequests('h1')).toEqual({});
    });

    it('is not withdrawn by a pushed state the server updated before the state that listed it', async () => {
      const { input, relay, context } = setUp();
      const at = (iso: string, state: Params) => ({ ...state, lastUpdatedAt: iso });
      // A poll's answer lists the question; a status pushed earlier, on another stream, comes after.
      await relay.view(context(), at('2026-11-27T02:00:01.000Z', inputRequired({ who: NAME })));
      await relay.view(context(), at('2026-11-27T02:00:00.500Z', { taskId: 'up-h1', status: 'working' }));
      expect(Object.keys(input.inputRequests('h1'))).toEqual(['t1']);
      // A state from after it, or one with no time, does withdraw it.
      await relay.view(context(), at('2026-11-27T02:00:02.000Z', { taskId: 'up-h1', status: 'working' }));
      expect(input.inputRequests('h1')).toEqual({});
      await relay.view(context(), at('2026-11-27T02:00:03.000Z', inputRequired({ who: NAME })));
      expect(Object.keys(input.inputRequests('h1'))).toEqual(['t2']);
      await relay.view(context(), { taskId: 'up-h1', status: 'working' });
      expect(input.inputRequests('h1')).toEqual({});
    });

    it('once answered, a listing without it (or a lagging one with it) changes nothing', async () => {
      const { relay, context, asked } = setUp();
      const [key] = keysShown(await relay.view(context(), inputRequired({ who: NAME })));
      const answer = { action: 'accept', content: { name: 'Ada' } };
      expect(await relay.update('h1', { [key!]: answer })).toEqual({ who: answer });
      await relay.view(context(), inputRequired({ who: NAME }));
      await relay.view(context(), { taskId: 'up-h1', status: 'working' });
      expect(asked()).toBe(1);
      // Repeated, it is still taken for a repeat, not refused.
      expect(await relay.update('h1', { [key!]: answer })).toBeUndefined();
    });
  });
});
