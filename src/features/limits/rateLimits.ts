import type { RateLimitRule } from '../../config/types.js';
import { RateLimitedError } from '../../core/errors.js';
import type { RateLimitedEvent } from '../../core/events.js';
import type { RoutedMessage, Stage } from '../../core/pipeline/types.js';
import { principalKey } from '../../core/principal.js';
import { compileGlob } from '../../lib/glob.js';

/** Buckets kept before full ones are forgotten: a bound on this stage's memory. */
const MAX_BUCKETS = 10_000;

/** One bucket: its tokens as of `at`, and the requests refused since it last let one through. */
interface Bucket {
  tokens: number;
  at: number;
  refused: number;
}

export type RateLimitRecord = Omit<RateLimitedEvent, 'session'>;

export interface RateLimitStageOptions {
  readonly rules: readonly RateLimitRule[];
  /** Writes a burst's begin and end to the audit trail. */
  readonly record: (event: RateLimitRecord) => void;
  /** The clock buckets refill on; tests pass their own. */
  readonly now?: () => number;
}

interface CompiledRule {
  readonly rule: RateLimitRule;
  readonly server: RegExp | undefined;
  readonly tool: RegExp | undefined;
}

/**
 * Token buckets on requests to upstreams: each rule that matches a request takes a token from
 * its bucket (the principal's own, or everyone's); a request that finds any of them empty is
 * refused at once, before anything else works on it, with how long until a token is back. A
 * request refused by a later rule gives back the tokens earlier rules took, so a refusal costs
 * the caller nothing. Requests upstreams make of the host are not counted.
 */
export function createRateLimitStage(options: RateLimitStageOptions): Stage {
  const now = options.now ?? Date.now;
  const rules: CompiledRule[] = options.rules.map((rule) => ({
    rule,
    server: rule.server === undefined ? undefined : compileGlob(rule.server),
    tool: rule.tool === undefined ? undefined : compileGlob(rule.tool),
  }));
  const buckets = new Buckets(options.rules);
  return function rateLimit(call, next) {
    if (call.direction !== 'upstream') return next(call);
    const applying = rules.filter((r) => applies(r, call));
    if (applying.length === 0) return next(call);
    const at = now();
    const taken: Bucket[] = [];
    for (const { rule } of applying) {
      const bucket = buckets.of(rule, call, at);
      if (bucket.tokens < 1) {
        for (const t of taken) t.tokens += 1;
        if (bucket.refused++ === 0) options.record(burstRecord(rule, call, 'begin'));
        return Promise.reject(refusal(rule, call, bucket));
      }
      bucket.tokens -= 1;
      taken.push(bucket);
      if (bucket.refused > 0) {
        options.record(burstRecord(rule, call, 'end', bucket.refused));
        bucket.refused = 0;
      }
    }
    return next(call);
  };
}

function applies(r: CompiledRule, call: RoutedMessage): boolean {
  return (
    (r.server === undefined || r.server.test(call.server)) &&
    (r.tool === undefined || (call.kind === 'tools/call' && r.tool.test(call.target)))
  );
}

/** The buckets by rule and principal, refilled as they are looked up, bounded in number. */
class Buckets {
  private readonly map = new Map<string, Bucket>();

  constructor(private readonly rules: readonly RateLimitRule[]) {}

  of(rule: RateLimitRule, call: RoutedMessage, at: number): Bucket {
    const who = rule.per === 'everyone' || call.principal === undefined ? '' : principalKey(call.principal);
    const key = `${rule.index}\u0000${who}`;
    let bucket = this.map.get(key);
    if (bucket === undefined) {
      if (this.map.size >= MAX_BUCKETS) this.forgetFull(at);
      bucket = { tokens: rule.burst, at, refused: 0 };
      this.map.set(key, bucket);
    } else {
      bucket.tokens = Math.min(rule.burst, bucket.tokens + (at - bucket.at) / rule.refillMs);
      bucket.at = at;
    }
    return bucket;
  }

  /** Buckets that have refilled are the same as none: dropped first when the map is full. */
  private forgetFull(at: number): void {
    for (const [key, bucket] of this.map) {
      const rule = this.rules[Number(key.slice(0, key.indexOf('\u0000')))];
      if (rule === undefined || bucket.tokens + (at - bucket.at) / rule.refillMs >= rule.burst)
        this.map.delete(key);
    }
  }
}

function burstRecord(
  rule: RateLimitRule,
  call: RoutedMessage,
  phase: 'begin' | 'end',
  refused?: number,
): RateLimitRecord {
  return {
    type: 'rate_limited',
    phase,
    rule: rule.index,
    rate: rule.rate,
    burst: rule.burst,
    server: call.server,
    ...(call.kind === 'tools/call' && { tool: call.target }),
    ...(rule.per === 'principal' && call.principal !== undefined && { principal: call.principal }),
    ...(refused !== undefined && { refused }),
  };
}

/** The refusal of `call` by `rule`, saying when its bucket holds a token again. */
function refusal(rule: RateLimitRule, call: RoutedMessage, bucket: Bucket): RateLimitedError {
  const waitMs = Math.ceil((1 - bucket.tokens) * rule.refillMs);
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const whose = rule.per === 'principal' ? 'per principal' : 'shared by everyone';
  return new RateLimitedError(
    rule.index,
    waitMs,
    `Rate limit reached for ${describeTarget(call)} (rateLimits[${rule.index}]: ${rule.rate}, ` +
      `burst ${rule.burst}, ${whose}). Try again in ${seconds} s. The call was not run.`,
  );
}

function describeTarget(call: RoutedMessage): string {
  return call.kind === 'tools/call'
    ? `tool "${call.target}" on server "${call.server}"`
    : `server "${call.server}"`;
}
