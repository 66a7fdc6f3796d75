/**
 * Result guardrails, with the gateway served in-process: secrets in what servers return are
 * redacted, blocked or only recorded, per server and tool, and none reaches the audit trail.
 * That a result in which nothing is redacted reaches the host byte for byte is shown on the
 * built binary's own stdout, in test/integration/guardrails.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { AWS_KEY, GITHUB_TOKEN, PRIVATE_KEY } from '../fixtures/secretSamples.js';
import { GUARDED_SERVERS, guardedConfig } from '../integration/guardrailsConfig.js';
import { readAudit, textOf, type HostSession } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const SECRETS = [AWS_KEY, GITHUB_TOKEN, PRIVATE_KEY];
const MARKERS = ['[redacted:aws-access-key]', '[redacted:github-token]', '[redacted:private-key]'];

const { config: configFile, audit: auditFile } = guardedConfig(GUARDED_SERVERS);

let host: HostSession;
beforeAll(async () => {
  host = await shared.connect(configFile);
});
const shared = servedPerTest({ closeAfter: 'all' });

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

describe('results passed as they are', () => {
  it('no secret reaches the audit trail', async () => {
    await expect
      .poll(() => readAudit(auditFile).filter((r) => r.type === 'result_guarded').length)
      .toBeGreaterThan(4);
    const trail = readFileSync(auditFile, 'utf8');
    for (const secret of [AWS_KEY, GITHUB_TOKEN, 'MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8Z1BjP5CE'])
      expect(trail).not.toContain(secret);
  });
});
