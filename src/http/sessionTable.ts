import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ListenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import { describePrincipal, principalKey, type Principal } from '../core/principal.js';
import type { MessageTransport } from '../core/rpc/transport.js';
import { sendRpcError } from './replies.js';
import type { SessionIds } from './sessionIds.js';
import type { JsonRpcMessage } from '../core/protocol/jsonRpc.js';
import type { AnswerRelay } from './answerRelay.js';
import type { RetryRelay } from './retryRelay.js';
import type { ResumableCalls } from './resumableCalls.js';
import { AnswerForwarding } from './answerForwarding.js';
import { RelayedStreams } from './relayedStreams.js';
import { SessionTransport, type TransportRelay } from './sessionTransport.js';
import type { TransportResume } from './callResumption.js';
import type { SessionRefusedEvent } from '../core/events.js';
import type { AnswerStream } from './answerStream.js';
import type { Sweeper } from './sweeper.js';

/** What the listener needs of a host connection the gateway serves (gateway/hostConnection.ts `Connection`). */
export interface ServedConnection {
  readonly beforeWrite: () => void;
  /** Whether `requestState` continues one of this connection's calls waiting for a host's retry. */
  continuesCall(requestState: unknown): boolean;
  /** Notes that the retry continuing `requestState` reached replica `replica` first, which sent it on. */
  noteContinuedVia(requestState: unknown, replica: string): void;
  /** How long this connection still waits for a host's retry, or undefined if it does not. */
  retryWindowMs(): number | undefined;
  /** The `inputSchema` of a tool this connection lists under `name` (its mirrored arguments). */
  toolInputSchema(name: string): unknown;
  close(): Promise<void>;
}

/** Why a session ends when its host sends DELETE. */
const HOST_ENDED = 'the host ended it';

/** JSON-RPC's code for a session the server does not know, as the SDK's clients expect it. */
const SESSION_NOT_FOUND = -32001;

/** What another replica needs to continue a session: whose it is, and the host's initialize. */
export interface SessionRecord {
  /** A digest of the owner's principal key. */
  readonly owner: string;
  readonly profile?: string;
  /** The params of the host's initialize request (protocol version, capabilities, client). */
  readonly initialize: unknown;
}

/** Where sessions are recorded for the other replicas (a store they share). */
export interface SessionRecords {
  save(id: string, record: SessionRecord, ttlMs: number): Promise<void>;
  load(id: string): Promise<SessionRecord | undefined>;
  delete(id: string): Promise<void>;
  /** The digest a record keeps of a principal key. */
  ownerOf(principalKey: string): string;
}

interface Session {
  readonly transport: SessionTransport;
  /** When its record was last written to the shared store (0: never). */
  savedAt: number;
  connection: ServedConnection | undefined;
  readonly principal: Principal;
  readonly owner: string;
  lastSeen: number;
  /** Open GET streams: a session with one is in use even when no request comes. */
  streams: number;
  /** What the host's initialize said, for the record other replicas continue it from. */
  readonly initialize: unknown;
  readonly profile?: string;
}

export interface SessionTableOptions {
  readonly listen: ListenConfig;
  readonly ids: SessionIds;
  readonly logger: Logger;
  /** Serves one more host connection; `profile`: the one its path named (`/mcp/<profile>`). */
  readonly connect: (transport: MessageTransport, principal: Principal, profile?: string) => ServedConnection;
  /** The listener's timer for keep-alive comments on the sessions' answer streams. */
  readonly quietStreams: Sweeper<AnswerStream>;
  /** Sessions shared with the other replicas; absent: a session lives on its replica only. */
  readonly records?: SessionRecords;
  /** Carries the host's answers to the replica that asked (with `records`, from a shared store). */
  readonly relay?: AnswerRelay;
  /** With `records` and `relay`: calls' streams resume on any replica (see resumableCalls.ts). */
  readonly resumable?: ResumableCalls;
  /**
   * With `resumable`: carries a host's resumed stream of a call another replica runs to that
   * replica, and its events back (the relay of stateless retries, see retryRelay.ts).
   */
  readonly streamRelay?: RetryRelay;
  /**
   * Audits a request refused because its session is another principal's; `principal` is who
   * asked. Absent for a stream another replica relayed, which names whom it asked for by key
   * only (`relayed`): the record is then the gateway's own.
   */
  readonly record?: (
    event: Omit<SessionRefusedEvent, 'session' | 'principal'>,
    principal?: Principal,
  ) => void;
}

