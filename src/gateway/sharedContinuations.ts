import { createHmac } from 'node:crypto';
import type { ContinuationRecord, SharedContinuations } from '../core/tasks/inputBridge.js';
import { sha256Hex } from '../lib/hash.js';
import type { SharedStore } from '../lib/store/sharedStore.js';

/**
 * The continuations of stateless hosts' calls in the store the replicas share. A state's
 * token is kept only as a digest (the state itself, sealed, is what a host presents), and
 * each record lives as long as its call waits for the retry.
 *
 * States are sealed with a key derived from `listen.sessionKey`, which every replica holds,
 * so a replica can verify a state another one minted; the derivation keeps the session ids'
 * key and the states' key apart.
 */
export function sharedContinuations(
  store: SharedStore,
  sessionKey: string,
  session: string,
): SharedContinuations {
  const key = (token: string): string => `continuation:${sha256Hex(token)}`;
  const takenKey = (token: string): string => `continuation-taken:${sha256Hex(token)}`;
  return {
    sealKey: createHmac('sha256', sessionKey).update('mcp-warden request state').digest(),
    replica: session,
    record: (token, entry, ttlMs) => store.put(key(token), JSON.stringify(entry), ttlMs),
    async claim(token) {
      const reply = await store.script(CLAIM, [key(token), takenKey(token)], [session]);
      if (!Array.isArray(reply)) return undefined;
      const [kind, text] = reply as [string, string];
      return kind === 'record' ? { record: JSON.parse(text) as ContinuationRecord } : { takenBy: text };
    },
  };
}

/**
 * Takes a continuation's record and, in the same step, leaves a note of who took it (this
 * replica's audit session) for as long as the record would have lived and a minute more: the
 * replica that asked, when its own wait ends, learns from it that its call ran elsewhere. When
 * the record is gone, answers who took it, if anyone did.
 */
const CLAIM = `
local value = redis.call('GET', KEYS[1])
if value then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 1 then ttl = 1 end
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl + 60000)
  return {'record', value}
end
local by = redis.call('GET', KEYS[2])
if by then return {'taken', by} end
return false
`;
