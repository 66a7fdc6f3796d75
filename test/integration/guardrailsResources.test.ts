/**
 * Result guardrails on what `resources/read` returns, through the built binary: a fixture server
 * whose resources carry an AWS key and a GitHub token, as text and as a text blob, and one
 * that carries nothing, which must reach the host as the server wrote it.
 */
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AWS_KEY, GITHUB_TOKEN } from '../fixtures/secretSamples.js';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  killRawSessions,
  resultBothWays,
  readAudit,
  tempDir,
  writeConfig,
  type HostSession,
} from './harness.js';

const LEAK = `deploy notes\naws ${AWS_KEY}\ngithub ${GITHUB_TOKEN}\n`;
const BENIGN =
  'caf\u00e9 \u2603 550e8400-e29b-41d4-a716-446655440000 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';

const dir = tempDir('warden-guard-res-');
const resourceFile = path.join(dir, 'resources.json');
writeFileSync(
  resourceFile,
  JSON.stringify([
    { uri: 'fixture://docs/leaky.txt', name: 'leaky', mimeType: 'text/plain', text: LEAK },
    {
      uri: 'fixture://docs/leaky.env',
      name: 'leaky-blob',
      mimeType: 'text/plain; charset=utf-8',
      blob: Buffer.from(LEAK).toString('base64'),
    },
    {
      uri: 'fixture://docs/image.png',
      name: 'image',
      mimeType: 'image/png',
      blob: Buffer.from(LEAK).toString('base64'),
    },
    { uri: 'fixture://docs/benign.txt', name: 'benign', mimeType: 'text/plain', text: BENIGN },
  ]),
);
const ARGS = [
  '--name',
  'docs',
  '--resources',
  '--resource-file',
  resourceFile,
  '--tools',
  'guardrails,basic',
];
const audit = path.join(dir, 'audit.jsonl');
const config = writeConfig(
  {
    gateway: FAST_GATEWAY,
    audit: { file: audit },
    guardrails: { pii: 'off' },
    servers: { docs: fixture(ARGS) },
  },
  dir,
);

let host: HostSession;
beforeAll(async () => {
  host = await connectHost(config);
});
afterAll(async () => {
  await host?.close();
});
afterEach(() => killRawSessions());

function expectRedacted(text: string): void {
  expect(text).not.toContain(AWS_KEY);
  expect(text).not.toContain(GITHUB_TOKEN);
  expect(text).toBe('deploy notes\naws [redacted:aws-access-key]\ngithub [redacted:github-token]\n');
}

describe('resources/read', () => {
  it('redacts an AWS key and a GitHub token in a text resource, and audits where they were', async () => {
    const read = await host.client.readResource({ uri: 'fixture://docs/leaky.txt' });
    const [contents] = read.contents as { uri: string; text: string }[];
    expect(contents!.uri).toBe('fixture://docs/leaky.txt');
    expectRedacted(contents!.text);
    await expect
      .poll(() =>
        readAudit(audit).filter(
          (r) => r.type === 'result_guarded' && r['target'] === 'fixture://docs/leaky.txt',
        ),
      )
      .toEqual([
        expect.objectContaining({
          server: 'docs',
          kind: 'resources/read',
          action: 'redact',
          findings: [
            { category: 'aws-access-key', action: 'redact', location: 'contents[0].text', count: 1 },
            { category: 'github-token', action: 'redact', location: 'contents[0].text', count: 1 },
          ],
        }),
      ]);
  });

  it('redacts them in a text resource sent as a base64 blob, which stays a blob', async () => {
    const read = await host.client.readResource({ uri: 'fixture://docs/leaky.env' });
    const [contents] = read.contents as { blob: string; text?: string }[];
    expect(contents!.text).toBeUndefined();
    expectRedacted(Buffer.from(contents!.blob, 'base64').toString('utf8'));
    await expect
      .poll(() =>
        readAudit(audit).find(
          (r) => r.type === 'result_guarded' && r['target'] === 'fixture://docs/leaky.env',
        ),
      )
      .toMatchObject({ findings: [{ location: 'contents[0].blob' }, { location: 'contents[0].blob' }] });
  });

  it('leaves a blob that is not text alone', async () => {
    const read = await host.client.readResource({ uri: 'fixture://docs/image.png' });
    expect((read.contents[0] as { blob: string }).blob).toBe(Buffer.from(LEAK).toString('base64'));
  });

  it('redacts them in a resource embedded in a tool result', async () => {
    const result = await host.client.callTool({ name: 'docs__echo_resource', arguments: { text: LEAK } });
    const [block] = result.content as { type: string; resource: { text: string } }[];
    expect(block!.type).toBe('resource');
    expectRedacted(block!.resource.text);
  });

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
