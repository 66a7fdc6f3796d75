import { sha256Hex } from '../lib/hash.js';
import type { SharedStore } from '../lib/store/sharedStore.js';
import type { SessionRecord, SessionRecords } from './sessionTable.js';

/**
 * 2025-11-25 sessions recorded in the store the replicas share, under their sealed ids (which
 * only a gateway with `listen.sessionKey` can make), each for as long as it may stay idle. A
 * record holds what the host's initialize said and a digest of whose session it is.
 */
export function sharedSessionRecords(store: SharedStore): SessionRecords {
  const key = (id: string): string => `session:${id}`;
  return {
    save: (id, record, ttlMs) => store.put(key(id), JSON.stringify(record), ttlMs),
    async load(id) {
      const text = await store.get(key(id));
      return text === undefined ? undefined : (JSON.parse(text) as SessionRecord);
    },
    delete: (id) => store.delete(key(id)),
    ownerOf: (principalKey) => sha256Hex(principalKey),
  };
}