/**
 * What restoring a session finds when its record in the store names another principal: the
 * request is refused as one in a session of this replica would be (see `SessionTable.serve`).
 */
const FOREIGN = Symbol("another principal's session");

/**
 * Streams of other replicas' calls this replica resumes at once (each holds a claim in the
 * store, and a taken-over call its connection): beyond this a host is asked to retry (503).
 */
const MAX_RESUMING = 64;

const DONE = Promise.resolve();

/**
 * The listener's 2025-11-25 sessions: opening one within the bounds (in all and per principal),
 * serving a request in the session it names for the principal that owns it, and closing sessions
 * that the host ended, that went idle, or that are left at shutdown.
 */
export class SessionTable {
  private readonly sessions = new Map<string, Session>();
  /** Sessions set up but not yet initialized count against the bounds too (by owner). */
  private starting = 0;
  private readonly startingBy = new Map<string, number>();
  private readonly sweep: NodeJS.Timeout;

  /** How this table's session transports send on answers meant for another replica. */
  private readonly transportRelay: TransportRelay | undefined;
  /** Streams of other replicas' calls being resumed here now (see MAX_RESUMING). */
  private resuming = 0;

  constructor(private readonly options: SessionTableOptions) {
    const { sessionIdleMs } = options.listen;
    const { relay } = options;
    // Answers to questions another replica asked in a shared session go on to it.
    if (relay === undefined) this.transportRelay = undefined;
    else {
      const forwarding = new AnswerForwarding({
        relay,
        logger: options.logger,
        ...(options.resumable !== undefined && { resumable: options.resumable }),
        deliver: (session, message) => this.deliver(session, message),
      });
      this.transportRelay = {
        replica: relay.replica,
        forward: (to, session, message) => forwarding.forward(to, session, message),
      };
    }
    if (options.streamRelay !== undefined) {
      const relayed = new RelayedStreams({
        logger: options.logger,
        session: (id) => this.sessions.get(id),
        ...(options.record !== undefined && { record: options.record }),
      });
      options.streamRelay.serveStreams((request, reply) => relayed.serve(request, reply));
    }
    // Idle sessions are closed, so a host that went away does not hold a session slot for ever.
    this.sweep = setInterval(() => this.closeIdle(), Math.max(1000, Math.min(60_000, sessionIdleMs / 4)));
    this.sweep.unref();
  }

  /** Serves a request that names session `id`. */
  async serve(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    principal: Principal,
    body: unknown,
  ): Promise<void> {
    const { logger } = this.options;
    const session = this.sessions.get(id) ?? (await this.restoreOnce(id, principal));
    if (session === FOREIGN || (session !== undefined && principalKey(principal) !== session.owner))
      return this.refuseForeign(req, res, id, principal, session === FOREIGN ? undefined : session.principal);
    if (session === undefined) {
      const judged = this.options.ids.judge(id);
      logger.info(
        judged === 'other-replica'
          ? `session ${id.slice(0, 12)}… belongs to another replica (or to this one before a restart): 404, the host initializes again`
          : judged === 'this-replica'
            ? `session ${id.slice(0, 12)}… has ended: 404`
            : `a request named a session id this gateway never issued: 404`,
      );
      return sendRpcError(res, 404, SESSION_NOT_FOUND, 'Session not found');
    }
    session.lastSeen = Date.now();
    void this.save(id, session);
    if (req.method === 'GET') {
      session.streams++;
      res.once('close', () => {
        session.streams--;
        session.lastSeen = Date.now();
      });
    }
    await session.transport.handle(req, res, body);
  }

