import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';
import type { RpcPeer } from '../rpc/peer.js';
import { asComplete } from './answerShape.js';
import type { HostList, HostSession, InitializedHostSession } from './hostSession.js';
import type { ModernHost } from './modernHost.js';

/**
 * How the gateway talks to its host, for everything that differs between the protocol eras.
 * The era is classified once, at the edge (ModernHost.admit); everything past the edge asks the
 * dialect instead of testing the era, so there is one adapter per era and no branch elsewhere.
 */
export interface HostDialect {
  /** What the host told us, and how to ask it something (sampling, elicitation, roots). */
  readonly session: HostSession;
  /** The era routed messages record: 'modern', or undefined for the handshake revisions. */
  readonly hostEra: 'modern' | undefined;
  /**
   * Whether the host is asked with server-to-client requests on its own connection (so an
   * answer on a byte stream is where its last progress is confirmed), rather than within a call.
   */
  readonly asksByRequest: boolean;
  /** Whether upstreams are best tried with the stateless revision first (the host speaks it). */
  readonly prefersModern: boolean;
  /**
   * How a task's status changes reach the host: as `notifications/tasks/status` on the
   * connection, or as the whole task on the `subscriptions/listen` streams that asked for it.
   */
  readonly taskStatus: 'notifications' | 'streams';
  /**
   * How the answers of an upstream of `upstreamEra` are put before any stage sees them (the peer
   * applies it where the answer is read): a handshake-era server's as final for a modern host,
   * since that revision has no interim results; undefined when they pass as they come.
   */
  answersFrom(upstreamEra: 'legacy' | 'modern' | undefined): ((outcome: Outcome) => Outcome) | undefined;
  /** Whether an upstream's log message at `level` goes to the host. */
  wantsLog(level: unknown): boolean;
  /** Tells the host that these lists changed, where it has a place to hear it. */
  listsChanged(lists: ReadonlySet<HostList>): void;
  /**
   * Passes an upstream notification the host may hear outside a call (a resource update, an
   * out-of-band elicitation finishing) to the host; false when this era has no place for it.
   */
  forward(method: string, params: Params | undefined): boolean;
}

const LIST_CHANGED_METHOD: Readonly<Record<HostList, string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
};

/** A host of the handshake revisions (up to 2025-11-25), and one whose era is not known yet. */
export class LegacyHostDialect implements HostDialect {
  readonly hostEra = undefined;
  readonly asksByRequest = true;
  readonly prefersModern = false;
  readonly taskStatus = 'notifications';

  constructor(
    readonly session: InitializedHostSession,
    private readonly peer: RpcPeer,
  ) {}

  answersFrom(): undefined {
    return undefined;
  }

  wantsLog(): boolean {
    return true;
  }

  /** Only lists the host has fetched are announced: before that it has nothing to refresh. */
  listsChanged(lists: ReadonlySet<HostList>): void {
    for (const list of lists) if (this.session.hasSeen(list)) this.peer.notify(LIST_CHANGED_METHOD[list]);
  }

  forward(method: string, params: Params | undefined): boolean {
    this.peer.notify(method, params);
    return true;
  }
}

/** A host of the stateless revision (2026-07-28): it hears things only on its listening streams. */
export class ModernHostDialect implements HostDialect {
  readonly hostEra = 'modern';
  readonly asksByRequest = false;
  readonly prefersModern = true;
  readonly taskStatus = 'streams';

  constructor(readonly session: ModernHost) {}

  answersFrom(upstreamEra: 'legacy' | 'modern' | undefined): ((outcome: Outcome) => Outcome) | undefined {
    return upstreamEra === 'modern' ? undefined : asComplete;
  }

  wantsLog(level: unknown): boolean {
    return this.session.wantsLog(level);
  }

  listsChanged(lists: ReadonlySet<HostList>): void {
    this.session.listsChanged(lists);
  }

  /** Resource updates go to the streams that asked for them; nothing else has a place. */
  forward(method: string, params: Params | undefined): boolean {
    return method === 'notifications/resources/updated' && this.session.resourceUpdated(params);
  }
}

/**
 * The host's dialect as the edge has classified it: the legacy one until a request carrying the
 * per-request envelope makes the connection modern (ModernHost.admit decides, once).
 */
export class HostDialects {
  private readonly legacy: LegacyHostDialect;
  private readonly modern: ModernHostDialect;

  constructor(options: {
    readonly session: InitializedHostSession;
    readonly modern: ModernHost;
    readonly peer: RpcPeer;
  }) {
    this.legacy = new LegacyHostDialect(options.session, options.peer);
    this.modern = new ModernHostDialect(options.modern);
  }

  get current(): HostDialect {
    return this.modern.session.era === 'modern' ? this.modern : this.legacy;
  }
}
