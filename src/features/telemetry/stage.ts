import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Attributes, Context, Span, TextMapGetter } from '@opentelemetry/api';
import { PeerRpcError, WardenError } from '../../core/errors.js';
import type { StageName } from '../../core/pipeline/order.js';
import type { CallRecord, RoutedMessage, Stage } from '../../core/pipeline/types.js';
import { derive } from '../../core/pipeline/routedMessage.js';
import type { Params } from '../../core/protocol/jsonRpc.js';
import type { TelemetryRuntime } from './runtime.js';

/** How a side of the gateway is connected, as `network.transport` names it. */
export type NetworkTransport = 'pipe' | 'tcp';

export interface TelemetryStageOptions {
  readonly runtime: TelemetryRuntime;
  /** The protocol version agreed with the message's host, once it initialized. */
  readonly protocolVersion: (message: RoutedMessage) => string | undefined;
  /** How the message's host is connected: `pipe` for stdio, `tcp` for the HTTP listener. */
  readonly hostTransport: (message: RoutedMessage) => NetworkTransport;
  /** How an upstream is connected; undefined for a server the config does not have. */
  readonly upstreamTransport: (server: string) => NetworkTransport | undefined;
  /** The audit trail's redaction, applied to arguments and results put on spans. */
  readonly redact: (value: unknown) => unknown;
}

/**
 * What the outer stage leaves for the inner one and the stage observer. Kept on the request's
 * record, which a copy passed inward (confirmation's approved copy, our own with trace context)
 * shares with the original.
 */
interface CallState {
  /** The host-side span's context (or the sender's, when traces are off). */
  readonly context: Context;
  readonly span: Span | undefined;
  /** Whether the policy's decision was already reported. */
  decided: boolean;
  /** Open while a human is asked to confirm the call. */
  confirmation: Span | undefined;
  /** Counted in the queue depth until it reaches the upstream or ends. */
  queued: boolean;
}

const STATE = Symbol('mcp-warden.telemetry');
type Tracked = CallRecord & { [STATE]?: CallState };

const stateOf = (message: RoutedMessage): CallState | undefined => (message.record as Tracked)[STATE];

/** Reads only string members of `_meta`: a sender may put anything there. */
const META_GETTER: TextMapGetter<Params> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
};

/**
 * The telemetry stages and the stage observer. The outer stage (outermost of all) opens the
 * SERVER span for the side that sent the request, continuing the trace context in its
 * `params._meta`, and records the request's duration; the inner one (innermost, after the
 * concurrency slot is taken) opens the CLIENT span for the side it is sent to and puts our
 * trace context into the `_meta` that goes there. Between them, the observer turns what the
 * other stages decided into span events and a child span: the policy's decision, the wait for a
 * human's confirmation, and the queue.
 */
export function createTelemetryStages(options: TelemetryStageOptions): {
  readonly outer: Stage;
  readonly inner: Stage;
  readonly observe: (stage: StageName | 'forward', message: RoutedMessage) => void;
} {
  return {
    outer: serverSideStage(options),
    inner: clientSideStage(options),
    observe: (stage, message) => observe(options.runtime, stage, message),
  };
}

/** The outer stage: the SERVER span for the side that sent the request, and its duration. */
function serverSideStage(options: TelemetryStageOptions): Stage {
  const { runtime } = options;
  return async function telemetry(message, next) {
    const state = openServerSpan(message, options);
    const { span } = state;
    const started = performance.now();
    let errorType: string | undefined;
    try {
      const outcome = await next(message);
      if ((outcome.result as CallToolResult | undefined)?.isError === true) errorType = 'tool_error';
      if (span !== undefined && runtime.content && message.kind === 'tools/call')
        span.setAttribute('gen_ai.tool.call.result', json(options.redact(outcome.result)));
      return outcome;
    } catch (error) {
      errorType = failed(span, error);
      throw error;
    } finally {
      settle(runtime, message, state);
      runtime.instruments?.serverDuration.record(
        (performance.now() - started) / 1000,
        metricAttributes(message, 'server', options, errorType),
      );
      endSpan(runtime, span, errorType);
    }
  };
}

/**
 * Opens the SERVER span, continuing the trace context in the request's `params._meta`, and
 * leaves the call's state on its record for the inner stage and the observer.
 */
