import type { Interceptor, Next } from './types.js';

/**
 * Wraps `terminal` in `interceptors`, the first outermost. Built once at start-up: a call walks
 * a fixed chain of closures, with no per-call allocation beyond what the stages do themselves.
 */
export function compose(interceptors: readonly Interceptor[], terminal: Next): Next {
  return interceptors.reduceRight<Next>((next, interceptor) => (call) => interceptor(call, next), terminal);
}
