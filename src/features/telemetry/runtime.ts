import type * as Api from '@opentelemetry/api';

/**
 * What a started OpenTelemetry SDK gives the telemetry feature. Only types are imported here:
 * the SDK itself is loaded by `sdk.ts`, which the command line imports only when the config
 * has a `telemetry:` section, so a gateway without telemetry never loads a line of it.
 */
export interface TelemetryRuntime {
  /** `@opentelemetry/api`, handed over so that no module loaded at start-up imports it. */
  readonly api: typeof Api;
  /** Present when traces are on. */
  readonly tracer: Api.Tracer | undefined;
  /** W3C trace context and baggage, as carried in `params._meta`. */
  readonly propagator: Api.TextMapPropagator;
  /** Present when metrics are on. */
  readonly instruments: Instruments | undefined;
  /** Whether tool arguments and results go on spans. */
  readonly content: boolean;
  /** Exports what is buffered and stops; bounded by the exporters' own timeouts. */
  shutdown(): Promise<void>;
}

/** The metric instruments, made once when the SDK starts. */
export interface Instruments {
  /** Host-side (or, for requests an upstream makes, upstream-side) request duration, seconds. */
  readonly serverDuration: Api.Histogram;
  /** Duration of the request as sent on to the other side, seconds. */
  readonly clientDuration: Api.Histogram;
  /** Policy decisions by effect and rule. */
  readonly decisions: Api.Counter;
  /** Result repairs by kind. */
  readonly repairs: Api.Counter;
  /** Upstream restarts by server. */
  readonly restarts: Api.Counter;
  /** Requests waiting for a concurrency slot, by server. */
  readonly queueDepth: Api.UpDownCounter;
  /** How long one write of audit records took, seconds. */
  readonly auditWrite: Api.Histogram;
}
