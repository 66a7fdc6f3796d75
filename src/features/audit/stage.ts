import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AuditLog } from './auditWriter.js';
import type { CallEvent, CallOutcome, CallStartEvent, ClientInfo } from '../../core/events.js';
import type { AuditConfig } from '../../config/types.js';
import { UpstreamRpcError, WardenError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Interceptor, ToolCall } from '../../core/pipeline/types.js';
import { rawResult } from '../../core/rpc/rawResult.js';

export interface AuditInterceptorOptions {
  readonly log: AuditLog;
  readonly config: AuditConfig;
  /** This gateway process's session id, shared by all its records. */
  readonly session: string;
  /** The host, as it introduced itself in `initialize`. */
  readonly client: () => ClientInfo | undefined;
  readonly logger: Logger;
}

/** The decision recorded when no policy stage ran (no policies configured). */
const ALLOWED_BY_DEFAULT = Object.freeze({ effect: 'allow' as const, rule: null });

function outcomeOf(error: unknown): CallOutcome {
  if (error instanceof UpstreamRpcError) return 'protocol_error';
  if (!(error instanceof WardenError)) return 'internal_error';
  switch (error.code) {
    case 'DENIED':
    case 'TOOL_CHANGED':
      return 'denied';
    case 'CALL_TIMEOUT':
      return 'timeout';
    case 'CALL_CANCELLED':
      return 'cancelled';
    case 'QUEUE_FULL':
      return 'queue_full';
    case 'UPSTREAM_FAILED':
    case 'UPSTREAM_UNAVAILABLE':
      return 'upstream_failure';
    default:
      return 'internal_error';
  }
}

/** Bytes of the result as the host receives it (the upstream's own text when forwarded as is). */
function resultBytes(result: CallToolResult): number {
  const raw = rawResult(result);
  if (raw?.bytes !== undefined) return raw.bytes.length;
  return Buffer.byteLength(raw?.text ?? JSON.stringify(result));
}

/**
 * Outermost stage (ARCHITECTURE "The flow"): sees every outcome, denials and timeouts included,
 * and the whole duration. Records are appended synchronously (one write per record), so a
 * record exists before the host gets the answer and nothing sits in a buffer at exit
 * (loggers' buffers lose lines). With `onFailure: block`, a `call_start` record is written before
 * the call goes on, and a call whose `call_start` cannot be written is refused: no unrecorded call
 * ever reaches an upstream, even when the disk fills during the call before.
 */
export function createAuditInterceptor(options: AuditInterceptorOptions): Interceptor {
  const { log, config, logger } = options;
  let calls = 0;
  return async function audit(call, next) {
    // Numbered only when a call_start is written: the number pairs it with its call record.
    const number = config.onFailure === 'block' ? ++calls : undefined;
    if (number !== undefined) await log.writeAhead(startEvent(call, number));
    const started = performance.now();
    let outcome: CallOutcome = 'ok';
    let result: CallToolResult | undefined;
    let failure: unknown;
    try {
      result = await next(call);
      if (result.isError === true) outcome = 'tool_error';
      return result;
    } catch (error) {
      failure = error;
      outcome = outcomeOf(error);
      throw error;
    } finally {
      write(call, outcome, performance.now() - started, result, failure, number);
    }
  };

  function startEvent(call: ToolCall, number: number): CallStartEvent {
    return {
      type: 'call_start',
      session: options.session,
      call: number,
      tool: call.exposedName,
      server: call.server,
      upstreamTool: call.tool,
      args: call.arguments,
    };
  }

  function write(
    call: ToolCall,
    outcome: CallOutcome,
    ms: number,
    result?: CallToolResult,
    failure?: unknown,
    number?: number,
  ): void {
    const client = options.client();
    // Always the same members, in the documented order (an absent one is undefined, which JSON
    // leaves out): one object shape for every call, built without intermediate objects.
    const event: CallEvent = {
      type: 'call',
      session: options.session,
      client,
      tool: call.exposedName,
      server: call.server,
      upstreamTool: call.tool,
      args: call.arguments,
      decision: call.record.decision ?? ALLOWED_BY_DEFAULT,
      pin: call.record.pin,
      outcome,
      ms: Math.round(ms * 1000) / 1000,
      repairs: call.record.repairs,
      resultBytes: result === undefined ? undefined : resultBytes(result),
      error: failure === undefined ? undefined : failure instanceof Error ? failure.message : String(failure),
      structured: config.logResults ? result?.structuredContent : undefined,
      call: number,
    };
    try {
      log.append(event);
    } catch (error) {
      // The call already ran; the next call will be refused (block) or served (continue).
      logger.error(`could not write the audit record of ${call.exposedName}: ${(error as Error).message}`);
    }
  }
}
