/**
 * A served config is remembered as valid (lib/validDocuments.ts), so the next start on the same
 * unchanged file skips the validator: what the user sees is that the file is kept safely, that a
 * damaged one never stops the gateway, and that a config edited into an invalid one is refused.
 */
import { readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectHost, fixture, runCli, tempDir, writeConfig, type HostSession } from './harness.js';

const sessions: HostSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

function stateEnv(): { env: Record<string, string>; file: string } {
  const state = tempDir('warden-valid-state-');
  return { env: { XDG_STATE_HOME: state }, file: path.join(state, 'mcp-warden', 'valid-documents.json') };
}

function kept(file: string): { version?: number; entries?: string[] } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { version?: number; entries?: string[] };
  } catch {
    return undefined;
  }
}

async function serveOnce(config: string, env: Record<string, string>): Promise<void> {
  const host = await connectHost(config, { env });
  sessions.push(host);
  const { tools } = await host.client.listTools();
  expect(tools.map((t) => t.name)).toContain('fixture__echo');
}

describe('valid documents remembered across starts', () => {
  it('keeps what a served config was found valid in a file only its user can read', async () => {
    const { env, file } = stateEnv();
    await serveOnce(writeConfig({ servers: { fixture: fixture() } }), env);
    await expect.poll(() => kept(file)?.entries?.length).toBe(1);
    expect(kept(file)?.version).toBe(1);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('serves with a damaged file, and replaces it', async () => {
    const { env, file } = stateEnv();
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, '{"version":1,"entries":[', { mode: 0o600 });
    await serveOnce(writeConfig({ servers: { fixture: fixture() } }), env);
    await expect.poll(() => kept(file)?.entries?.length).toBe(1);
  });

  it('refuses a config edited into an invalid one after it was served', async () => {
    const { env, file } = stateEnv();
    const config = writeConfig({ servers: { fixture: fixture() } });
    await serveOnce(config, env);
    await expect.poll(() => kept(file)?.entries?.length).toBe(1);
    await Promise.all(sessions.splice(0).map((s) => s.close()));
    writeFileSync(config, JSON.stringify({ servers: { fixture: fixture() }, gateway: { logg: {} } }));
    const run = await runCli(['--config', config], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('logg');
  });

  it('refuses a policy whose argument schema was edited into an invalid one after it was served', async () => {
    const { env, file } = stateEnv();
    const dir = tempDir();
    const policy = path.join(dir, 'policy.json');
    const rule = (type: string) => ({
      default: 'allow',
      rules: [
        {
          id: 'typed',
          match: { tool: 'echo', arguments: { properties: { text: { type } } } },
          action: 'deny',
        },
      ],
    });
    writeFileSync(policy, JSON.stringify(rule('number')));
    const config = writeConfig({ servers: { fixture: fixture() }, policies: ['./policy.json'] }, dir);
    await serveOnce(config, env);
    // The config, the policy file and the rule's argument schema.
    await expect.poll(() => kept(file)?.entries?.length).toBe(3);
    await Promise.all(sessions.splice(0).map((s) => s.close()));
    writeFileSync(policy, JSON.stringify(rule('strng')));
    const run = await runCli(['--config', config], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('did you mean "string"?');
  });
});