  /**
   * Refuses a request of `principal` in session `id`, which is another principal's: 403 on every
   * replica alike, whether the session runs here or only its record in the store was found
   * (a balancer may send the request to any replica, and the answer must not depend on which).
   * Nothing of the session is touched, its call streams neither resumed here nor relayed from
   * the replica running them; the attempt is audited under who asked.
   */
  private refuseForeign(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    principal: Principal,
    owner: Principal | undefined,
  ): void {
    const resumed = req.method === 'GET' && typeof req.headers['last-event-id'] === 'string';
    const what = resumed ? 'resumed a call stream of' : 'used';
    const whose =
      owner === undefined
        ? `session ${id.slice(0, 12)}…, which belongs to another principal`
        : `the session of ${describePrincipal(owner)}`;
    this.options.logger.warn(`${describePrincipal(principal)} ${what} ${whose}: refused`);
    this.options.record?.(
      {
        type: 'session_refused',
        method: req.method ?? '',
        sessionId: `${id.slice(0, 12)}…`,
        ...(resumed && { resumed: true as const }),
      },
      principal,
    );
    sendRpcError(res, 403, -32000, 'this session belongs to another principal');
  }

  /** Opens a session with the initialize in `body`, unless a bound refuses it. */
  async open(
    req: IncomingMessage,
    res: ServerResponse,
    principal: Principal,
    body: unknown,
    profile?: string,
  ): Promise<void> {
    if (this.refusedByBounds(res, principal)) return;
    const owner = principalKey(principal);
    this.countStarting(owner, 1);
    let session: Session | undefined;
    const transport = new SessionTransport({
      sessionId: () => this.options.ids.mint(),
      onInitialized: (id): Promise<void> => {
        this.countStarting(owner, -1);
        session = {
          transport,
          savedAt: 0,
          connection: undefined,
          principal,
          owner,
          lastSeen: Date.now(),
          streams: 0,
          initialize: (body as { params?: unknown }).params,
          ...(profile !== undefined && { profile }),
        };
        this.sessions.set(id, session);
        this.options.logger.info(`session ${id.slice(0, 12)}… opened for ${describePrincipal(principal)}`);
        // The host's next request may reach another replica (a balancer without stickiness),
        // which knows the session only from its record: the answer to initialize waits until
        // the record is in the store (the SDK's transport awaits this), or saving it failed.
        return this.save(id, session);
      },
      onDeleted: () => void this.end(transport.sessionId, HOST_ENDED),
      beforeWrite: () => connection.beforeWrite(),
      quietStreams: this.options.quietStreams,
      ...this.sharing(owner),
    });
    const connection = this.options.connect(transport, principal, profile);
    await transport.start();
    try {
      await transport.handle(req, res, body);
    } finally {
      if (session === undefined) {
        // The initialize was refused by the transport (a batch, a bad request): nothing to keep.
        this.countStarting(owner, -1);
        await connection.close();
      } else session.connection = connection;
    }
  }

  /** What a session transport of `owner` needs to share its session with the other replicas. */
  private sharing(owner: string): { relay?: TransportRelay; resume?: TransportResume } {
    const { records, relay, resumable, logger, streamRelay } = this.options;
    if (this.transportRelay === undefined) return {};
    if (records === undefined || relay === undefined || resumable === undefined)
      return { relay: this.transportRelay };
    return {
      relay: this.transportRelay,
      resume: {
        calls: resumable,
        owner: records.ownerOf(owner),
        alive: (replica) => relay.alive(replica),
        acquire: () => this.resuming < MAX_RESUMING && ++this.resuming > 0,
        release: () => void this.resuming--,
        relayStream: (to, session, lastEventId, out) => {
          if (streamRelay === undefined) {
            out.lost('streams cannot be relayed between replicas here');
            return { cancel: () => {} };
          }
          return streamRelay.sendOn(
            to,
            { principal: owner, body: { session, lastEventId }, headers: {}, stream: true },
            out,
          );
        },
        log: (message) => logger.info(message),
      },
    };
  }

