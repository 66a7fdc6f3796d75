import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Decision } from './decision.js';
import type { Cancellation } from '../rpc/cancellation.js';
import type { WardenError } from '../errors.js';
import type { Params } from '../rpc/jsonRpc.js';
import type { ProgressListener } from '../upstreams/upstreamSession.js';

/**
 * One `tools/call` as it travels through the pipeline: one object per call, made by the router.
 * What reaches the upstream (tool, arguments, meta) is never changed in place: a stage that
 * must change it passes a new object inward (confirmation passes the approved copy). The
 * fields stages write are the ones marked for it: `decision`, `onProgress` and `record`. One
 * object, rather than a copy per stage, keeps a call's cost to the gateway low (issue 7).
 */
export interface ToolCall {
  /** The name the host called. */
  readonly exposedName: string;
  /** The upstream's name in the config. */
  readonly server: string;
  /** The upstream's own tool name. */
  readonly tool: string;
  /** The upstream's definition (schemas, annotations) as last listed. */
  readonly definition: Tool;
  readonly arguments: Record<string, unknown> | undefined;
  /** The host's `_meta` from the request, minus its progress token (progress is re-tagged). */
  readonly meta: Params | undefined;
  /**
   * Cancelled when the host cancels the call, or by a stage that ends it early (the timeout),
   * with its reason: the upstream session then tells the upstream and drops a late answer.
   */
  readonly signal: Cancellation;
  /**
   * Receives the upstream's progress params. The router sets it when the host asked for
   * progress; the timeout stage wraps it (progress keeps a call alive).
   */
  onProgress: ProgressListener | undefined;
  /** The policy's decision, set by the policy stage for the stages inside it (confirmation). */
  decision?: Decision;
  /**
   * Set when the host's request was refused before the pipeline (arguments nested too deep; they
   * are left out): only the audit stage sees such a call, and it fails with this error.
   */
  readonly refused?: WardenError;
  /** What the stages decided and did, for the audit log. Interceptors write; only audit reads. */
  readonly record: CallRecord;
}

/** How a `confirm` decision was settled. */
export type ConfirmedBy = 'elicitation' | 'command' | 'remembered';

export interface CallRecord {
  /** Result repairs applied (resultRepair). */
  repairs: string[];
  /** Why the pins stage refused the call (src/pins/pinDecision.ts `PinStatus`); absent when it did not. */
  pin?: 'changed' | 'new' | 'unpinnable';
  /** The policy's decision (policy), with how a confirmation went (confirmation). */
  decision?: {
    effect: Decision['effect'];
    rule: string | null;
    confirmed?: boolean;
    how?: ConfirmedBy | 'unavailable' | 'timeout';
  };
}

export type Next = (call: ToolCall) => Promise<CallToolResult>;
export type Interceptor = (call: ToolCall, next: Next) => Promise<CallToolResult>;
