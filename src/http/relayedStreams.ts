import type { SessionRefusedEvent } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import { describePrincipalKey } from '../core/principal.js';
import { positionOf } from './resumableCalls.js';
import type { RelayedRetry, Reply } from './retryRelay.js';

/** Why a session of this replica cannot resume a relayed stream, though it was found. */
export type ResumeRefusal = 'session closing' | 'not resumable' | 'bad lastEventId';

/** What serving a relayed stream needs of a session of this replica. */
export interface RelayedSession {
  /** The key of the principal that owns the session. */
  readonly owner: string;
  lastSeen: number;
  readonly transport: {
    /** Resumes the stream on `reply`; or, writing nothing, says why it cannot. */
    resumeRelayed(reply: Reply, lastEventId: string): Promise<void> | ResumeRefusal;
  };
}

export interface RelayedStreamsOptions {
  readonly logger: Logger;
  /** The session of this replica with id `id`, if it has one. */
  readonly session: (id: string) => RelayedSession | undefined;
  /** Audits a relayed stream asked for a principal that does not own its session. */
  readonly record?: (event: Omit<SessionRefusedEvent, 'session' | 'principal'>) => void;
}

/** Why a stream relayed from another replica is not served here. */
type RelayRefusal = 'unknown session' | 'not the owner' | ResumeRefusal;

/**
 * Serves the hosts' resumed streams that other replicas relay here, where their calls run: in a
 * session of this replica, for the principal that owns it (as the asking replica checked too).
 * Anything else is answered 404 and logged; a stream asked for a principal that does not own
 * the session is audited too, since the replica that asked should never have sent it on.
 */
export class RelayedStreams {
  constructor(private readonly options: RelayedStreamsOptions) {}

  serve(request: RelayedRetry, reply: Reply): void {
    const { session: id, lastEventId } = (request.body ?? {}) as { session?: unknown; lastEventId?: unknown };
    const session = typeof id === 'string' ? this.options.session(id) : undefined;
    if (session === undefined) return this.refuse(request, reply, id, 'unknown session');
    if (session.owner !== request.principal) return this.refuse(request, reply, id, 'not the owner');
    if (typeof lastEventId !== 'string' || positionOf(lastEventId) === undefined)
      return this.refuse(request, reply, id, 'bad lastEventId');
    session.lastSeen = Date.now();
    const resumed = session.transport.resumeRelayed(reply, lastEventId);
    if (typeof resumed === 'string') return this.refuse(request, reply, id, resumed);
    resumed.catch((error: unknown) => {
      this.options.logger.warn(
        `a stream relayed from replica ${request.from} failed here: ${(error as Error).message}`,
      );
      if (!reply.writableEnded) reply.end();
    });
  }

  /**
   * Answers 404 to a relayed stream refused here, and leaves a trace: this is the second check
   * of a request the asking replica let through, so either the two disagree or the request did
   * not come from a replica that checked it. What it names came through the store, and is
   * quoted as it came.
   */
  private refuse(request: RelayedRetry, reply: Reply, id: unknown, why: RelayRefusal): void {
    const { logger, record } = this.options;
    const sessionId = typeof id === 'string' ? `${id.slice(0, 12)}…` : undefined;
    logger.warn(
      `replica ${JSON.stringify(request.from)} relayed a resumed stream of ${sessionId === undefined ? 'no session' : `session ${JSON.stringify(sessionId)}`} for ${describePrincipalKey(request.principal)}: refused with 404, ${why}`,
    );
    if (why === 'not the owner' && sessionId !== undefined)
      record?.({
        type: 'session_refused',
        method: 'GET',
        sessionId,
        resumed: true,
        relayed: { from: request.from, principalKey: request.principal },
      });
    reply.writeHead(404);
    reply.end();
  }
}
