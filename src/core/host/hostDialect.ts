import type { Params } from '../protocol/jsonRpc.js';
import { legacyTask, modernTask } from '../protocol/taskMessages.js';
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
  /** How the host is told of a task its call created, and how it asks about the task after. */
  readonly tasks: HostTaskDialect;
}

/**
 * How the host's requests about a task of an upstream are served (see core/tasks), by the eras
 * of the two: passed on as they are (the same era, the server's questions reaching the host as
 * its own requests do); the server's listed questions asked by the gateway and shown under its
 * keys (both 2026-07-28); a 2025-11-25 server's task shown as the tasks extension shows one, its
 * `tasks/result` held open for its questions (a modern host); a modern server's task shown in
 * 2025-11-25 shape, `tasks/result` made by polling it (a handshake-era host).
 */
export type TaskTranslation = 'passOn' | 'relayQuestions' | 'holdResult' | 'pollForResult';

/** The part of the host's dialect that concerns tasks. */
export interface HostTaskDialect {
  /** How a request about a task of an upstream speaking `upstreamEra` is served. */
  translation(upstreamEra: 'legacy' | 'modern' | undefined): TaskTranslation;
  /**
   * The answer to a call run as a task, `task` (in either era's shape) under `handle`; `fields`
   * are the rest of the server's answer, `flat` whether the server gave the task flat.
   */
  created(fields: Params, task: Params, handle: string, flat: boolean): Params;
  /**
   * Whether a created task's server is asked at once to push its statuses (the host hears them
   * on its connection), rather than when one of the host's streams names the task.
   */
  readonly watchOnCreation: boolean;
}

/** Tasks of the 2025-11-25 revision: `{ task }` answers, `tasks/result` fetches the outcome. */
const CORE_TASKS: HostTaskDialect = {
  translation: (upstreamEra) => (upstreamEra === 'modern' ? 'pollForResult' : 'passOn'),
  watchOnCreation: true,
  created: (fields, task, handle, flat) => ({
    ...fields,
    task: { ...(flat ? legacyTask(task) : task), taskId: handle },
  }),
};

/** The 2026-07-28 tasks extension: flat answers (`resultType: "task"`), results inlined. */
const EXTENSION_TASKS: HostTaskDialect = {
  translation: (upstreamEra) => (upstreamEra === 'modern' ? 'relayQuestions' : 'holdResult'),
  watchOnCreation: false,
  created: (fields, task, handle) => {
    const { task: _task, ...rest } = fields;
    return { ...rest, resultType: 'task', ...modernTask(task), taskId: handle };
  },
};

/** The task dialect of a host whose dialect is not at hand (tests): a 2025-11-25 host's. */
export const LEGACY_HOST_TASKS: HostTaskDialect = CORE_TASKS;

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
  readonly tasks = CORE_TASKS;

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
  readonly tasks = EXTENSION_TASKS;

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
