import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Decision } from '../policy/types.js';
import type { CancelSignal } from './cancellation.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { ProgressListener } from '../upstreams/upstreamSession.js';

/**
 * One `tools/call` as it travels through the pipeline. Interceptors read it; the ones that
 * must change what reaches the upstream (none yet) return a new object rather than mutate.
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
  /** Cancelled when the host cancels the call (and, inside the timeout stage, when it fires). */
  readonly signal: CancelSignal | undefined;
  /** Set when the host asked for progress; receives upstream progress params. */
  readonly onProgress: ProgressListener | undefined;
  /** The policy's decision, set by the policy stage for the stages inside it (confirmation). */
  readonly decision?: Decision;
  /** What the stages decided and did, for the audit log. Interceptors write; only audit reads. */
  readonly record: CallRecord;
}

/** How a `confirm` decision was settled. */
export type ConfirmedBy = 'elicitation' | 'command' | 'remembered';

export interface CallRecord {
  /** Result repairs applied (resultRepair). */
  repairs: string[];
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
