import type { RateLimitRule } from '../../config/types.js';
import { NotServingError, RateLimitedError } from '../../core/errors.js';
import type { RateLimitedEvent } from '../../core/events.js';
import type { RoutedMessage, Stage } from '../../core/pipeline/types.js';
import { principalKey } from '../../core/principal.js';
import type { Outcome } from '../../core/rpc/outcome.js';
import { compileGlob } from '../../lib/glob.js';
import { sha256Hex } from '../../lib/hash.js';

/** Buckets kept before full ones are forgotten: a bound on this stage's memory. */
const MAX_BUCKETS = 10_000;

/** One bucket: its tokens as of `at`, and the requests refused since it last let one through. */
interface Bucket {
  tokens: number;
  at: number;
  refused: number;
}

export type RateLimitRecord = Omit<RateLimitedEvent, 'session'>;

/** A bucket a request takes a token from: the rule's, for a principal or for everyone. */
export interface BucketClaim {
  readonly rule: RateLimitRule;
  /** The bucket's name, the same on every replica: the rule's place and whose bucket it is. */
  readonly key: string;
}

/**
 * What taking one token from each of a request's buckets came to: all taken (with, per bucket,
 * the refusals of a burst this ends, 0 when none), or none taken because `claim`'s bucket was
 * empty (with its tokens, and whether this refusal began a burst).
 */
export type BucketVerdict =
  | { readonly taken: true; readonly ended: readonly number[] }
  | { readonly taken: false; readonly claim: number; readonly tokens: number; readonly began: boolean };

/**
 * Where the buckets live: this process's memory, or a store replicas share. Taking is all or
 * nothing: a request refused by one bucket takes no token from the others, so a refusal costs
 * the caller nothing.
 */
export interface BucketStorage {
  take(claims: readonly BucketClaim[], at: number): BucketVerdict | Promise<BucketVerdict>;
}

export interface RateLimitStageOptions {
  readonly rules: readonly RateLimitRule[];
  /** Writes a burst's begin and end to the audit trail. */
  readonly record: (event: RateLimitRecord) => void;
  /** The clock buckets refill on; tests pass their own. */
  readonly now?: () => number;
  /** Where the buckets are kept; default this process's memory. */
  readonly storage?: BucketStorage;
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
 * request refused by a later rule takes nothing from earlier ones, so a refusal costs the
 * caller nothing. Requests upstreams make of the host are not counted.
 */
export function createRateLimitStage(options: RateLimitStageOptions): Stage {
  const now = options.now ?? Date.now;
  const rules: CompiledRule[] = options.rules.map((rule) => ({
    rule,
    server: rule.server === undefined ? undefined : compileGlob(rule.server),
    tool: rule.tool === undefined ? undefined : compileGlob(rule.tool),
  }));
  const storage = options.storage ?? new MemoryBuckets(options.rules);
  return function rateLimit(call, next) {
    if (call.direction !== 'upstream') return next(call);
    const claims: BucketClaim[] = [];
    for (const r of rules) if (applies(r, call)) claims.push({ rule: r.rule, key: bucketKey(r.rule, call) });
    if (claims.length === 0) return next(call);
    const decide = (verdict: BucketVerdict): Promise<Outcome> => {
      if (!verdict.taken) {
        const { rule } = claims[verdict.claim]!;
        if (verdict.began) options.record(burstRecord(rule, call, 'begin'));
        return Promise.reject(refusal(rule, call, verdict.tokens));
      }
      verdict.ended.forEach((refused, i) => {
        if (refused > 0) options.record(burstRecord(claims[i]!.rule, call, 'end', refused));
      });
      return next(call);
    };
    const verdict = storage.take(claims, now());
    // Memory answers at once: most calls pass without a promise of this stage's own.
    // A store that fails or does not answer in time refuses the call: a limit that cannot be
    // counted is not waived.
    return verdict instanceof Promise ? verdict.then(decide, storeFailed) : decide(verdict);
  };
}

function storeFailed(error: unknown): Promise<never> {
  return Promise.reject(
    new NotServingError(
      `Rate limits could not be counted: ${(error as Error).message}. The call was not run; try again when the store is back.`,
    ),
  );
}

function applies(r: CompiledRule, call: RoutedMessage): boolean {
  return (
    (r.server === undefined || r.server.test(call.server)) &&
    (r.tool === undefined || (call.kind === 'tools/call' && r.tool.test(call.target)))
  );
}

/** The rule's place and whose bucket: the principal's (as a digest), or empty for everyone's. */
function bucketKey(rule: RateLimitRule, call: RoutedMessage): string {
  const who =
    rule.per === 'everyone' || call.principal === undefined ? '' : sha256Hex(principalKey(call.principal));
  return `${rule.index}:${who}`;
}

/** The buckets in this process's memory, refilled as they are looked up, bounded in number. */
class MemoryBuckets implements BucketStorage {
  private readonly map = new Map<string, Bucket>();

  constructor(private readonly rules: readonly RateLimitRule[]) {}

  take(claims: readonly BucketClaim[], at: number): BucketVerdict {
    const buckets = claims.map(({ rule, key }) => this.of(rule, key, at));
    const empty = buckets.findIndex((b) => b.tokens < 1);
    if (empty >= 0) {
      const bucket = buckets[empty]!;
      return { taken: false, claim: empty, tokens: bucket.tokens, began: bucket.refused++ === 0 };
    }
    const ended = buckets.map((bucket) => {
      bucket.tokens -= 1;
      const refused = bucket.refused;
      bucket.refused = 0;
      return refused;
    });
    return { taken: true, ended };
  }

  private of(rule: RateLimitRule, key: string, at: number): Bucket {
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
      const rule = this.rules[Number(key.slice(0, key.indexOf(':')))];
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
function refusal(rule: RateLimitRule, call: RoutedMessage, tokens: number): RateLimitedError {
  const waitMs = Math.ceil((1 - tokens) * rule.refillMs);
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
