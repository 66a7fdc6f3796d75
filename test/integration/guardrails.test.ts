/**
 * Result guardrails through the built binary: secrets in what servers return are redacted,
 * blocked or only recorded, per server and tool, and a result in which nothing is redacted
 * reaches the host exactly as the upstream wrote it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AWS_KEY, GITHUB_TOKEN, PRIVATE_KEY } from '../fixtures/secretSamples.js';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  killRawSessions,
  resultBothWays,
  readAudit,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';

const SECRETS = [AWS_KEY, GITHUB_TOKEN, PRIVATE_KEY];
const MARKERS = ['[redacted:aws-access-key]', '[redacted:github-token]', '[redacted:private-key]'];
const TOOLS = ['--tools', 'guardrails,basic'];

const SERVERS = {
  r: fixture(TOOLS),
  b: fixture(TOOLS, { guardrails: { secrets: 'block' } }),
  a: fixture(TOOLS, { guardrails: { secrets: 'audit', tools: { echo_resource: { secrets: 'block' } } } }),
};

/** A config with guardrails (personal data off) and an audit trail in a folder of its own. */
function guardedConfig(servers: Partial<typeof SERVERS>): { config: string; audit: string } {
  const dir = tempDir();
  const config = writeConfig(
    { gateway: FAST_GATEWAY, audit: { file: './audit.jsonl' }, guardrails: { pii: 'off' }, servers },
    dir,
  );
  return { config, audit: path.join(dir, 'audit.jsonl') };
}

const { config: configFile, audit: auditFile } = guardedConfig(SERVERS);

let host: HostSession;
beforeAll(async () => {
  host = await connectHost(configFile);
});
afterAll(async () => {
  await host?.close();
});
afterEach(() => killRawSessions());

function expectRedacted(text: string): void {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
  for (const marker of MARKERS) expect(text).toContain(marker);
}

describe('redact', () => {
  it('replaces an AWS key, a GitHub token and a private key in text with markers', async () => {
    const result = await host.client.callTool({
      name: 'r__echo',
      arguments: { text: `aws ${AWS_KEY}\ngithub ${GITHUB_TOKEN}\n${PRIVATE_KEY}\nend` },
    });
    expect(result.isError).toBeFalsy();
    expectRedacted(textOf(result));
    expect(textOf(result)).toMatch(/^aws \[redacted:aws-access-key\]\ngithub \[redacted:github-token\]\n/);
    expect(textOf(result)).toMatch(/\nend$/);
  });

  it('replaces them in structuredContent, and the JSON text block says the same', async () => {
    const data = { cloud: { key: AWS_KEY }, tokens: [GITHUB_TOKEN], deploy: { pem: PRIVATE_KEY }, n: 1 };
    const result = await host.client.callTool({ name: 'r__echo_structured', arguments: { data } });
    expect(result.structuredContent).toEqual({
      cloud: { key: '[redacted:aws-access-key]' },
      tokens: ['[redacted:github-token]'],
      deploy: { pem: '[redacted:private-key]' },
      n: 1,
    });
    expectRedacted(textOf(result));
    expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
  });

  it('replaces them in an embedded resource', async () => {
    const result = await host.client.callTool({
      name: 'r__echo_resource',
      arguments: { text: SECRETS.join('\n') },
    });
    const [block] = result.content as { type: string; resource: { text: string } }[];
    expect(block!.type).toBe('resource');
    expectRedacted(block!.resource.text);
  });

  it('a redacted structuredContent that fails the outputSchema is stripped by result repair', async () => {
    // The strict SDK client would reject a result whose structuredContent fails the schema.
    const result = await host.client.callTool({ name: 'r__key_record', arguments: { key: AWS_KEY } });
    expect(result.structuredContent).toBeUndefined();
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('{"key":"[redacted:aws-access-key]"}');
    expect(textOf(result)).not.toContain(AWS_KEY);
    expect(textOf(result)).toMatch(/\[mcp-warden\] .*outputSchema/);
  });
});

describe('block', () => {
  it('answers an error naming what was found and where, never the value', async () => {
    const result = await host.client.callTool({
      name: 'b__echo_structured',
      arguments: { data: { key: AWS_KEY, token: GITHUB_TOKEN } },
    });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    const text = textOf(result);
    expect(text).toContain('b__echo_structured was withheld');
    expect(text).toContain('aws-access-key (structuredContent.key)');
    expect(text).toContain('github-token (structuredContent.token)');
    for (const secret of SECRETS) expect(text).not.toContain(secret);
  });

  it('applies to the tools a glob names, over the server setting', async () => {
    const result = await host.client.callTool({ name: 'a__echo_resource', arguments: { text: AWS_KEY } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('aws-access-key (content[0].resource.text)');
  });
});

/** The result of a call of `tool` through a gateway serving only `server`, and straight from the fixture. */
async function bothWays(
  server: keyof typeof SERVERS,
  tool: string,
  args: object,
): Promise<[string, string, string]> {
  const { config, audit } = guardedConfig({ [server]: SERVERS[server] });
  const { via, direct } = await resultBothWays(
    config,
    TOOLS,
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

  it('no secret reaches the audit trail', async () => {
    await expect
      .poll(() => readAudit(auditFile).filter((r) => r.type === 'result_guarded').length)
      .toBeGreaterThan(4);
    const trail = readFileSync(auditFile, 'utf8');
    for (const secret of [AWS_KEY, GITHUB_TOKEN, 'MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8Z1BjP5CE'])
      expect(trail).not.toContain(secret);
  });
});
