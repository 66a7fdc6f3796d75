import { describe, expect, it } from 'vitest';
import { CallLog, MAX_BYTES, MAX_EVENTS } from '../../src/http/callLog.js';

/** A log with `n` events written after a priming event, as a call's stream writes them. */
function written(n: number, size = 10): CallLog {
  const log = new CallLog();
  log.position();
  for (let i = 0; i < n; i++) log.keep(log.position(), `${String(i).padStart(size, '.')}`);
  return log;
}

describe("the events a call's replica keeps for a host that resumes its stream", () => {
  it('gives exactly the events after the one the host saw last, the priming event numbered but not kept', () => {
    const log = written(5);
    expect(log.since(0)).toHaveLength(5);
    expect(log.since(2)).toEqual(['.........2', '.........3', '.........4']);
    expect(log.since(5)).toEqual([]);
  });

  it('keeps the last events within its bounds, and says so rather than skip the ones it dropped', () => {
    const log = written(MAX_EVENTS + 10);
    expect(log.since(5)).toBeUndefined();
    expect(log.since(10)).toHaveLength(MAX_EVENTS);
    const large = written(4, MAX_BYTES / 2);
    expect(large.since(0)).toBeUndefined();
    expect(large.since(2)).toHaveLength(2);
  });
});
