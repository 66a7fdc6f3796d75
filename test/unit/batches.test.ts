import { describe, expect, it } from 'vitest';
import { BatchAnswers, MAX_BATCH_ANSWERS, refusedBatch } from '../../src/core/transports/batches.js';

describe('BatchAnswers', () => {
  it('holds a batch’s answers until the last is in, then gives them as one array in completion order', () => {
    const batches = new BatchAnswers();
    expect(batches.open([1, 'b'], [])).toBeUndefined();
    expect(batches.owes('b')).toBe(true);
    expect(batches.owes(3)).toBe(false);
    expect(batches.answer('b', '{"id":"b"}')).toBeUndefined();
    expect(batches.answer(1, '{"id":1}')).toBe('[{"id":"b"},{"id":1}]');
    expect(batches.owes(1)).toBe(false);
  });

  it('stops waiting for a request the host cancelled', () => {
    const batches = new BatchAnswers();
    batches.open([1, 2], []);
    expect(batches.answer(1, '{"id":1}')).toBeUndefined();
    expect(batches.cancelled(2)).toBe('[{"id":1}]');
  });

  it('gives the errors of invalid elements at once when no request is left to wait for', () => {
    const batches = new BatchAnswers();
    expect(batches.open([], ['{"id":null}'])).toBe('[{"id":null}]');
    // A batch of notifications only is owed nothing.
    expect(batches.open([], [])).toBeUndefined();
  });
});

describe('BatchAnswers bound', () => {
  it('refuses a batch of more than MAX_BATCH_ANSWERS elements, or one that would take the answers owed past it', () => {
    const batches = new BatchAnswers();
    expect(batches.refusal(MAX_BATCH_ANSWERS + 1, 0)).toContain(`over the bound of ${MAX_BATCH_ANSWERS}`);
    expect(batches.refusal(MAX_BATCH_ANSWERS, 0)).toBeUndefined();
    // Notifications and invalid elements only: answered at once, nothing held.
    expect(batches.refusal(0, MAX_BATCH_ANSWERS * 2)).toBeUndefined();
    const ids = Array.from({ length: 60 }, (_, i) => i);
    batches.open(ids, ['{"id":null}']);
    expect(batches.refusal(39, 0)).toBeUndefined();
    expect(batches.refusal(40, 0)).toContain('61 answers to earlier batches are still owed');
    // Answered or cancelled, the batch holds nothing more.
    for (const id of ids.slice(1)) batches.cancelled(id);
    expect(batches.answer(0, '{"id":0}')).toBe('[{"id":null},{"id":0}]');
    expect(batches.refusal(MAX_BATCH_ANSWERS, 0)).toBeUndefined();
  });

  it('answers a refused batch with -32600 under each request id, and the errors of its invalid elements', () => {
    const text = refusedBatch(
      [1, 'b'],
      ['{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}'],
      'too big',
    );
    expect(JSON.parse(text)).toEqual([
      { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'Invalid message: too big' } },
      { jsonrpc: '2.0', id: 'b', error: { code: -32600, message: 'Invalid message: too big' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'x' } },
    ]);
  });
});
