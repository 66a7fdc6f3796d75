import type { MeterProvider, PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { BasicTracerProvider, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TelemetryConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import { createInstruments } from './instruments.js';
import type { TelemetryRuntime } from './runtime.js';
import { importOptional, type OptionalNeed } from '../../lib/optionalPackage.js';

/**
 * Every OpenTelemetry package telemetry may load. They are optional peer dependencies: each is
 * imported here, when the config turns a signal on, and a missing one stops start-up with the
 * command that installs them.
 */
export const TELEMETRY_NEEDS: OptionalNeed = {
  feature: 'telemetry',
  packages: [
    '@opentelemetry/api',
    '@opentelemetry/core',
    '@opentelemetry/resources',
    '@opentelemetry/sdk-trace-base',
    '@opentelemetry/sdk-metrics',
    '@opentelemetry/exporter-trace-otlp-proto',
    '@opentelemetry/exporter-trace-otlp-http',
    '@opentelemetry/exporter-metrics-otlp-proto',
    '@opentelemetry/exporter-metrics-otlp-http',
  ],
};

function otel<T>(load: () => Promise<T>): Promise<T> {
  return importOptional(load, TELEMETRY_NEEDS);
}

/** The OTLP encodings over HTTP this gateway can send, as OTEL_EXPORTER_OTLP_PROTOCOL names them. */
export type OtlpProtocol = 'http/json' | 'http/protobuf';

/** A setting in the OTEL_* environment this gateway cannot honour; start-up stops and says which. */
export class TelemetrySetupError extends Error {}

export interface StartTelemetryOptions {
  readonly config: TelemetryConfig;
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  /** The gateway's version, for the `service.version` resource attribute. */
  readonly version: string;
}

/**
 * Starts the OpenTelemetry SDK for the signals the config turns on, configured the standard way:
 * the OTLP exporters read OTEL_EXPORTER_OTLP_ENDPOINT (and the per-signal, header, timeout and
 * compression variables) themselves; the tracer provider reads OTEL_TRACES_SAMPLER; the resource
 * takes OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. OTEL_EXPORTER_OTLP_PROTOCOL (or the
 * per-signal one) chooses between JSON and protobuf over HTTP; gRPC is refused with a message,
 * since only the HTTP exporters are shipped. OTEL_SDK_DISABLED=true turns every signal off.
 *
 * No global provider is registered: the feature is handed its tracer and meter, so nothing
 * else in the process (an upstream's library, a test) can change or see them.
 */
export async function startTelemetry(options: StartTelemetryOptions): Promise<TelemetryRuntime> {
  const { config, env, logger } = options;
  const [api, { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator }, resources] =
    await otel(() =>
      Promise.all([
        import('@opentelemetry/api'),
        import('@opentelemetry/core'),
        import('@opentelemetry/resources'),
      ]),
    );
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  const traces = config.traces && !disabled;
  const metrics = config.metrics && !disabled;
  // The SDK's own complaints (an unreachable collector, a bad sampler name) go to our log, each
  // message at most once a minute: a collector that is down fails every export until it is back.
  const warn = onceAMinute((message) => logger.warn(`OpenTelemetry: ${message}`));
  api.diag.setLogger(
    { error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} },
    api.DiagLogLevel.WARN,
  );
  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({ 'service.name': 'mcp-warden', 'service.version': options.version }),
    )
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));

  let tracerProvider: BasicTracerProvider | undefined;
  if (traces) {
    const exporter = await traceExporter(protocolFor('TRACES', env));
    const { BasicTracerProvider, BatchSpanProcessor } = await otel(
      () => import('@opentelemetry/sdk-trace-base'),
    );
    tracerProvider = new BasicTracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
  }
  let meterProvider: MeterProvider | undefined;
  if (metrics) {
    const exporter = await metricExporter(protocolFor('METRICS', env));
    const { MeterProvider, PeriodicExportingMetricReader } = await otel(
      () => import('@opentelemetry/sdk-metrics'),
    );
    meterProvider = new MeterProvider({
      resource,
      readers: [
        new PeriodicExportingMetricReader({
          exporter,
          exportIntervalMillis: config.metricsIntervalMs,
          exportTimeoutMillis: Math.min(config.metricsIntervalMs, 30_000),
        }),
      ],
    });
  }
  const scope = { name: 'mcp-warden', version: options.version };
  return {
    api,
    tracer: tracerProvider?.getTracer(scope.name, scope.version),
    instruments: meterProvider && createInstruments(meterProvider.getMeter(scope.name, scope.version)),
    propagator: new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    }),
    content: config.content,
    async shutdown() {
      await Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
    },
  };
}

/** How many distinct messages `onceAMinute` remembers; beyond that it starts afresh. */
const REMEMBERED_MESSAGES = 100;

/** Passes a message on unless the same text was passed on less than a minute ago. */
function onceAMinute(say: (message: string) => void): (message: string) => void {
  const said = new Map<string, number>();
  return (message) => {
    const now = Date.now();
    const last = said.get(message);
    if (last !== undefined && now - last < 60_000) return;
    if (said.size >= REMEMBERED_MESSAGES) said.clear();
    said.set(message, now);
    say(message);
  };
}

/** The protocol for one signal: its own variable, else the general one, else the spec's default. */
export function protocolFor(signal: 'TRACES' | 'METRICS', env: NodeJS.ProcessEnv): OtlpProtocol {
  const name = `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`;
  const own = env[name]?.trim();
  const [variable, value] =
    own !== undefined && own !== ''
      ? [name, own]
      : ['OTEL_EXPORTER_OTLP_PROTOCOL', env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf'];
  if (value === 'http/json' || value === 'http/protobuf') return value;
  throw new TelemetrySetupError(
    value === 'grpc'
      ? `${variable}=grpc is not supported: mcp-warden exports OTLP over HTTP; use http/protobuf or http/json (a collector's port 4318)`
      : `${variable}=${value} is not an OTLP protocol; use http/protobuf or http/json`,
  );
}

/** Only the chosen encoding's exporter is loaded. */
async function traceExporter(protocol: OtlpProtocol): Promise<SpanExporter> {
  if (protocol === 'http/json') {
    const { OTLPTraceExporter } = await otel(() => import('@opentelemetry/exporter-trace-otlp-http'));
    return new OTLPTraceExporter();
  }
  const { OTLPTraceExporter } = await otel(() => import('@opentelemetry/exporter-trace-otlp-proto'));
  return new OTLPTraceExporter();
}

async function metricExporter(protocol: OtlpProtocol): Promise<PushMetricExporter> {
  if (protocol === 'http/json') {
    const { OTLPMetricExporter } = await otel(() => import('@opentelemetry/exporter-metrics-otlp-http'));
    return new OTLPMetricExporter();
  }
  const { OTLPMetricExporter } = await otel(() => import('@opentelemetry/exporter-metrics-otlp-proto'));
  return new OTLPMetricExporter();
}
