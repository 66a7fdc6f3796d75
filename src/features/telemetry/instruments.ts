import type { Meter } from '@opentelemetry/api';
import type { Instruments } from './runtime.js';

/**
 * Bucket bounds (seconds) the MCP semantic conventions advise for operation durations: fine
 * below a second, where most calls end, and on to five minutes for slow tools.
 */
const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];

/** Writing a batch of audit records takes microseconds to milliseconds (more with fsync). */
const AUDIT_WRITE_BUCKETS = [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1];

/** Every instrument the telemetry feature records into, under the names the README lists. */
export function createInstruments(meter: Meter): Instruments {
  return {
    serverDuration: meter.createHistogram('mcp.server.operation.duration', {
      description: 'Duration of an MCP request as the side that received it saw it',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    clientDuration: meter.createHistogram('mcp.client.operation.duration', {
      description: 'Duration of an MCP request as the side that sent it saw it',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    decisions: meter.createCounter('mcp_warden.policy.decisions', {
      description: 'Policy decisions, by effect and deciding rule',
      unit: '{decision}',
    }),
    repairs: meter.createCounter('mcp_warden.repairs', {
      description: 'Result repairs applied, by kind',
      unit: '{repair}',
    }),
    restarts: meter.createCounter('mcp_warden.upstream.restarts', {
      description: 'Upstream server restarts, by server',
      unit: '{restart}',
    }),
    queueDepth: meter.createUpDownCounter('mcp_warden.queue.depth', {
      description: 'Requests waiting for a concurrency slot, by server',
      unit: '{request}',
    }),
    auditWrite: meter.createHistogram('mcp_warden.audit.write.duration', {
      description: 'Duration of one write of queued audit records',
      unit: 's',
      advice: { explicitBucketBoundaries: AUDIT_WRITE_BUCKETS },
    }),
  };
}
