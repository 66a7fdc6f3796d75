/**
 * Result guardrails, seen on the built binary's own stdout: a result in which nothing is
 * redacted reaches the host exactly as the upstream wrote it, byte for byte. What is redacted,
 * blocked or recorded is in test/inprocess/guardrails.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AWS_KEY, GITHUB_TOKEN } from '../fixtures/secretSamples.js';
import { GUARDED_SERVERS, GUARDED_TOOLS, guardedConfig } from './guardrailsConfig.js';
import { killRawSessions, resultBothWays, readAudit } from './harness.js';

afterEach(() => killRawSessions());

/** The result of a call of `tool` through a gateway serving only `server`, and straight from the fixture. */
async function bothWays(
  server: keyof typeof GUARDED_SERVERS,
  tool: string,
  args: object,
): Promise<[string, string, string]> {
  const { config, audit } = guardedConfig({ [server]: GUARDED_SERVERS[server] });
  const { via, direct } = await resultBothWays(
    config,
    GUARDED_TOOLS,
    { id: 7, method: 'tools/call', params: { name: `${server}__${tool}`, arguments: args } },
    { name: tool, arguments: args },
  );
  return [via, direct, audit];
}

describe('results passed as they are', () => {
  it('audit only: a result holding secrets reaches the host byte for byte, and the trail names them', async () => {
    const text = `caf\u00e9 ${AWS_KEY} / ${GITHUB_TOKEN}`;
    const [via, direct, audit] = await bothWays('a', 'handwritten_echo', { text });
    expect(direct).toContain('"ratio": 1.0');
    expect(via).toBe(direct);
    await expect
      .poll(() =>
        readAudit(audit).filter(
          (r) => r.type === 'result_guarded' && r['server'] === 'a' && r['action'] === 'audit',
        ),
      )
      .toEqual([
        expect.objectContaining({
          kind: 'tools/call',
          target: 'handwritten_echo',
          findings: [
            { category: 'aws-access-key', action: 'audit', location: 'content[0].text', count: 1 },
            { category: 'github-token', action: 'audit', location: 'content[0].text', count: 1 },
          ],
        }),
      ]);
  });

  it('a benign result reaches the host byte for byte where secrets would be redacted', async () => {
    const text =
      'caf\u00e9 550e8400-e29b-41d4-a716-446655440000 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 a/b';
    const [via, direct] = await bothWays('r', 'handwritten_echo', { text });
    expect(direct).toContain('\\u00e9');
    expect(via).toBe(direct);
  });
});
