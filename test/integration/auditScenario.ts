/**
 * The config the audit tests share, in-process and through the built binary: one fixture
 * upstream, an audit trail and a diagnostic log file in a fresh folder.
 */
import path from 'node:path';
import { FAST_GATEWAY, fixture, tempDir, writeConfig } from './harness.js';

/** `audit` and `extra` are merged into the audit section and the config. */
export function setup(audit: object = {}, extra: object = {}) {
  const dir = tempDir();
  const file = path.join(dir, 'audit.jsonl');
  const config = writeConfig(
    {
      gateway: { ...FAST_GATEWAY, log: { level: 'info', file: './gateway.log' } },
      audit: { file: './audit.jsonl', ...audit },
      servers: { up: fixture() },
      ...extra,
    },
    dir,
  );
  return { dir, file, config, diagnosticLog: path.join(dir, 'gateway.log') };
}
