/**
 * The telemetry stages and observer against the real OpenTelemetry SDK, recording into memory:
 * what the binary tests cannot easily provoke (a JSON-RPC error answer, a request an upstream
 * makes of the host, repairs, a queue, a restart) and the config section's validation.
 */
import * as api from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { MeterProvider, MetricReader, type DataPoint, type MetricData } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/issues.js';
import { loadConfig } from '../../src/config/load.js';
import { PeerRpcError } from '../../src/core/errors.js';
import type { Feature } from '../../src/core/routing/feature.js';
import { compose } from '../../src/core/pipeline/compose.js';
import type { Next, RoutedMessage } from '../../src/core/pipeline/types.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { pipelineStages } from '../../src/gateway/features.js';
import { createTelemetry } from '../../src/features/telemetry/feature.js';
import { createInstruments } from '../../src/features/telemetry/instruments.js';
import { protocolFor } from '../../src/features/telemetry/sdk.js';

class Reader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

function setup(extra: Feature[] = []) {
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
    't',
  );
  const reader = new Reader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('t');
  const telemetry = createTelemetry({
    runtime: {
      api,
      tracer,
      propagator: new CompositePropagator({
        propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
      }),
      instruments: createInstruments(meter),
      content: false,
      shutdown: () => Promise.resolve(),
    },
    protocolVersion: () => '2025-06-18',
    hostTransport: () => 'pipe',
    upstreamTransport: (server) => (server === 'web' ? 'tcp' : 'pipe'),
    redact: (value) => value,
  });
  const sent: RoutedMessage[] = [];
  const pipeline = (terminal: Next) =>
    compose(pipelineStages([...telemetry, ...extra]), (message) => {
      sent.push(message);
      return terminal(message);
    });
  const metrics = async (): Promise<Map<string, MetricData>> => {
    const { resourceMetrics } = await reader.collect();
    return new Map(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]));
  };
  return { exporter, pipeline, sent, metrics, lifecycle: telemetry[0]!.onUpstreamLifecycle! };
}

function message(overrides: Partial<RoutedMessage> = {}): RoutedMessage {
  return {
    kind: 'tools/call',
    direction: 'upstream',
    server: 'up',
    target: 'read',
    exposedName: 'up__read',
    definition: undefined,
    arguments: {},
    params: undefined,
    meta: undefined,
    requestId: 7,
    signal: new Cancellation(),
    onProgress: undefined,
    record: { repairs: [] },
    ...overrides,
  };
}

const ok = () => Promise.resolve(Outcome.of({ content: [] }));
const points = (metric: MetricData | undefined) => (metric?.dataPoints ?? []) as DataPoint<unknown>[];

