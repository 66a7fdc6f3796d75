import { describe, expect, it } from 'vitest';
import { renewalOf } from '../../src/features/upstreamAuth/renewal.js';

describe('when a token is renewed, and whether a request waits for it', () => {
  const HOUR = 3_600_000;
  const life = (left: number, lifetime = HOUR) => ({ expiresAt: 10 * HOUR + left, lifetime });
  const at = 10 * HOUR;

  it('keeps a token with more than a minute left, renews beside the request in the last minute, and first in the last five seconds', () => {
    expect(renewalOf(life(61_000), at)).toBe('keep');
    expect(renewalOf(life(60_000), at)).toBe('beside');
    expect(renewalOf(life(5_001), at)).toBe('beside');
    expect(renewalOf(life(5_000), at)).toBe('first');
    expect(renewalOf(life(-1), at)).toBe('first');
  });

  it('scales both stretches down for a short lifetime: half of it ahead, a tenth of it at the end', () => {
    expect(renewalOf(life(1_001, 2_000), at)).toBe('keep');
    expect(renewalOf(life(1_000, 2_000), at)).toBe('beside');
    expect(renewalOf(life(201, 2_000), at)).toBe('beside');
    expect(renewalOf(life(200, 2_000), at)).toBe('first');
  });

  it('takes a configured lead, capped at half the lifetime', () => {
    expect(renewalOf({ ...life(20_000), aheadMs: 10_000 }, at)).toBe('keep');
    expect(renewalOf({ ...life(10_000), aheadMs: 10_000 }, at)).toBe('beside');
    expect(renewalOf({ ...life(1_000, 4_000), aheadMs: 60_000 }, at)).toBe('beside');
    expect(renewalOf({ ...life(2_001, 4_000), aheadMs: 60_000 }, at)).toBe('keep');
  });
});
