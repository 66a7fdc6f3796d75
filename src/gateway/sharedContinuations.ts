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
export function sharedContinuations(store: SharedStore, sessionKey: string): SharedContinuations {
  const key = (token: string): string => `continuation:${sha256Hex(token)}`;
  return {
    sealKey: createHmac('sha256', sessionKey).update('mcp-warden request state').digest(),
    record: (token, entry, ttlMs) => store.put(key(token), JSON.stringify(entry), ttlMs),
    async claim(token) {
      const text = await store.take(key(token));
      return text === undefined ? undefined : (JSON.parse(text) as ContinuationRecord);
    },
  };
}
