import { describe, expect, it } from 'vitest';
import { BatchAnswers } from '../../src/core/transports/batches.js';

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