describe('telemetry stages', () => {
  it('an error answer from the other side: its code as error.type and rpc.response.status_code', async () => {
    const { exporter, pipeline } = setup();
    await expect(
      pipeline(() => Promise.reject(new PeerRpcError(-32000, 'upstream says no')))(message()),
    ).rejects.toThrow('upstream says no');
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual(['tools/call read', 'tools/call up__read']);
    for (const span of spans) {
      expect(span.attributes['error.type']).toBe('-32000');
      expect(span.attributes['rpc.response.status_code']).toBe('-32000');
      expect(span.status.code).toBe(api.SpanStatusCode.ERROR);
    }
  });

  it('a request an upstream makes of the host: SERVER on the upstream side, CLIENT on the host side', async () => {
    const { exporter, pipeline, sent } = setup();
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await pipeline(ok)(
      message({
        kind: 'sampling/createMessage',
        direction: 'host',
        server: 'web',
        target: '',
        exposedName: '',
        meta: { traceparent: parent },
      }),
    );
    const [client, server] = exporter.getFinishedSpans();
    expect(server!.name).toBe('sampling/createMessage');
    expect(server!.kind).toBe(api.SpanKind.SERVER);
    expect(server!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(server!.attributes['network.transport']).toBe('tcp');
    expect(server!.attributes).not.toHaveProperty('mcp.protocol.version');
    expect(client!.kind).toBe(api.SpanKind.CLIENT);
    expect(client!.attributes['network.transport']).toBe('pipe');
    expect(client!.attributes['mcp.protocol.version']).toBe('2025-06-18');
    expect(sent[0]!.meta?.traceparent).toBe(
      `00-0af7651916cd43dd8448eb211c80319c-${client!.spanContext().spanId}-01`,
    );
  });

  it('repairs are events and counts; the queue depth returns to zero; restarts are counted', async () => {
    const repair: Feature = {
      stage: {
        name: 'resultRepair',
        run: async (m, next) => {
          const outcome = await next(m);
          m.record.repairs.push('textForStructured');
          return outcome;
        },
      },
    };
    const queue: Feature = { stage: { name: 'concurrencyLimit', run: (m, next) => next(m) } };
    const { exporter, pipeline, metrics, lifecycle } = setup([repair, queue]);
    await pipeline(ok)(message());
    lifecycle({ type: 'upstream_restart', server: 'up', attempt: 1, delayMs: 50 });
    const server = exporter.getFinishedSpans().find((s) => s.kind === api.SpanKind.SERVER)!;
    expect(server.events.map((e) => [e.name, e.attributes])).toEqual([
      ['mcp_warden.repair', { 'mcp_warden.repair.kind': 'textForStructured' }],
    ]);
    const m = await metrics();
    expect(points(m.get('mcp_warden.repairs'))[0]?.value).toBe(1);
    expect(points(m.get('mcp_warden.queue.depth')).map((p) => p.value)).toEqual([0]);
    expect(points(m.get('mcp_warden.upstream.restarts'))[0]?.attributes).toEqual({
      'mcp_warden.server': 'up',
    });
    expect(m.get('mcp.server.operation.duration')?.descriptor.unit).toBe('s');
  });
});

const SERVERS = 'servers:\n  a: { command: node }\n';

describe('the telemetry config section', () => {
  function load(text: string) {
    const dir = mkdtempSync(path.join(tmpdir(), 'warden-telemetry-'));
    const file = path.join(dir, 'proxy.config.yaml');
    writeFileSync(file, text);
    return loadConfig(file, { env: {} });
  }

  it('is off unless asked, and each signal is switched by name', async () => {
    expect((await load(SERVERS)).config.telemetry).toBeUndefined();
    expect((await load(`telemetry: { traces: true }\n${SERVERS}`)).config.telemetry).toEqual({
      traces: true,
      metrics: false,
      content: false,
      metricsIntervalMs: 60_000,
    });
  });

  it('names the file, line and key of a bad value', async () => {
    const error = await load(
      `${SERVERS}telemetry:\n  traces: yes please\n  metricsInterval: 10\n  logs: true\n`,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as Error).message;
    expect(text).toMatch(/proxy\.config\.yaml:4:\d+: telemetry\.traces: /);
    expect(text).toMatch(/proxy\.config\.yaml:5:\d+: telemetry\.metricsInterval: /);
    expect(text).toMatch(/proxy\.config\.yaml:6:\d+: telemetry\.logs: unknown key/);
  });

  it('refuses a metrics interval under 100ms', async () => {
    await expect(load(`${SERVERS}telemetry:\n  metrics: true\n  metricsInterval: 0\n`)).rejects.toThrow(
      /proxy\.config\.yaml:5:\d+: telemetry\.metricsInterval: must be at least 100ms/,
    );
  });

  it('takes the protocol per signal, then the general one, then http/protobuf; refuses grpc', () => {
    expect(protocolFor('TRACES', {})).toBe('http/protobuf');
    expect(protocolFor('TRACES', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(
      protocolFor('METRICS', {
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      }),
    ).toBe('http/protobuf');
    expect(() => protocolFor('TRACES', { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toThrow(
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc is not supported',
    );
    expect(() => protocolFor('TRACES', { OTEL_EXPORTER_OTLP_PROTOCOL: 'carrier-pigeon' })).toThrow(
      'is not an OTLP protocol',
    );
  });
});