function openServerSpan(message: RoutedMessage, options: TelemetryStageOptions): CallState {
  const { runtime } = options;
  const { api, tracer } = runtime;
  const parent = runtime.propagator.extract(api.ROOT_CONTEXT, message.meta ?? {}, META_GETTER);
  const attributes = spanAttributes(message, 'server', options);
  const span = tracer?.startSpan(
    spanName(message, 'server'),
    { kind: api.SpanKind.SERVER, attributes },
    parent,
  );
  const state: CallState = {
    context: span === undefined ? parent : api.trace.setSpan(parent, span),
    span,
    decided: false,
    confirmation: undefined,
    queued: false,
  };
  (message.record as Tracked)[STATE] = state;
  if (span !== undefined) {
    const { traceId } = span.spanContext();
    if (api.isValidTraceId(traceId)) message.record.traceId = traceId;
    if (runtime.content && message.kind === 'tools/call' && message.arguments !== undefined)
      span.setAttribute('gen_ai.tool.call.arguments', json(options.redact(message.arguments)));
  }
  return state;
}

/**
 * The inner stage: the CLIENT span for the side the request is sent to, with our trace context
 * put into the `_meta` that goes there, and its duration.
 */
function clientSideStage(options: TelemetryStageOptions): Stage {
  const { runtime } = options;
  const { api, tracer } = runtime;
  return async function telemetryUpstream(message, next) {
    const state = stateOf(message);
    if (state === undefined) return next(message);
    leaveQueue(runtime, message, state);
    const span = tracer?.startSpan(
      spanName(message, 'client'),
      { kind: api.SpanKind.CLIENT, attributes: spanAttributes(message, 'client', options) },
      state.context,
    );
    let sent = message;
    if (span !== undefined) {
      // The other side continues our CLIENT span: its traceparent replaces the sender's.
      const carrier: Params = {};
      runtime.propagator.inject(api.trace.setSpan(state.context, span), carrier, api.defaultTextMapSetter);
      sent = derive(message, { meta: { ...message.meta, ...carrier } });
    }
    const started = performance.now();
    let errorType: string | undefined;
    try {
      const outcome = await next(sent);
      if ((outcome.result as CallToolResult | undefined)?.isError === true) errorType = 'tool_error';
      return outcome;
    } catch (error) {
      errorType = failed(span, error);
      throw error;
    } finally {
      runtime.instruments?.clientDuration.record(
        (performance.now() - started) / 1000,
        metricAttributes(message, 'client', options, errorType),
      );
      endSpan(runtime, span, errorType);
    }
  };
}

/** The stage observer: what the other stages decided, as span events, a child span and counts. */
function observe(runtime: TelemetryRuntime, stage: StageName | 'forward', message: RoutedMessage): void {
  const { api, tracer, instruments } = runtime;
  const state = stateOf(message);
  if (state === undefined) return;
  if (state.confirmation !== undefined && stage !== 'confirmation') endConfirmation(message, state);
  if (!state.decided && message.record.decision !== undefined) decided(runtime, message, state);
  // The policy (or flow control, a stage later) asked for a human: the wait starts as the call
  // enters confirmation, whichever stage saw the decision first, and ends at the next stage
  // (approved) or when the request ends (declined, unanswered).
  if (
    stage === 'confirmation' &&
    message.record.decision?.effect === 'confirm' &&
    state.span !== undefined &&
    state.confirmation === undefined
  )
    state.confirmation = tracer?.startSpan(
      'mcp_warden.confirmation',
      { kind: api.SpanKind.INTERNAL },
      state.context,
    );
  if (stage === 'concurrencyLimit' && !state.queued) {
    state.queued = true;
    instruments?.queueDepth.add(1, { 'mcp_warden.server': message.server });
  }
}

function leaveQueue(runtime: TelemetryRuntime, message: RoutedMessage, state: CallState): void {
  if (!state.queued) return;
  state.queued = false;
  runtime.instruments?.queueDepth.add(-1, { 'mcp_warden.server': message.server });
}

/** The policy's decision, as a span event and a count. */
function decided(runtime: TelemetryRuntime, message: RoutedMessage, state: CallState): void {
  state.decided = true;
  const decision = message.record.decision!;
  const attributes: Attributes = {
    'mcp_warden.decision.effect': decision.effect,
    'mcp_warden.decision.rule': decision.rule ?? '(default)',
  };
  state.span?.addEvent('mcp_warden.policy.decision', attributes);
  runtime.instruments?.decisions.add(1, attributes);
}

function endConfirmation(message: RoutedMessage, state: CallState): void {
  const span = state.confirmation!;
  state.confirmation = undefined;
  const decision = message.record.decision;
  if (decision?.how !== undefined) span.setAttribute('mcp_warden.confirmation.how', decision.how);
  span.setAttribute('mcp_warden.confirmation.confirmed', decision?.confirmed === true);
  span.end();
}

