import type { AuditConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import { openAuditLog, type AuditLog } from './auditWriter.js';
import type { Redactor } from './redact.js';

/**
 * Opens the gateway's audit trail as `audit:` describes it: the file (or none: `file: false`),
 * signed checkpoints when a key is configured, and the network sinks (each loaded only when
 * configured). A key that
 * cannot be used stops the gateway with the reason: a trail that was meant to be signed and is
 * not would look the same as one that is until someone checks.
 */
export async function openAuditTrail(
  config: AuditConfig,
  options: {
    readonly redactor: Redactor;
    readonly logger: Logger;
    readonly session: string;
    /** mcp-warden's version, named in what the sinks send. */
    readonly version: string;
    /** Told after each write, with how long it took (telemetry's audit-write metric). */
    readonly onWrite?: (write: { readonly ms: number }) => void;
    /**
     * Sinks may be added while serving (managed settings, which an edit may change): the
     * shipper is set up even when `config` has no sinks, so `retune` can open some.
     */
    readonly sinksMayChange?: boolean;
  },
): Promise<AuditTrail> {
  const { logger } = options;
  let checkpoints;
  if (config.checkpoints !== undefined) {
    const { loadCheckpointSigner } = await import('./checkpoint.js');
    checkpoints = {
      signer: loadCheckpointSigner(config.checkpoints.key),
      intervalMs: config.checkpoints.intervalMs,
    };
  }
  const shipper =
    config.sinks === undefined && options.sinksMayChange !== true
      ? undefined
      : await (
          await import('./shipping/shipper.js')
        ).openShipper(config, logger, { version: options.version });
  // Without a local file the sinks' spools are the trail: a write counts once a spool kept it.
  const output =
    config.file === undefined && shipper !== undefined
      ? {
          write: (lines: string) => {
            if (shipper.accept(lines) === 0)
              throw Object.assign(new Error('no audit sink could keep the records in its spool'), {
                code: 'NO_SINK',
              });
          },
          ...(shipper.lastLine() !== undefined && { lastLine: shipper.lastLine() }),
        }
      : undefined;
  const log = await openAuditLog({
    file: config.file ?? config.spoolDir,
    maxBytes: config.maxBytes,
    maxFiles: config.maxFiles,
    onFailure: config.onFailure,
    fsync: config.fsync,
    // One write per turn of the event loop, flushed before each write to the host.
    writes: 'per-tick',
    redactor: options.redactor,
    session: options.session,
    ...(checkpoints && { checkpoints }),
    ...(options.onWrite && { onWrite: options.onWrite }),
    ...(output !== undefined
      ? { output }
      : shipper && { onWritten: (lines: string) => void shipper.accept(lines) }),
    onStatus: (status) => {
      if (status.kind === 'recovered')
        logger.warn(`the audit log can be written again; ${status.lost} records were lost meanwhile`);
      else logger.error(`AUDIT: ${status.error.message}`);
    },
  });
  const retune = async (next: AuditConfig): Promise<void> => {
    log.retune({ onFailure: next.onFailure, fsync: next.fsync });
    await shipper?.retune(next);
  };
  if (shipper === undefined) return { log, drain: () => Promise.resolve(), retune };
  return { log: shipper.wrap(log), drain: (ms) => shipper.drain(ms), retune };
}

/** An open audit trail: the log the gateway writes to, and how it is stopped or changed. */
export interface AuditTrail {
  readonly log: AuditLog;
  /** Sends what the sinks still hold for up to `ms`, then closes them. */
  readonly drain: (ms: number) => Promise<void>;
  /**
   * Follows changed `audit` settings while serving (a managed edit): `onFailure` and `fsync`
   * from the next record on, and sinks opened or closed. The file and checkpoints stay as opened.
   */
  readonly retune: (config: AuditConfig) => Promise<void>;
}
