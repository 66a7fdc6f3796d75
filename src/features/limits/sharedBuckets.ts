import type { SharedStore } from '../../lib/store/sharedStore.js';
import type { BucketClaim, BucketStorage, BucketVerdict } from './rateLimits.js';

/**
 * Takes a token from each bucket in KEYS, or from none: ARGV holds each bucket's burst and
 * milliseconds per token, in the order of KEYS. The clock is the store's own (TIME), so replicas
 * whose clocks disagree still refill the same bucket alike. A bucket is a hash of its tokens
 * (`t`), when they were counted (`a`, ms) and the refusals of the burst under way (`r`); it
 * expires once it would be full again, which is the same as not being there.
 *
 * Replies {1, ended...} when every token was taken (per bucket, the refusals its burst had), or
 * {0, index, tokens, refusedBefore} for the first bucket that was empty (tokens as text: Lua
 * numbers come back as integers).
 */
const TAKE = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = {}
for i = 1, #KEYS do
  local burst = tonumber(ARGV[2 * i - 1])
  local refill = tonumber(ARGV[2 * i])
  local b = redis.call('HMGET', KEYS[i], 't', 'a', 'r')
  local tokens = tonumber(b[1])
  local at = tonumber(b[2])
  local refused = tonumber(b[3]) or 0
  if tokens == nil or at == nil then tokens = burst; at = now end
  tokens = math.min(burst, tokens + math.max(0, now - at) / refill)
  state[i] = { tokens, refused, math.ceil(burst * refill) + 1000 }
end
for i = 1, #KEYS do
  local s = state[i]
  if s[1] < 1 then
    redis.call('HSET', KEYS[i], 't', tostring(s[1]), 'a', now, 'r', s[2] + 1)
    redis.call('PEXPIRE', KEYS[i], s[3])
    return { 0, i - 1, tostring(s[1]), s[2] }
  end
end
local reply = { 1 }
for i = 1, #KEYS do
  local s = state[i]
  redis.call('HSET', KEYS[i], 't', tostring(s[1] - 1), 'a', now, 'r', 0)
  redis.call('PEXPIRE', KEYS[i], s[3])
  reply[i + 1] = s[2]
end
return reply
`;

/**
 * The rate-limit buckets in a store the replicas share, so a burst spread over them is counted
 * once. Each request is one script run on the store, atomic there: two replicas taking the last
 * token at once cannot both get it.
 */
export function sharedBuckets(store: SharedStore): BucketStorage {
  return {
    async take(claims: readonly BucketClaim[]): Promise<BucketVerdict> {
      const reply = (await store.script(
        TAKE,
        claims.map((c) => `rate:${c.key}`),
        claims.flatMap((c) => [String(c.rule.burst), String(c.rule.refillMs)]),
      )) as unknown[];
      if (reply[0] === 1) return { taken: true, ended: reply.slice(1).map(Number) };
      return {
        taken: false,
        claim: Number(reply[1]),
        tokens: Number(reply[2]),
        began: Number(reply[3]) === 0,
      };
    },
  };
}
