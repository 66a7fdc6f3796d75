import { randomBytes } from 'node:crypto';
import type { Logger } from '../core/logger.js';
import type { JsonRpcMessage } from '../core/protocol/jsonRpc.js';
import type { SharedStore } from '../lib/store/sharedStore.js';

/**
 * Carries a host's answers between replicas. In a 2025-11-25 session the gateway asks the host
 * with requests of its own (a confirmation, or a question an upstream server asks during a
 * call), and the host POSTs its answer to whichever replica the balancer picks. The call waits
 * on the replica that asked, which alone can complete it (the upstream connection the question
 * came from lives there), so the answer is sent on to that replica.
 *
 * Each replica names itself with a random tag, and the ids of the requests it sends hosts carry
 * that tag (see SessionTransport), so the replica that gets an answer knows at once whose it is
 * without asking the store. Answers travel by the store's publish/subscribe on one channel per
 * replica: nothing is queued there, so an answer for a replica that has died is dropped (its
 * call died with it; the session itself goes on, from its record, on any replica).
 */
export interface AnswerRelay {
  /** This replica's tag, in its session ids and in the ids of its requests to hosts. */
  readonly replica: string;
  /** Sends `message` to session `session` on replica `replica`; false when no replica took it. */
  forward(replica: string, session: string, message: JsonRpcMessage): Promise<boolean>;
  /**
   * Whether replica `replica` is up: it listens on its channel (a message it ignores is
   * published there, and the store says how many took it). Rejects when the store cannot say.
   */
  alive(replica: string): Promise<boolean>;
  /** Starts taking the answers other replicas send this one. */
  listen(deliver: (session: string, message: JsonRpcMessage) => void): Promise<void>;
}

const channelOf = (replica: string): string => `answers:${replica}`;

/** An answer relay over `store`, for a replica with a fresh random tag. */
export function createAnswerRelay(store: SharedStore, logger: Logger): AnswerRelay {
  const replica = randomBytes(6).toString('base64url');
  return {
    replica,
    async forward(to, session, message) {
      const listeners = await store.publish(channelOf(to), JSON.stringify({ session, message }));
      return listeners > 0;
    },
    async alive(to) {
      return (await store.publish(channelOf(to), '{}')) > 0;
    },
    async listen(deliver) {
      await store
        .listen(channelOf(replica), (text) => {
          let parsed: { session?: unknown; message?: unknown };
          try {
            parsed = JSON.parse(text) as typeof parsed;
          } catch {
            return;
          }
          const { session, message } = parsed;
          if (typeof session === 'string' && typeof message === 'object' && message !== null)
            deliver(session, message as JsonRpcMessage);
        })
        .catch((error: unknown) => {
          logger.warn(
            `answers sent on from other replicas cannot reach this one yet (${(error as Error).message}); it keeps trying`,
          );
        });
    },
  };
}
