import { describe, expect, it } from 'vitest';
import { createSessionIds } from '../../src/http/sessionIds.js';

describe('sealed session ids', () => {
  const key = 'k'.repeat(32);

  it('tell this replica, another replica with the same key, and anything else apart', () => {
    const one = createSessionIds({ key, replica: 'one' });
    const two = createSessionIds({ key, replica: 'two' });
    const stranger = createSessionIds({ key: 'x'.repeat(32), replica: 'one' });
    const id = one.mint();
    expect(id).not.toBe(one.mint());
    expect(one.judge(id)).toBe('this-replica');
    expect(two.judge(id)).toBe('other-replica');
    expect(stranger.judge(id)).toBe('unsealed');
    // A changed replica name or a cut seal no longer verifies.
    expect(one.judge(id.replace(/^one/, 'two'))).toBe('unsealed');
    expect(one.judge(id.slice(0, -2))).toBe('unsealed');
    expect(one.judge('not-an-id')).toBe('unsealed');
  });

  it('without a key, only the process that made an id knows it', () => {
    const a = createSessionIds();
    expect(a.judge(a.mint())).toBe('this-replica');
    expect(createSessionIds().judge(a.mint())).toBe('unsealed');
  });
});
