import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Params } from '../rpc/jsonRpc.js';
import type { Upstream } from '../upstreams/upstream.js';
import type { Next, ToolCall } from './types.js';

export interface ForwardCallOptions {
  readonly upstreams: ReadonlyMap<string, Upstream>;
}

/**
 * The pipeline's terminal: sends the call to the upstream that owns the tool, under the
 * upstream's own tool name. Cancellation and progress ride on the session's own id table.
 */
export function createForwardCall(options: ForwardCallOptions): Next {
  return function forwardCall(call: ToolCall): Promise<CallToolResult> {
    const upstream = options.upstreams.get(call.server)!;
    const params: Params = { name: call.tool };
    if (call.arguments !== undefined) params.arguments = call.arguments;
    if (call.meta !== undefined) params._meta = call.meta;
    // The call carries the request options itself (its signal and progress listener).
    return upstream.request('tools/call', params, call) as Promise<CallToolResult>;
  };
}
