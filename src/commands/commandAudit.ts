/**
 * The audit trail a one-off command writes its records to (an accepted pin, a sign-in): the
 * config's own, signed like the gateway's records so a verify with the key does not find them
 * unsigned, and never refusing (the command has already done what it records).
 */
import type { AuditConfig, WardenConfig } from '../config/types.js';
import type { AuditLog } from '../features/audit/auditWriter.js';
import type { Redactor } from '../features/audit/redact.js';
import { CommandError, version } from './support.js';

export interface CommandAudit {
  readonly log: AuditLog;
  /** This command's run: its records carry it as their session. */
  readonly session: string;
  /** Flushes and closes the trail; resolves with why a record could not be written, if one could not. */
  close(): Promise<Error | undefined>;
}

export async function openCommandAudit(
  config: WardenConfig,
  audit: AuditConfig,
  redactor: Redactor,
): Promise<CommandAudit> {
  const [{ openAuditLog }, { randomUUID }] = await Promise.all([
    import('../features/audit/auditWriter.js'),
    import('node:crypto'),
  ]);
  const session = randomUUID();
  const signing = audit.checkpoints;
  let checkpoints;
  try {
    checkpoints = signing && {
      signer: (await import('../features/audit/checkpoint.js')).loadCheckpointSigner(signing.key),
      intervalMs: signing.intervalMs,
    };
  } catch (error) {
    throw new CommandError(
      `invalid config:\n${config.file}: audit.checkpoints.key: ${(error as Error).message}`,
    );
  }
  let drain = (_ms: number): Promise<void> => Promise.resolve();
  let log;
  if (audit.file === undefined) {
    // No local file: the records go where the gateway's go, the sinks (through their spools).
    const [{ openAuditTrail }, { createLogger }] = await Promise.all([
      import('../features/audit/openTrail.js'),
      import('../core/logger.js'),
    ]);
    const trail = await openAuditTrail(
      { ...audit, onFailure: 'continue' },
      { redactor, logger: createLogger({ level: 'warn' }), session, version: version() },
    );
    ({ log, drain } = trail);
  } else {
    log = await openAuditLog({
      file: audit.file,
      maxBytes: audit.maxBytes,
      maxFiles: audit.maxFiles,
      onFailure: 'continue',
      fsync: audit.fsync,
      writes: 'immediate',
      redactor,
      session,
      ...(checkpoints && { checkpoints }),
    });
  }
  const opened = log;
  return {
    log: opened,
    session,
    close: async () => {
      opened.flush();
      const failure = opened.healthy ? undefined : opened.lastError;
      opened.close();
      await drain(5000);
      return failure;
    },
  };
}