/** What is left to report when the request ends, however it ends. */
function settle(runtime: TelemetryRuntime, message: RoutedMessage, state: CallState): void {
  leaveQueue(runtime, message, state);
  if (!state.decided && message.record.decision !== undefined) decided(runtime, message, state);
  if (state.confirmation !== undefined) endConfirmation(message, state);
  const { record } = message;
  if (record.pin !== undefined) state.span?.setAttribute('mcp_warden.pin', record.pin);
  for (const kind of record.repairs) {
    state.span?.addEvent('mcp_warden.repair', { 'mcp_warden.repair.kind': kind });
    runtime.instruments?.repairs.add(1, {
      'mcp_warden.repair.kind': kind,
      'mcp_warden.server': message.server,
    });
  }
}

/** Ends a span, marked failed when the request failed (a tool error included). */
function endSpan(runtime: TelemetryRuntime, span: Span | undefined, errorType: string | undefined): void {
  if (span === undefined) return;
  if (errorType !== undefined) {
    span.setAttribute('error.type', errorType);
    span.setStatus({ code: runtime.api.SpanStatusCode.ERROR });
  }
  span.end();
}

/** Marks a span failed by a thrown error; returns the error's `error.type`. */
function failed(span: Span | undefined, error: unknown): string {
  if (error instanceof PeerRpcError) {
    span?.setAttribute('rpc.response.status_code', String(error.rpcCode));
    return String(error.rpcCode);
  }
  if (error instanceof WardenError) return error.code.toLowerCase();
  return '_OTHER';
}

/**
 * `{mcp.method.name} {target}`: the target is the tool's or prompt's name, as that side names
 * it; a resource's URI is left out of the name (unbounded cardinality) and kept in an attribute.
 */
function spanName(message: RoutedMessage, side: 'server' | 'client'): string {
  if (message.kind !== 'tools/call' && message.kind !== 'prompts/get') return message.kind;
  return `${message.kind} ${nameOn(message, side)}`;
}

/** A tool or prompt as each side names it: the host its exposed name, the upstream its own. */
function nameOn(message: RoutedMessage, side: 'server' | 'client'): string {
  return side === 'server' && message.direction === 'upstream' ? message.exposedName : message.target;
}

/** Whether this side of the request is the host's: the host sends requests to upstreams, and is sent theirs. */
function isHostSide(message: RoutedMessage, side: 'server' | 'client'): boolean {
  return (side === 'server') === (message.direction === 'upstream');
}

/** The attributes both metrics and spans carry: bounded in number of values. */
function commonAttributes(
  message: RoutedMessage,
  side: 'server' | 'client',
  options: TelemetryStageOptions,
): Attributes {
  const attributes: Attributes = { 'mcp.method.name': message.kind, 'mcp_warden.server': message.server };
  if (message.kind === 'tools/call') {
    attributes['gen_ai.tool.name'] = nameOn(message, side);
    attributes['gen_ai.operation.name'] = 'execute_tool';
  } else if (message.kind === 'prompts/get') attributes['gen_ai.prompt.name'] = nameOn(message, side);
  if (isHostSide(message, side)) {
    attributes['network.transport'] = options.hostTransport(message);
    // The version agreed with the host; each upstream may have agreed another, not known here.
    const version = options.protocolVersion(message);
    if (version !== undefined) attributes['mcp.protocol.version'] = version;
  } else {
    const transport = options.upstreamTransport(message.server);
    if (transport !== undefined) attributes['network.transport'] = transport;
  }
  return attributes;
}

function spanAttributes(
  message: RoutedMessage,
  side: 'server' | 'client',
  options: TelemetryStageOptions,
): Attributes {
  const attributes = commonAttributes(message, side, options);
  // A URI is the host's text and may carry a credential (a token in its query, a password in
  // its authority): it leaves the machine only as the audit record keeps it.
  if (message.kind.startsWith('resources/') && message.target !== '')
    attributes['mcp.resource.uri'] = String(options.redact(message.target));
  // Our own id towards the other side is the peer's to choose; the sender's is known here.
  if (side === 'server' && message.requestId !== undefined)
    attributes['jsonrpc.request.id'] = String(message.requestId);
  return attributes;
}

function metricAttributes(
  message: RoutedMessage,
  side: 'server' | 'client',
  options: TelemetryStageOptions,
  errorType: string | undefined,
): Attributes {
  const attributes = commonAttributes(message, side, options);
  if (errorType !== undefined) attributes['error.type'] = errorType;
  return attributes;
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}
