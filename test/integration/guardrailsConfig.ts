/**
 * The servers the guardrails tests call, one per setting (redact, block, audit with one tool
 * blocked), shared by the in-process scenarios and the binary's byte-for-byte ones.
 */
import path from 'node:path';
import { FAST_GATEWAY, fixture, tempDir, writeConfig } from './harness.js';

export const GUARDED_TOOLS = ['--tools', 'guardrails,basic'];

export const GUARDED_SERVERS = {
  r: fixture(GUARDED_TOOLS),
  b: fixture(GUARDED_TOOLS, { guardrails: { secrets: 'block' } }),
  a: fixture(GUARDED_TOOLS, {
    guardrails: { secrets: 'audit', tools: { echo_resource: { secrets: 'block' } } },
  }),
};

/** A config with guardrails (personal data off) and an audit trail in a folder of its own. */
export function guardedConfig(servers: Partial<typeof GUARDED_SERVERS>): { config: string; audit: string } {
  const dir = tempDir();
  const config = writeConfig(
    { gateway: FAST_GATEWAY, audit: { file: './audit.jsonl' }, guardrails: { pii: 'off' }, servers },
    dir,
  );
  return { config, audit: path.join(dir, 'audit.jsonl') };
}