  /**
   * Writes `session`'s record for the other replicas, for as long as it may stay idle; once
   * again when a quarter of that has passed, not on every request. A store that fails is
   * logged: the session goes on here, and another replica would answer 404 as without a store.
   */
  private save(id: string, session: Session): Promise<void> {
    const { records, listen, logger } = this.options;
    const now = Date.now();
    if (records === undefined || now - session.savedAt < listen.sessionIdleMs / 4) return DONE;
    session.savedAt = now;
    const record: SessionRecord = {
      owner: records.ownerOf(session.owner),
      initialize: session.initialize,
      ...(session.profile !== undefined && { profile: session.profile }),
    };
    return records.save(id, record, listen.sessionIdleMs).catch((error: unknown) => {
      session.savedAt = 0;
      logger.warn(
        `session ${id.slice(0, 12)}… could not be shared with the other replicas: ${(error as Error).message}`,
      );
    });
  }

  /** Sessions being continued here from the store now: requests that come meanwhile wait for it. */
  private readonly restoring = new Map<string, Promise<Session | typeof FOREIGN | undefined>>();

  /**
   * Continues session `id` here once, however many of its requests arrive while it is being
   * rebuilt (a host's answer and its resumed stream come together after a replica dies): each
   * would otherwise rebuild a connection of its own, and all but the last would be lost.
   */
  private restoreOnce(id: string, principal: Principal): Promise<Session | typeof FOREIGN | undefined> {
    const key = `${id}\u0000${principalKey(principal)}`;
    let restoring = this.restoring.get(key);
    if (restoring === undefined) {
      restoring = this.restore(id, principal).finally(() => this.restoring.delete(key));
      this.restoring.set(key, restoring);
    }
    return restoring;
  }

  /**
   * Continues here a session another replica set up (or this one before a restart), from its
   * record in the shared store: a new connection of the gateway, given the host's initialize
   * again. FOREIGN when the record is another principal's; undefined when there is none, or the
   * store cannot say.
   */
  private async restore(id: string, principal: Principal): Promise<Session | typeof FOREIGN | undefined> {
    const { records, logger } = this.options;
    if (records === undefined || this.options.ids.judge(id) === 'unsealed') return undefined;
    let record: SessionRecord | undefined;
    try {
      record = await records.load(id);
    } catch (error) {
      logger.warn(
        `session ${id.slice(0, 12)}… could not be looked up in the shared store: ${(error as Error).message}`,
      );
      return undefined;
    }
    const owner = principalKey(principal);
    if (record === undefined) return undefined;
    if (record.owner !== records.ownerOf(owner)) return FOREIGN;
    // Another request of the same session may have restored it while the store answered.
    const already = this.sessions.get(id);
    if (already !== undefined) return already;
    const transport = new SessionTransport({
      sessionId: () => id,
      onInitialized: () => {},
      onDeleted: () => void this.end(id, HOST_ENDED),
      beforeWrite: () => connection.beforeWrite(),
      quietStreams: this.options.quietStreams,
      ...this.sharing(owner),
    });
    const connection = this.options.connect(transport, principal, record.profile);
    await transport.start();
    if (!(await transport.restore(id, record.initialize))) {
      await connection.close();
      return undefined;
    }
    const session: Session = {
      transport,
      savedAt: Date.now(),
      connection,
      principal,
      owner,
      lastSeen: Date.now(),
      streams: 0,
      initialize: record.initialize,
      ...(record.profile !== undefined && { profile: record.profile }),
    };
    this.sessions.set(id, session);
    logger.info(
      `session ${id.slice(0, 12)}… continued here from the shared store for ${describePrincipal(principal)}`,
    );
    return session;
  }

