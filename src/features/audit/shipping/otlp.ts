import type { OtlpSinkConfig } from '../../../config/types.js';
import { keyFields, payloadOf, severityOf, type Severity, type ShippedRecord } from './format.js';
import type { SinkTransport } from './transport.js';
import { importOptional, type OptionalNeed } from '../../../lib/optionalPackage.js';

/** What an `otlp` sink loads: optional peer dependencies, installed by whoever configures one. */
export const OTLP_SINK_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-logs',
  '@opentelemetry/exporter-logs-otlp-http',
];

/** What the `otlp` sink `name` needs installed. */
export function otlpSinkNeeds(name: string): OptionalNeed {
  return { feature: `the audit sink "${name}" (type: otlp)`, packages: OTLP_SINK_PACKAGES };
}

/** OpenTelemetry severity numbers (logs data model): INFO, INFO4 (notice), WARN, ERROR. */
const OTEL_SEVERITY: Record<Severity, { number: number; text: string }> = {
  info: { number: 9, text: 'INFO' },
  notice: { number: 12, text: 'INFO4' },
  warning: { number: 13, text: 'WARN' },
  error: { number: 17, text: 'ERROR' },
};

/**
 * OTLP logs over HTTP through the OpenTelemetry logs SDK, loaded only when an `otlp` sink is
 * configured. Each record becomes a log record (body: the payload; attributes: the key fields
 * under `mcp_warden.*`). The SDK's batching processor would hide whether a batch arrived, and the
 * spool must know before it lets go of records: so records are emitted into the SDK's in-memory
 * exporter and the OTLP exporter is called with each batch, its result deciding.
 */
export async function createOtlpTransport(
  config: OtlpSinkConfig,
  product: { readonly version: string; readonly host: string },
): Promise<SinkTransport> {
  const [logsSdk, { OTLPLogExporter }, { resourceFromAttributes }] = await importOptional(
    () =>
      Promise.all([
        import('@opentelemetry/sdk-logs'),
        import('@opentelemetry/exporter-logs-otlp-http'),
        import('@opentelemetry/resources'),
      ]),
    otlpSinkNeeds(config.name),
  );
  const memory = new logsSdk.InMemoryLogRecordExporter();
  const provider = new logsSdk.LoggerProvider({
    resource: resourceFromAttributes({
      'service.name': 'mcp-warden',
      'service.version': product.version,
      'host.name': product.host,
    }),
    processors: [new logsSdk.SimpleLogRecordProcessor({ exporter: memory })],
  });
  const logger = provider.getLogger('mcp-warden.audit', product.version);
  const exporter = new OTLPLogExporter({ url: config.endpoint, headers: { ...config.headers } });
  return {
    async send(records: readonly ShippedRecord[]): Promise<void> {
      memory.reset();
      for (const record of records) {
        const severity = OTEL_SEVERITY[severityOf(record)];
        const ts = typeof record.fields['ts'] === 'string' ? new Date(record.fields['ts']) : new Date();
        const attributes: Record<string, string> = {};
        for (const [name, value] of Object.entries(keyFields(record)))
          attributes[`mcp_warden.${name}`] = value;
        logger.emit({
          timestamp: ts,
          severityNumber: severity.number,
          severityText: severity.text,
          body: payloadOf(record, config.format, product),
          attributes,
        });
      }
      const batch = memory.getFinishedLogRecords();
      memory.reset();
      await new Promise<void>((resolve, reject) => {
        exporter.export([...batch], (result) => {
          if (result.code === 0) resolve();
          else reject(result.error ?? new Error('the OTLP endpoint did not take the records'));
        });
      });
    },
    close(): void {
      void exporter.shutdown().catch(() => {});
      void provider.shutdown().catch(() => {});
    },
  };
}
