/**
 * The policy scenario the policy tests share, in-process and through the built binary: a config
 * in a fresh folder in front of the recording fixture, with a policy that denies two tools (one
 * by its arguments) and asks a human before another.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { readRecord } from '../fixtures/fixtureProcess.js';
import { FAST_GATEWAY, fixture, tempDir, writeConfig } from './harness.js';

/** The policy in force unless a test brings its own. */
export const POLICY = `
default: allow
rules:
  - id: no-crash
    match: { tool: crash }
    action: deny
    reason: Crashing the server is not allowed.
  - id: no-secret-env
    match:
      tool: env
      arguments: { properties: { name: { pattern: SECRET } }, required: [name] }
    action: deny
    reason: Secrets stay secret.
  - id: ask-echo
    match: { tool: echo }
    action: confirm
    reason: Echo needs a human.
`;

/** A gateway in front of a recording fixture, with POLICY (or the given text) in force. */
export function setup(options: { policy?: string; confirmation?: object } = {}) {
  const dir = tempDir();
  const record = path.join(dir, 'record.jsonl');
  const policyFile = path.join(dir, 'policy.yaml');
  writeFileSync(policyFile, options.policy ?? POLICY);
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      policies: ['policy.yaml'],
      ...(options.confirmation && { confirmation: options.confirmation }),
      servers: { up: fixture(['--record', record]) },
    },
    dir,
  );
  /** The tools/call requests the upstream received, by tool name. */
  const calls = (tool: string) =>
    readRecord(record).filter((m) => m.method === 'tools/call' && m.params?.name === tool);
  return { dir, config, policyFile, calls };
}
