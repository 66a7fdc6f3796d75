/**
 * Policy edges through the built binary: a rule that can never match is refused by `check`
 * (exit code 2), while the gateway serves with a warning naming its file and line, at start and
 * on reload. The other policy edges run in-process in test/inprocess/policyEdges.test.ts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectHost, FAST_GATEWAY, fixture, runCli, tempDir, writeConfig } from './harness.js';

describe('a rule that can never match', () => {
  it('check refuses it, and the gateway serves with a warning naming file and line, at start and on reload', async () => {
    const dir = tempDir();
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      'rules:\n  - id: no-crash\n    match: { server: upp, tool: crash }\n    action: deny\n',
    );
    const config = writeConfig(
      { gateway: FAST_GATEWAY, policies: ['policy.yaml'], servers: { up: fixture() } },
      dir,
    );

    const check = await runCli(['check', '--config', config]);
    expect(check.code).toBe(2);
    expect(check.stderr).toContain(
      `${policy}:2:5: rules[0].match.server: "upp" matches no server in the config`,
    );

    const host = await connectHost(config);
    try {
      await host.waitForStderr(
        `policy rule can never match (mcp-warden check fails on it): ${policy}:2:5: rules[0].match.server: "upp" matches no server in the config (up); did you mean "up"?`,
      );
      // Served as written: the dead rule decides nothing.
      const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'hi' } });
      expect(result.isError).not.toBe(true);

      writeFileSync(policy, 'rules:\n  - id: no-echo\n    match: { tool: "up__echo" }\n    action: deny\n');
      await host.waitForStderr(`${policy}:2:5: rules[0].match.tool: "up__echo" is the name the host sees`);
    } finally {
      await host.close();
    }
  });
});
