/**
 * Policy through the built binary, for what needs the process: an invalid policy refuses to
 * start (exit code 2), and the `check` and `policy explain` commands. Policy and confirmation
 * while serving run in-process in test/inprocess/policy.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './harness.js';
import { setup } from './policyScenario.js';

describe('start-up and the CLI', () => {
  it('an invalid policy refuses to start, naming the file, line and key', async () => {
    const { config, policyFile } = setup({ policy: 'default: alow\n' });
    const { code, stderr } = await runCli(['check', '--config', config]);
    expect(code).toBe(2);
    expect(stderr).toContain('mcp-warden: invalid policy:');
    expect(stderr).toContain(`${policyFile}:1:10: default:`);
    const served = await runCli(['--config', config]);
    expect(served.code).toBe(2);
    expect(served.stderr).toContain('invalid policy');
  });

  it('check counts the policy files and rules', async () => {
    const { config } = setup();
    const { code, stdout } = await runCli(['check', '--config', config]);
    expect(code).toBe(0);
    expect(stdout).toContain('1 policy file, 3 rules');
  });

  it('policy explain says which rule decides and why, without starting untrusted upstreams', async () => {
    const { config, dir } = setup();
    const { code, stdout } = await runCli([
      'policy',
      'explain',
      '--config',
      config,
      'up__env',
      '{"name":"A_SECRET"}',
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('up__env → server "up", tool "env"');
    expect(stdout).toContain('decision: DENY by rule "no-secret-env"');
    expect(stdout).toContain('reason: Secrets stay secret.');
    expect(stdout).toMatch(/1\. no match rule "no-crash"/);
    expect(stdout).toMatch(/2\. MATCH {4}rule "no-secret-env"/);
    // The fixture was never started: it would have created its record file.
    expect(() => readFileSync(path.join(dir, 'record.jsonl'))).toThrow();
  });
});
