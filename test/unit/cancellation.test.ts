import { describe, expect, it } from 'vitest';
import { Cancellation } from '../../src/core/rpc/cancellation.js';

describe('Cancellation listeners', () => {
  it('calls listeners once, in the order they registered, however many were removed', () => {
    const calls: string[] = [];
    const c = new Cancellation();
    const listeners = ['a', 'b', 'c', 'd'].map((n) => ({ onCancelled: () => calls.push(n) }));
    for (const l of listeners) c.listen(l);
    c.unlisten(listeners[0]!);
    c.listen({ onCancelled: () => calls.push('e') });
    const stop = c.onCancel(() => calls.push('f'));
    c.unlisten(listeners[2]!);
    stop();
    c.cancel(new Error('x'));
    c.cancel(new Error('y'));
    expect(calls).toEqual(['b', 'd', 'e']);
    c.listen({ onCancelled: (reason) => calls.push(`late ${reason.message}`) });
    expect(calls).toEqual(['b', 'd', 'e', 'late x']);
  });
});
