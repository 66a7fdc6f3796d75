import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
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
  /** Aborted when the host cancels the call. */
  readonly signal: AbortSignal | undefined;
  /** Set when the host asked for progress; receives upstream progress params. */
  readonly onProgress: ProgressListener | undefined;
  /** What the stages decided and did, for the audit log. Interceptors append; nothing reads it back. */
  readonly record: CallRecord;
}

export interface CallRecord {
  repairs: string[];
}

export type Next = (call: ToolCall) => Promise<CallToolResult>;
export type Interceptor = (call: ToolCall, next: Next) => Promise<CallToolResult>;
