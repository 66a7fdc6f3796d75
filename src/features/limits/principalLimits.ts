import type { PerPrincipalConfig } from '../../config/types.js';
import { PrincipalLimitError } from '../../core/errors.js';
import type { Stage } from '../../core/pipeline/types.js';
import { describePrincipal, principalKey } from '../../core/principal.js';

/** Principals whose counts are kept before the idle ones are forgotten (a bound on this stage's memory). */
const MAX_TRACKED = 10_000;
const MINUTE_MS = 60_000;

/** One principal's requests in flight and the start times of those of the last minute. */
interface Usage {
  active: number;
  readonly recent: number[];
}

export interface PrincipalLimitOptions {
  readonly limits: Pick<PerPrincipalConfig, 'maxConcurrency' | 'ratePerMinute'>;
  /** The clock the minute is measured on; tests pass their own. */
  readonly now?: () => number;
}

/**
 * At most `maxConcurrency` requests of one principal in flight at once, and `ratePerMinute` in
 * any 60 s, over all their sessions: one user's script cannot take the upstreams every user
 * shares. A request beyond either is refused at once (not queued) with an error naming the
 * bound. Requests upstreams make of the host are not counted: the principal did not make them.
 */
export function createPrincipalLimitStage(options: PrincipalLimitOptions): Stage {
  const { maxConcurrency, ratePerMinute } = options.limits;
  const now = options.now ?? Date.now;
  const usage = new Map<string, Usage>();

  const forgetIdle = (at: number): void => {
    for (const [key, u] of usage)
      if (u.active === 0 && (u.recent.length === 0 || u.recent[u.recent.length - 1]! <= at - MINUTE_MS))
        usage.delete(key);
  };

  return function principalLimit(call, next) {
    if (call.direction !== 'upstream' || call.principal === undefined) return next(call);
    const key = principalKey(call.principal);
    const at = now();
    let u = usage.get(key);
    if (u === undefined) {
      if (usage.size >= MAX_TRACKED) forgetIdle(at);
      u = { active: 0, recent: [] };
      usage.set(key, u);
    }
    const who = describePrincipal(call.principal);
    if (maxConcurrency !== undefined && u.active >= maxConcurrency)
      return Promise.reject(
        new PrincipalLimitError(
          'maxConcurrency',
          maxConcurrency,
          `${who} already has ${u.active} requests in flight; wait for one to finish`,
        ),
      );
    if (ratePerMinute !== undefined) {
      while (u.recent.length > 0 && u.recent[0]! <= at - MINUTE_MS) u.recent.shift();
      if (u.recent.length >= ratePerMinute) {
        const retryS = Math.max(1, Math.ceil((u.recent[0]! + MINUTE_MS - at) / 1000));
        return Promise.reject(
          new PrincipalLimitError(
            'ratePerMinute',
            ratePerMinute,
            `${who} made ${u.recent.length} requests in the last minute; try again in ${retryS} s`,
          ),
        );
      }
      u.recent.push(at);
    }
    const counted = u;
    counted.active++;
    const release = (): void => void counted.active--;
    let running;
    try {
      running = next(call);
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(release, release);
    return running;
  };
}