  /** An answer another replica sent on, for a request this one sent the host in `id`. */
  deliver(id: string, message: JsonRpcMessage): void {
    const session = this.sessions.get(id);
    if (session === undefined) {
      this.options.logger.info(
        `an answer sent on from another replica is for session ${id.slice(0, 12)}…, which is no longer here: dropped`,
      );
      return;
    }
    session.lastSeen = Date.now();
    session.transport.deliverForwarded(message);
  }

  /** Stops closing idle sessions (the listener stops accepting). */
  stopSweeping(): void {
    clearInterval(this.sweep);
  }

  /** Closes every session that is left. */
  async closeAll(): Promise<void> {
    this.stopSweeping();
    await Promise.all([...this.sessions.keys()].map((id) => this.end(id, 'the gateway is shutting down')));
  }

  /** Answers 503 or 429 and says true when a new session for `principal` would pass a bound. */
  private refusedByBounds(res: ServerResponse, principal: Principal): boolean {
    const { listen, logger } = this.options;
    if (this.sessions.size + this.starting >= listen.maxSessions) {
      logger.warn(`refused a new session: ${listen.maxSessions} are open (listen.maxSessions)`);
      res.setHeader('Retry-After', '30');
      sendRpcError(
        res,
        503,
        -32000,
        `too many sessions (listen.maxSessions is ${listen.maxSessions}); retry later`,
      );
      return true;
    }
    const { maxSessions: ownLimit } = listen.perPrincipal;
    if (this.sessionsOf(principalKey(principal)) < ownLimit) return false;
    // 429, not 503: the gateway has room; this principal has used its share of it, and can
    // make room itself by ending one of its own sessions.
    logger.warn(
      `refused a new session for ${describePrincipal(principal)}: it holds ${ownLimit} (listen.perPrincipal.maxSessions)`,
    );
    res.setHeader('Retry-After', '30');
    sendRpcError(
      res,
      429,
      -32000,
      `too many sessions for ${describePrincipal(principal)} (listen.perPrincipal.maxSessions is ${ownLimit}); end one of them (DELETE) or retry later`,
    );
    return true;
  }

  private countStarting(owner: string, by: 1 | -1): void {
    this.starting += by;
    const left = (this.startingBy.get(owner) ?? 0) + by;
    if (left > 0) this.startingBy.set(owner, left);
    else this.startingBy.delete(owner);
  }

  /** The sessions `owner` holds now, initialized or being set up. */
  private sessionsOf(owner: string): number {
    let n = this.startingBy.get(owner) ?? 0;
    for (const session of this.sessions.values()) if (session.owner === owner) n++;
    return n;
  }

  private closeIdle(): void {
    const { sessionIdleMs } = this.options.listen;
    const now = Date.now();
    for (const [id, session] of this.sessions)
      if (session.streams === 0 && now - session.lastSeen > sessionIdleMs)
        void this.end(id, `idle for ${Math.round(sessionIdleMs / 1000)} s (listen.sessionIdleTimeout)`);
  }

  private async end(id: string | undefined, why: string): Promise<void> {
    const session = id === undefined ? undefined : this.sessions.get(id);
    if (session === undefined || id === undefined) return;
    this.sessions.delete(id);
    this.options.logger.info(`session ${id.slice(0, 12)}… closed: ${why}`);
    // Ended by its host, it is over on every replica; closed here for another reason (idle
    // here, a shutdown), it may go on elsewhere until its record expires.
    if (why === HOST_ENDED)
      this.options.records?.delete(id).catch((error: unknown) => {
        this.options.logger.warn(
          `session ${id.slice(0, 12)}… could not be removed from the shared store: ${(error as Error).message}`,
        );
      });
    await session.connection?.close();
  }
}
