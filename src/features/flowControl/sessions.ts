import { FLOW_LABELS, type FlowLabel } from '../../config/types.js';
import type { FlowLineage } from '../../core/events.js';

/** What one host session has seen: its labels, and the requests that brought each. */
interface SessionFlow {
  readonly seen: Set<FlowLabel>;
  /** Per label, the first requests whose results brought it (bounded: see `SOURCES_PER_LABEL`). */
  readonly sources: Map<FlowLabel, FlowLineage[]>;
  /** The last source number handed out in this session. */
  count: number;
}

/**
 * Sources kept per label and session. The first request that brought a label is what made the
 * session carry it; a few more show whether that was a one-off, and a bound keeps a long session's
 * memory flat.
 */
const SOURCES_PER_LABEL = 5;

/**
 * Host sessions remembered at once. Past it, the session unused for longest is forgotten (its
 * next call starts clean): a bound on memory with many principals on a listener, far above the
 * number of people one gateway serves.
 */
const MAX_SESSIONS = 10_000;

export interface FlowSessionsOptions {
  /** When a result arrived; injected for tests. */
  readonly now?: () => Date;
  readonly maxSessions?: number;
}

/**
 * Which flow labels have reached each host session through results, and which requests brought
 * them. Keyed by the caller (see `sessionKey` in stage.ts). Labels are only ever added: nothing a
 * session does makes what it has read go away.
 */
export class FlowSessions {
  readonly #sessions = new Map<string, SessionFlow>();
  readonly #now: () => Date;
  readonly #max: number;

  constructor(options: FlowSessionsOptions = {}) {
    this.#now = options.now ?? (() => new Date());
    this.#max = options.maxSessions ?? MAX_SESSIONS;
  }

  /** The labels session `key` has seen; undefined when it has seen none. */
  seen(key: string): ReadonlySet<FlowLabel> | undefined {
    return this.#sessions.get(key)?.seen;
  }

  /** The requests that brought `labels` into session `key`, oldest first per label. */
  lineage(key: string, labels: readonly FlowLabel[]): FlowLineage[] {
    const session = this.#sessions.get(key);
    if (session === undefined) return [];
    return labels.flatMap((label) => session.sources.get(label) ?? []);
  }

  /**
   * A successful result of a request with `labels` reached session `key`: records it and returns
   * its source number in that session.
   */
  record(
    key: string,
    labels: readonly FlowLabel[],
    request: Omit<FlowLineage, 'label' | 'source' | 'at'>,
  ): number {
    const session = this.#touch(key);
    const source = ++session.count;
    const at = this.#now().toISOString();
    for (const label of labels) {
      session.seen.add(label);
      let sources = session.sources.get(label);
      if (sources === undefined) session.sources.set(label, (sources = []));
      if (sources.length < SOURCES_PER_LABEL) sources.push({ label, source, ...request, at });
    }
    return source;
  }

  /** The session, made or moved to the back of the eviction order. */
  #touch(key: string): SessionFlow {
    let session = this.#sessions.get(key);
    if (session !== undefined) {
      this.#sessions.delete(key);
    } else {
      session = { seen: new Set(), sources: new Map(), count: 0 };
      if (this.#sessions.size >= this.#max) {
        const oldest = this.#sessions.keys().next();
        if (oldest.done !== true) this.#sessions.delete(oldest.value);
      }
    }
    this.#sessions.set(key, session);
    return session;
  }
}

/** The labels that, seen together with a call's own, make the lethal trifecta. */
export const TRIFECTA: readonly FlowLabel[] = FLOW_LABELS;

/**
 * Whether a request with `labels`, in a session that has seen `seen`, would complete the trifecta:
 * it carries a label of its own and, with what the session has seen, every label is there.
 */
export function completesTrifecta(
  seen: ReadonlySet<FlowLabel> | undefined,
  labels: readonly FlowLabel[],
): boolean {
  if (labels.length === 0) return false;
  return TRIFECTA.every((label) => labels.includes(label) || seen?.has(label) === true);
}
