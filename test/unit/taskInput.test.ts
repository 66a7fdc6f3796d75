import { describe, expect, it } from 'vitest';
import { TaskInput } from '../../src/core/tasks/taskInput.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { InvalidParamsError, MethodNotFoundError, NotServingError } from '../../src/core/errors.js';

const RELATED = 'io.modelcontextprotocol/related-task';
const LIMITS = { maxTasks: 2, maxQuestions: 2, firstQuestionMs: 10_000 };

/** An elicitation of the task `handle`, as a 2025-11-25 server sends it. */
function question(handle: string, message = 'Name?') {
  return { message, requestedSchema: { type: 'object' }, _meta: { [RELATED]: { taskId: handle } } };
}

/** A held result that never settles until `settle` is called. */
function heldResult() {
  let settle!: (outcome: Outcome) => void;
  const result = new Promise<Outcome>((resolve) => (settle = resolve));
  return { open: () => result, settle };
}

describe('TaskInput', () => {
  it('keeps only questions of tasks it holds', () => {
    const input = new TaskInput(LIMITS);
    expect(input.ask('elicitation/create', question('h1'), {})).toBeUndefined();
    expect(input.ask('elicitation/create', { message: 'no task' }, {})).toBeUndefined();
  });

  it('shows questions under keys it makes, and answers each with its response', async () => {
    const input = new TaskInput(LIMITS);
    input.hold('h1', { elicitation: {} }, heldResult().open);
    const asked = input.ask('elicitation/create', question('h1'), {})!;
    const requests = input.inputRequests('h1');
    const [key] = Object.keys(requests);
    expect(requests[key!]).toMatchObject({ method: 'elicitation/create', params: { message: 'Name?' } });
    input.answer('h1', { [key!]: { action: 'accept', content: { name: 'Ada' } } });
    expect((await asked).result).toEqual({ action: 'accept', content: { name: 'Ada' } });
    expect(input.inputRequests('h1')).toEqual({});
    // Answering again is ignored; a key never shown is refused.
    expect(() => input.answer('h1', { [key!]: { action: 'decline' } })).not.toThrow();
    expect(() => input.answer('h1', { other: { action: 'decline' } })).toThrow(InvalidParamsError);
  });

  it('refuses a question past maxQuestions, and a task past maxTasks', async () => {
    const input = new TaskInput(LIMITS);
    input.hold('h1', undefined, heldResult().open);
    void input.ask('elicitation/create', question('h1', 'a'), {});
    void input.ask('elicitation/create', question('h1', 'b'), {});
    await expect(input.ask('elicitation/create', question('h1', 'c'), {})).rejects.toThrow(NotServingError);
    input.hold('h2', undefined, heldResult().open);
    expect(() => input.hold('h3', undefined, heldResult().open)).toThrow(/at most 2 tasks/);
  });

  it('refuses a kind of question the host did not declare', async () => {
    const input = new TaskInput(LIMITS);
    input.hold('h1', { elicitation: {} }, heldResult().open);
    await expect(
      input.ask('sampling/createMessage', { messages: [], _meta: { [RELATED]: { taskId: 'h1' } } }, {}),
    ).rejects.toThrow(MethodNotFoundError);
  });

  it('drops a question whose asker gave up, and lets go of everything on release', async () => {
    const input = new TaskInput(LIMITS);
    const held = new Cancellation();
    input.hold('h1', undefined, (signal) => {
      signal.onCancel((reason) => held.cancel(reason));
      return new Promise<Outcome>(() => {});
    });
    const signal = new Cancellation();
    const gaveUp = input.ask('elicitation/create', question('h1', 'a'), { signal })!;
    signal.cancel(new Error('timed out'));
    await expect(gaveUp).rejects.toThrow('timed out');
    expect(input.inputRequests('h1')).toEqual({});
    // The host answers it anyway: ignored, not refused, and nothing is answered.
    expect(input.answer('h1', { t1: { action: 'decline' } })).toEqual({ now: [], withdrawn: ['t1'] });
    const open = input.ask('elicitation/create', question('h1', 'b'), {})!;
    input.release('h1', new Error('cancelled by the host'));
    await expect(open).rejects.toThrow('cancelled by the host');
    expect(held.cancelled).toBe(true);
    expect(input.holds('h1')).toBe(false);
  });

  it('forgets a task once its held result settles with no question open', async () => {
    const input = new TaskInput(LIMITS);
    const { open, settle } = heldResult();
    input.hold('h1', undefined, open);
    const waiting = input.settle('h1', new Cancellation());
    settle(Outcome.of({ content: [] }));
    await waiting;
    expect(input.holds('h1')).toBe(false);
  });
});
