/**
 * Result guardrails on what `resources/read` returns, seen on the built binary's own stdout: a
 * resource that carries no secret reaches the host exactly as the server wrote it, byte for
 * byte. What is redacted is in test/inprocess/guardrailsResources.test.ts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, killRawSessions, resultBothWays, tempDir, writeConfig } from './harness.js';

const BENIGN =
  'caf\u00e9 \u2603 550e8400-e29b-41d4-a716-446655440000 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';

const dir = tempDir('warden-guard-res-');
const resourceFile = path.join(dir, 'resources.json');
writeFileSync(
  resourceFile,
  JSON.stringify([
    { uri: 'fixture://docs/benign.txt', name: 'benign', mimeType: 'text/plain', text: BENIGN },
  ]),
);
const ARGS = ['--name', 'docs', '--resources', '--resource-file', resourceFile];
const config = writeConfig(
  { gateway: FAST_GATEWAY, guardrails: { pii: 'off' }, servers: { docs: fixture(ARGS) } },
  dir,
);

afterEach(() => killRawSessions());

describe('resources/read', () => {
  it('a benign resource reaches the host byte for byte', async () => {
    const { via, direct } = await resultBothWays(config, ARGS, {
      id: 9,
      method: 'resources/read',
      params: { uri: 'fixture://docs/benign.txt' },
    });
    expect(direct).toContain('caf');
    expect(via).toBe(direct);
  });
});
