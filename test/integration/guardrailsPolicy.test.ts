/**
 * Guardrail actions set by policy files, through the built binary: an entry decides before the
 * config's settings, a managed entry cannot be loosened by the user's, and `policy explain` says
 * which action applies and who set it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AWS_KEY, GITHUB_TOKEN } from '../fixtures/secretSamples.js';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  runCli,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';

const hosts: HostSession[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

const LEAK = `aws ${AWS_KEY} github ${GITHUB_TOKEN}`;

/** Two fixture servers under `guardrails: { pii: off }` (secrets redacted) and the user's policy `mine`. */
function setup(mine: string, managed?: string) {
  const dir = tempDir('warden-guard-policy-');
  writeFileSync(path.join(dir, 'mine.yaml'), mine);
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      policies: ['mine.yaml'],
      guardrails: { pii: 'off' },
      servers: {
        crm: fixture(['--name', 'crm', '--tools', 'guardrails,basic']),
        web: fixture(['--name', 'web']),
      },
    },
    dir,
  );
  let env: Record<string, string> = {};
  if (managed !== undefined) {
    const managedDir = tempDir('warden-managed-');
    writeFileSync(path.join(managedDir, 'managed.yaml'), 'policies: [org.yaml]\n');
    writeFileSync(path.join(managedDir, 'org.yaml'), managed);
    env = { MCP_WARDEN_MANAGED_DIR: managedDir };
  }
  return { config, env };
}

async function host(config: string, env: Record<string, string>) {
  const session = await connectHost(config, { env });
  hosts.push(session);
  return session;
}

const echo = async (h: HostSession, name: string) => h.client.callTool({ name, arguments: { text: LEAK } });

describe('guardrails entries in policy files', () => {
  it('an entry decides before the config, for the tools and resources its match names', async () => {
    const { config, env } = setup(
      [
        'guardrails:',
        '  - id: crm-echo-blocks',
        '    match: { server: crm, tool: echo }',
        '    secrets: block',
        '  - id: web-open',
        '    match: { server: web }',
        '    secrets: off',
        '',
      ].join('\n'),
    );
    const h = await host(config, env);
    const blocked = await echo(h, 'crm__echo');
    expect(blocked.isError).toBe(true);
    expect(textOf(blocked)).toContain('crm__echo was withheld');
    expect(textOf(blocked)).not.toContain(AWS_KEY);
    // Another tool of the server: the config's `secrets: redact`.
    const embedded = await echo(h, 'crm__echo_resource');
    const [block] = embedded.content as { resource: { text: string } }[];
    expect(block!.resource.text).toBe('aws [redacted:aws-access-key] github [redacted:github-token]');
    // The user's policy may loosen the user's config.
    expect(textOf(await echo(h, 'web__echo'))).toBe(LEAK);

    const explained = await runCli(['policy', 'explain', '--config', config, 'crm__echo'], env);
    expect(explained.stdout).toMatch(
      /guardrails: secrets block \(policy entry "crm-echo-blocks" \(mine\.yaml:2\)\); pii off \(guardrails\)/,
    );
    const other = await runCli(['policy', 'explain', '--config', config, 'crm__echo_resource'], env);
    expect(other.stdout).toContain('guardrails: secrets redact (guardrails); pii off (guardrails)');
  });

  it('a managed entry cannot be loosened by a user entry', async () => {
    const { config, env } = setup(
      'guardrails:\n  - id: all-open\n    match: {}\n    secrets: off\n',
      'guardrails:\n  - id: org-redacts\n    match: { server: web }\n    secrets: redact\n',
    );
    const h = await host(config, env);
    expect(textOf(await echo(h, 'web__echo'))).toBe(
      'aws [redacted:aws-access-key] github [redacted:github-token]',
    );
    // Where the organisation says nothing, the user's entry applies.
    expect(textOf(await echo(h, 'crm__echo'))).toBe(LEAK);
    const explained = await runCli(['policy', 'explain', '--config', config, 'web__echo'], env);
    expect(explained.stdout).toContain(
      'guardrails: secrets redact (policy entry "org-redacts" (org.yaml:2, managed layer)); pii off (guardrails)',
    );
  });
});
