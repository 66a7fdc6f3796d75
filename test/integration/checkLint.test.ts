/**
 * `mcp-warden check` refuses policy rules that can never match, naming file and line, and
 * `check --live` warns about globs that match nothing the servers offer.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NODE, runCli, serverBin, tempDir, writeConfig } from './harness.js';

function setup(policy: string) {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'policy.yaml'), policy);
  const config = writeConfig(
    {
      policies: ['./policy.yaml'],
      gateway: { startupTimeout: '10s' },
      servers: {
        memory: { command: NODE, args: [serverBin('memory')] },
        fs: { command: NODE, args: [serverBin('filesystem'), dir] },
      },
    },
    dir,
  );
  return { config, policy: path.join(dir, 'policy.yaml') };
}

describe('check lints policy rules against the config', () => {
  it('refuses a server glob that names no server, with a did-you-mean and the line', async () => {
    const { config, policy } = setup(
      'rules:\n  - id: keep-memory\n    match: { server: memroy }\n    action: deny\n',
    );
    const { code, stderr } = await runCli(['check', '--config', config]);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `${policy}:2:5: rules[0].match.server: "memroy" matches no server in the config`,
    );
    expect(stderr).toContain('did you mean "memory"?');
  });

  it('refuses a tool glob written as the exposed name, saying what to write', async () => {
    const { config, policy } = setup(
      'rules:\n  - id: no-deletes\n    match: { tool: "memory__delete_*" }\n    action: deny\n',
    );
    const { code, stderr } = await runCli(['check', '--config', config]);
    expect(code).toBe(2);
    expect(stderr).toContain(`${policy}:2:5: rules[0].match.tool:`);
    expect(stderr).toContain('write server: memory and tool: "delete_*"');
  });

  it('passes rules that can match', async () => {
    const { config } = setup(
      'rules:\n  - id: ok\n    match: { server: memory, tool: "delete_*" }\n    action: deny\n',
    );
    const { code, stdout } = await runCli(['check', '--config', config]);
    expect(stdout).toContain(': ok (');
    expect(code).toBe(0);
  });

  it('--live warns about a tool glob nothing offers, and about tools no rule decides', async () => {
    const { config, policy } = setup(
      'default: deny\nrules:\n  - id: typo\n    match: { server: memory, tool: "delete_entitys" }\n    action: deny\n  - id: fs-reads\n    match: { server: fs, tool: "read_*" }\n    action: allow\n',
    );
    const { code, stdout } = await runCli(['check', '--config', config, '--live']);
    expect(code).toBe(0);
    expect(stdout).toContain(
      `${policy}:3:5: rules[0].match.tool: "delete_entitys" matches no tool the servers it names offer now`,
    );
    expect(stdout).toMatch(/no rule decides these \d+ tools, so the default does: .*memory__create_entities/);
    expect(stdout).not.toMatch(/default does: .*fs__read_text_file/);
  });
});
