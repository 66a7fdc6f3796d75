import type { Logger } from '../core/logger.js';
import type { JsonRpcMessage } from '../core/protocol/jsonRpc.js';
import type { AnswerRelay } from './answerRelay.js';
import { HOST_CANCELLED, type ResumableCalls } from './resumableCalls.js';

export interface AnswerForwardingOptions {
  readonly relay: AnswerRelay;
  readonly logger: Logger;
  /** With it, an answer for a replica that is gone is kept for the one that takes its call over. */
  readonly resumable?: ResumableCalls;
  /** Hands an answer to a session of this replica (a call taken over here). */
  readonly deliver: (session: string, message: JsonRpcMessage) => void;
}

/**
 * Where a host's answer goes when the question it answers was asked by another replica of a
 * shared session: on to that replica, or, when it is gone, kept for (or sent to) the replica
 * that took its call over.
 */
export class AnswerForwarding {
  constructor(private readonly options: AnswerForwardingOptions) {}

  /**
   * Sends on the host's answer in `session` (which the host was allowed to use here) to replica
   * `to`, whose request it answers. Nothing waits for it: a replica that is gone has taken its
   * call with it, which the log says.
   */
  forward(to: string, session: string, message: JsonRpcMessage & { id?: unknown }): void {
    const { logger, relay } = this.options;
    const shown = `the host's answer to request ${String(message.id)} in session ${session.slice(0, 12)}…`;
    relay.forward(to, session, message).then(
      (taken) => {
        if (taken) logger.info(`${shown} was sent on to replica ${to}, which asked`);
        else if (this.options.resumable !== undefined) this.keepAnswer(to, session, message, shown);
        else
          logger.info(
            `${shown} was for replica ${to}, which is gone: dropped (the call it was for ended with that replica; the session goes on here)`,
          );
      },
      (error: unknown) =>
        logger.warn(`${shown} could not be sent on to replica ${to}: ${(error as Error).message}`),
    );
  }

  /**
   * Keeps the host's answer to a question of replica `to`, which is gone, for the replica that
   * takes its call over (or sends it there when one already has); when the question was not a
   * confirmation recorded in the store, nothing can use it, and it is dropped.
   */
  private keepAnswer(
    to: string,
    session: string,
    message: JsonRpcMessage & { id?: unknown },
    shown: string,
  ): void {
    const { logger, resumable, relay } = this.options;
    resumable!.keepAnswer(session, String(message.id), message).then(
      (by) => {
        if (by === undefined)
          logger.info(
            `${shown} was for replica ${to}, which is gone: kept for the replica that resumes its call, if it was waiting for a confirmation (else dropped: the call ended with that replica)`,
          );
        else if (by === HOST_CANCELLED)
          logger.info(
            `${shown} was for replica ${to}, which is gone, and the host cancelled its call: dropped`,
          );
        else if (by.replica === relay.replica) this.options.deliver(session, message);
        else
          relay.forward(by.replica, session, message).then(
            () => logger.info(`${shown} was sent on to replica ${by.auditSession}, which took its call over`),
            (error: unknown) =>
              logger.warn(
                `${shown} could not be sent on to replica ${by.auditSession}: ${(error as Error).message}`,
              ),
          );
      },
      (error: unknown) =>
        logger.warn(
          `${shown} was for replica ${to}, which is gone, and could not be kept in the shared store: ${(error as Error).message}`,
        ),
    );
  }
}
