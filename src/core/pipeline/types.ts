import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Cancellation } from '../rpc/cancellation.js';
import type { Params, RequestId } from '../protocol/jsonRpc.js';
import type { ProgressListener } from '../rpc/progress.js';
import type { Decision } from './decision.js';
import type { Outcome } from '../rpc/outcome.js';
import type { Principal } from '../principal.js';
import type { FlowRecord } from '../events.js';
import type { HostSession } from '../host/hostSession.js';

/**
 * Every request the gateway routes, in either direction, is one of these kinds, and passes the
 * one pipeline as a `RoutedMessage`.
 * - Host to upstream: a tool call, a prompt, a resource read or (un)subscription, a completion.
 * - Upstream to host: sampling, elicitation, roots.
 * - Answered by the gateway: a sign-in to a server (`authorize`).
 */
export type MessageKind =
  | 'tools/call'
  | 'prompts/get'
  | 'resources/read'
  | 'resources/subscribe'
  | 'resources/unsubscribe'
  | 'completion/complete'
  | 'sampling/createMessage'
  | 'elicitation/create'
  | 'roots/list'
  // A task the host created (tasks/list: one upstream's page of them).
  | 'tasks/get'
  | 'tasks/result'
  | 'tasks/cancel'
  | 'tasks/list'
  // The tasks extension's answers to a task's questions (2026-07-28).
  | 'tasks/update'
  // A sign-in to a server that asks its user to sign in: the gateway asks the host to open its
  // page (the server's authorize tool, or a call of one of its tools while it waits for it).
  | 'authorize';

/** Who a routed message goes to: an upstream (the host asked), or the host (an upstream asked). */
export type Direction = 'upstream' | 'host';

/**
 * One routed request as it travels through the pipeline: one object per request, made by the
 * router. What reaches the other side (target, arguments, params, meta) is never changed in
 * place: a stage that must change it passes a new object inward (confirmation passes the
 * approved copy). The fields stages write are the ones marked for it: `decision`, `onProgress`
 * and `record`. One object, rather than a copy per stage, keeps a request's cost low.
 */
export interface RoutedMessage {
  readonly kind: MessageKind;
  readonly direction: Direction;
  /** The upstream server's name in the config: the one addressed, or the one asking. */
  readonly server: string;
  /**
   * What is addressed, as the upstream names it: a tool or prompt name, a resource URI, the
   * completion's prompt name or resource URI; '' when the kind addresses nothing (sampling,
   * elicitation, roots).
   */
  readonly target: string;
  /** What the host named: an exposed tool or prompt name, a URI; for upstream requests, `target`. */
  readonly exposedName: string;
  /** For a tool call, the upstream's definition (schemas, annotations) as last listed. */
  readonly definition: Tool | undefined;
  /**
   * The values a rule or a human judges: a tool's or prompt's arguments, a completion's argument;
   * for other kinds, the request's params without `_meta`.
   */
  readonly arguments: Record<string, unknown> | undefined;
  /** The request's params as they go to the other side, `_meta` aside (see `meta`). */
  readonly params: Params | undefined;
  /** The sender's `_meta`, minus its progress token (progress is re-tagged). */
  readonly meta: Params | undefined;
  /** The sender's JSON-RPC id for this request, when the router knows it (for traces). */
  readonly requestId?: RequestId;
  /**
   * Cancelled when the sender cancels, or by a stage that ends it early (the timeout), with its
   * reason: the peer then tells the other side and drops a late answer.
   */
  readonly signal: Cancellation;
  /** Receives the other side's progress; set when the sender asked for progress. Stages may wrap it. */
  onProgress: ProgressListener | undefined;
  /**
   * A tool call to run as a task: the host asked for one (its `task` params go on, and the answer
   * is the task, not its result), or the gateway runs one itself for a host that cannot (the
   * answer is the task's final result). Absent for an ordinary call.
   */
  readonly task?: TaskAugmentation;
  /** The policy's decision, set by the policy stage for the stages inside it (confirmation). */
  decision?: Decision;
  /** What the stages decided and did, for the audit trail. Stages write; audit reads. */
  readonly record: CallRecord;
  /**
   * The protocol era of the host that sent (or is asked) this, and of the upstream addressed
   * (or asking); absent means legacy, the handshake revisions. Stages decide the same way for
   * either era; the few that shape results for an era read these.
   */
  readonly hostEra?: ProtocolEra | undefined;
  readonly upstreamEra?: ProtocolEra | undefined;
  /**
   * Applied to the answer as it arrives, before any stage sees it (a handshake-era server's
   * answer made final for a modern host: see `HostDialect.answersFrom`); set by whoever makes
   * the message.
   */
  readonly answerAs?: ((outcome: Outcome) => Outcome) | undefined;
  /**
   * The host connection the message belongs to (the one that asked, or the one asked), when a
   * router made it: with several host connections, questions and records follow the right one.
   */
  readonly host?: HostSession;
  /** Who that connection is (see core/principal.ts); set by the router like `host`. */
  readonly principal?: Principal;
  /**
   * The replica (its audit session) that took the call over from one that died while its
   * confirmation was pending (2025-11-25 sessions with a shared store), and runs it; the host
   * transport says so beside the request (see `MessageExtra.takenOverBy`), and the audit
   * record names it. A member, not a mark on the params, so a copy of those loses nothing.
   */
  readonly takenOverBy?: string | undefined;
}

