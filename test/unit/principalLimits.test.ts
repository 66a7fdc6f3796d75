import { describe, expect, it } from 'vitest';
import { errorToWire, PRINCIPAL_LIMIT_CODE } from '../../src/core/rpc/errorsToWire.js';
import { PrincipalLimitError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/logger.js';
import type { Next, RoutedMessage } from '../../src/core/pipeline/types.js';
import type { Principal } from '../../src/core/principal.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { createPrincipalLimitStage } from '../../src/features/limits/principalLimits.js';
import { toolCall } from './toolCall.js';

const alice: Principal = { source: 'token', subject: 'alice', issuer: 'https://idp' };
const bob: Principal = { source: 'token', subject: 'bob', issuer: 'https://idp' };
const ok = Outcome.of({ content: [] });

function call(principal: Principal | undefined, direction: 'upstream' | 'host' = 'upstream'): RoutedMessage {
  return toolCall({ principal, direction });
}

/** An upstream that answers when told to. */
function held() {
  const waiting: (() => void)[] = [];
  const next: Next = () => new Promise((resolve) => waiting.push(() => resolve(ok)));
  return { next, answerAll: () => waiting.splice(0).forEach((answer) => answer()) };
}

describe('per-principal limits', () => {
  it('refuses a principal over maxConcurrency at once, and lets other principals through', async () => {
    const stage = createPrincipalLimitStage({ limits: { maxConcurrency: 2 } });
    const upstream = held();
    const running = [stage(call(alice), upstream.next), stage(call(alice), upstream.next)];
    const refused = stage(call(alice), upstream.next);
    await expect(refused).rejects.toBeInstanceOf(PrincipalLimitError);
    await expect(refused).rejects.toThrow(
      'alice@https://idp already has 2 requests in flight; wait for one to finish (listen.perPrincipal.maxConcurrency: 2)',
    );
    const other = stage(call(bob), upstream.next);
    upstream.answerAll();
    expect(await Promise.all([...running, other])).toEqual([ok, ok, ok]);
    // A slot is free again once a request is answered, failed or not.
    const failing: Next = () => Promise.reject(new Error('upstream failed'));
    await expect(stage(call(alice), failing)).rejects.toThrow('upstream failed');
    await expect(stage(call(alice), async () => ok)).resolves.toBe(ok);
  });

  it('refuses a principal over ratePerMinute until the minute has passed', async () => {
    let now = 1_000_000;
    const stage = createPrincipalLimitStage({ limits: { ratePerMinute: 2 }, now: () => now });
    const answer: Next = async () => ok;
    await stage(call(alice), answer);
    now += 30_000;
    await stage(call(alice), answer);
    await expect(stage(call(alice), answer)).rejects.toThrow(
      'alice@https://idp made 2 requests in the last minute; try again in 30 s (listen.perPrincipal.ratePerMinute: 2)',
    );
    await expect(stage(call(bob), answer)).resolves.toBe(ok);
    now += 30_000; // the first request is a minute old
    await expect(stage(call(alice), answer)).resolves.toBe(ok);
  });

  it('counts neither what upstreams ask of the host nor requests without a principal', async () => {
    const stage = createPrincipalLimitStage({ limits: { maxConcurrency: 1, ratePerMinute: 1 } });
    const upstream = held();
    const first = stage(call(alice), upstream.next);
    const asked = stage(call(alice, 'host'), async () => ok);
    await expect(asked).resolves.toBe(ok);
    await expect(stage(call(undefined), async () => ok)).resolves.toBe(ok);
    upstream.answerAll();
    await first;
  });

  it('becomes a JSON-RPC error whose data names the bound', () => {
    const logger = { error: () => {} } as unknown as Logger;
    const wire = errorToWire(new PrincipalLimitError('ratePerMinute', 5, 'too many'), logger);
    expect(wire).toEqual({
      kind: 'error',
      error: {
        code: PRINCIPAL_LIMIT_CODE,
        message: 'too many (listen.perPrincipal.ratePerMinute: 5)',
        data: { bound: 'ratePerMinute', limit: 5 },
      },
    });
  });
});
