import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AuditLog } from './auditWriter.js';
import type {
  CallEvent,
  CallOutcome,
  CallStartEvent,
  ClientInfo,
  Decision,
  RequestEvent,
} from '../../core/events.js';
import type { AuditConfig } from '../../config/types.js';
import { PeerRpcError, WardenError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { RoutedMessage, Stage } from '../../core/pipeline/types.js';
import type { Outcome } from '../../core/rpc/outcome.js';
import type { Principal } from '../../core/principal.js';

export interface AuditStageOptions {
  readonly log: AuditLog;
  readonly config: AuditConfig;
  /** This gateway process's session id, shared by all its records. */
  readonly session: string;
  /** The host the call came from (or went to), as it introduced itself in `initialize`. */
  readonly client: (call: RoutedMessage) => ClientInfo | undefined;
  /** Who a call is recorded for when its message names nobody (see `RoutedMessage.principal`). */
  readonly principal?: Principal;
  readonly logger: Logger;
  /**
   * The `onFailure` in force, asked per call; default `config.onFailure`. Managed settings may
   * tighten it while serving, and the next call is then written ahead.
   */
  readonly onFailure?: () => 'block' | 'continue';
}

/** The decision recorded when no policy stage ran (no policies configured). */
const ALLOWED_BY_DEFAULT = Object.freeze({ effect: 'allow' as const, rule: null });

/** The decision recorded for a name no server serves: refused before any policy was asked. */
const UNSERVED = Object.freeze({ effect: 'deny' as const, rule: null, reason: 'no server serves this name' });

function outcomeOf(error: unknown): CallOutcome {
  if (error instanceof PeerRpcError) return 'protocol_error';
  if (!(error instanceof WardenError)) return 'internal_error';
  switch (error.code) {
    case 'DENIED':
    case 'TOOL_CHANGED':
      return 'denied';
    case 'INVALID_ARGUMENTS':
      return 'invalid_arguments';
    case 'CALL_TIMEOUT':
      return 'timeout';
    case 'CALL_CANCELLED':
      return 'cancelled';
    case 'QUEUE_FULL':
      return 'queue_full';
    case 'INVALID_PARAMS':
      return 'protocol_error';
    case 'UNKNOWN_TOOL':
    case 'UNKNOWN_PROMPT':
    case 'RESOURCE_NOT_FOUND':
      return 'unknown_name';
    case 'UPSTREAM_FAILED':
    case 'UPSTREAM_UNAVAILABLE':
      return 'upstream_failure';
    default:
      return 'internal_error';
  }
}

/** Bytes of the result as the receiver gets it (the upstream's own text when forwarded as is). */
function resultBytes(outcome: Outcome): number {
  const raw = outcome.raw;
  if (raw?.bytes !== undefined) return raw.bytes.length;
  return Buffer.byteLength(raw?.text ?? JSON.stringify(outcome.result));
}

/**
 * Outermost stage: sees every routed request in both directions and its outcome, denials and
 * timeouts included, and the whole duration. A tool call is a `call` record; any other kind a
 * `request` record. Records are appended synchronously (one write per record), so a
 * record exists before the host gets the answer and nothing sits in a buffer at exit
 * (loggers' buffers lose lines). With `onFailure: block`, a `call_start` record is written before
 * the call goes on, and a call whose `call_start` cannot be written is refused: no unrecorded call
 * ever reaches an upstream, even when the disk fills during the call before.
 */
export function createAuditStage(options: AuditStageOptions): Stage {
  const { log, config } = options;
  const mode = options.onFailure ?? (() => config.onFailure);
  let calls = 0;
  return async function audit(call, next) {
    // Numbered only when a call_start is written: the number pairs it with its record.
    const number = mode() === 'block' ? ++calls : undefined;
    if (number !== undefined) await log.writeAhead(startEvent(options, call, number));
    const started = performance.now();
    let outcome: CallOutcome = 'ok';
    let result: Outcome | undefined;
    let failure: unknown;
    try {
      result = await next(call);
      if ((result.result as CallToolResult).isError === true) outcome = 'tool_error';
      return result;
    } catch (error) {
      failure = error;
      outcome = outcomeOf(error);
      throw error;
    } finally {
      write(options, call, outcome, performance.now() - started, result, failure, number);
    }
  };
}

/*
 * The records are built by module functions handed the stage's options and the call's facts as
 * parameters, not an object of them: the stage runs on every call, and this adds no allocation.
 */

function startEvent(options: AuditStageOptions, call: RoutedMessage, number: number): CallStartEvent {
  // A literal without a spread: V8 builds one with a spread in it member by member in the
  // runtime. `method` is undefined for a tool call, which JSON leaves out of the record.
  return {
    type: 'call_start',
    session: options.session,
    principal: call.principal ?? options.principal,
    call: number,
    method: call.kind === 'tools/call' ? undefined : call.kind,
    tool: call.exposedName,
    server: call.server,
    upstreamTool: call.target,
    args: call.arguments,
  };
}

function write(
  options: AuditStageOptions,
  call: RoutedMessage,
  outcome: CallOutcome,
  ms: number,
  result?: Outcome,
  failure?: unknown,
  number?: number,
): void {
  const client = options.client(call);
  if (call.kind !== 'tools/call')
    return writeRequest(options, call, client, outcome, ms, result, failure, number);
  // Always the same members, in the documented order (an absent one is undefined, which JSON
  // leaves out): one object shape for every call, built without intermediate objects.
  const event: CallEvent = {
    type: 'call',
    session: options.session,
    principal: call.principal ?? options.principal,
    client,
    hostEra: eraOf(call, call.hostEra),
    upstreamEra: eraOf(call, call.upstreamEra),
    tool: call.exposedName,
    server: call.server,
    upstreamTool: call.target,
    args: call.arguments,
    decision: decisionOf(call, outcome),
    pin: call.record.pin,
    outcome,
    ms: Math.round(ms * 1000) / 1000,
    repairs: call.record.repairs,
    resultBytes: result === undefined ? undefined : resultBytes(result),
    error: failure === undefined ? undefined : failure instanceof Error ? failure.message : String(failure),
    structured: options.config.logResults
      ? (result?.result as CallToolResult | undefined)?.structuredContent
      : undefined,
    call: number,
    trace: call.record.traceId,
    flow: call.record.flow,
    continuedVia: call.record.continuedVia,
    takenOverBy: call.takenOverBy,
    leaseWaitMs: call.record.leaseWaitMs,
  };
  appendOrLog(options, event, call.exposedName);
}

function writeRequest(
  options: AuditStageOptions,
  call: RoutedMessage,
  client: ClientInfo | undefined,
  outcome: CallOutcome,
  ms: number,
  result?: Outcome,
  failure?: unknown,
  number?: number,
): void {
  const event: RequestEvent = {
    type: 'request',
    session: options.session,
    principal: call.principal ?? options.principal,
    client,
    hostEra: eraOf(call, call.hostEra),
    upstreamEra: eraOf(call, call.upstreamEra),
    method: call.kind,
    direction: call.direction === 'host' ? 'to_host' : 'to_upstream',
    server: call.server,
    target: call.target === '' ? undefined : call.target,
    args: call.arguments,
    decision: decisionOf(call, outcome),
    outcome,
    ms: Math.round(ms * 1000) / 1000,
    resultBytes: result === undefined ? undefined : resultBytes(result),
    repairs: call.record.repairs.length > 0 ? call.record.repairs : undefined,
    error: failure === undefined ? undefined : failure instanceof Error ? failure.message : String(failure),
    call: number,
    trace: call.record.traceId,
    flow: call.record.flow,
    continuedVia: call.record.continuedVia,
    leaseWaitMs: call.record.leaseWaitMs,
    origin: call.record.origin,
  };
  appendOrLog(options, event, `${call.kind} for ${call.server}`);
}

/**
 * Appends the record that ends a request. The request already ran, so a failed write is logged
 * and not thrown: the next request is refused (block) or served (continue) by the writer's health.
 */
function appendOrLog(options: AuditStageOptions, event: CallEvent | RequestEvent, what: string): void {
  try {
    options.log.append(event);
  } catch (error) {
    options.logger.error(`could not write the audit record of ${what}: ${(error as Error).message}`);
  }
}

function decisionOf(call: RoutedMessage, outcome: CallOutcome): Decision {
  return call.record.decision ?? (outcome === 'unknown_name' ? UNSERVED : ALLOWED_BY_DEFAULT);
}

/**
 * One side's era for the record: named when either side speaks the stateless revision, left out
 * (undefined, which JSON drops) when both speak a handshake one.
 */
function eraOf(call: RoutedMessage, era: 'legacy' | 'modern' | undefined): 'legacy' | 'modern' | undefined {
  if (call.hostEra !== 'modern' && call.upstreamEra !== 'modern') return undefined;
  return era ?? 'legacy';
}