/** See `RoutedMessage.task`. */
export interface TaskAugmentation {
  /** The `task` params sent with the call (the host's, or the gateway's own). */
  readonly params: Params;
  /** Who polls the task and fetches its result: the host, or the gateway on a host's behalf. */
  readonly drivenBy: 'host' | 'gateway';
}

/** Handshake revisions (up to 2025-11-25), or the stateless one (2026-07-28). */
export type ProtocolEra = 'legacy' | 'modern';

/** How a `confirm` decision was settled. */
export type ConfirmedBy = 'elicitation' | 'command' | 'remembered';

export interface CallRecord {
  /** Result repairs applied (repair). */
  repairs: string[];
  /** The trace this request belongs to, 32 hex digits, when tracing is on (telemetry). */
  traceId?: string;
  /** Why the pins stage refused the call (features/pins/pinDecision.ts `PinStatus`); absent when it did not. */
  pin?: 'changed' | 'new' | 'unpinnable';
  /** Flow control's labels, source number and trifecta decision (flowControl). */
  flow?: FlowRecord;
  /**
   * The replicas that took the host's answers and sent them on to this one (stateless retries),
   * in the order they first did, each once.
   */
  continuedVia?: string[];
  /**
   * Milliseconds the request waited for its turn at the principal's own process of a server that
   * runs one request at a time over all replicas; absent when it did not wait.
   */
  leaseWaitMs?: number;
  /**
   * `gateway` on a request the gateway sends of its own accord after the host's request it
   * follows was answered and recorded (a task's own poll while it holds the user's turn), so
   * that its record says the host did not ask; absent on every request a host made.
   */
  origin?: 'gateway';
  /**
   * What the request is waiting for before it can be sent, while it waits (another replica using
   * the same process): a timeout that fires meanwhile names it. Never audited.
   */
  waitingOn?: string;
  /** The policy's decision (policy), with how a confirmation went (confirmation). */
  decision?: {
    effect: Decision['effect'];
    rule: string | null;
    confirmed?: boolean;
    how?: ConfirmedBy | 'unavailable' | 'timeout' | 'continued_elsewhere';
    /** Which layer's policy decided, when managed settings are in force. */
    layer?: Decision['layer'];
  };
}

export type Next = (message: RoutedMessage) => Promise<Outcome>;
export type Stage = (message: RoutedMessage, next: Next) => Promise<Outcome>;
