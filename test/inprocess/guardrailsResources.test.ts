/**
 * Result guardrails on what `resources/read` returns, with the gateway served in-process: a
 * fixture server whose resources carry an AWS key and a GitHub token, as text and as a text
 * blob. That a resource carrying nothing reaches the host as the server wrote it is shown on the
 * built binary's own stdout, in test/integration/guardrailsResources.test.ts.
 */
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AWS_KEY, GITHUB_TOKEN } from '../fixtures/secretSamples.js';
import {
  FAST_GATEWAY,
  fixture,
  readAudit,
  tempDir,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const LEAK = `deploy notes\naws ${AWS_KEY}\ngithub ${GITHUB_TOKEN}\n`;

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
  host = await shared.connect(config);
});
const shared = servedPerTest({ closeAfter: 'all' });

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
});
