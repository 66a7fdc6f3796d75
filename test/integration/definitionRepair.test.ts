/**
 * Definition repair as `mcp-warden tools` shows it, through the built binary: the repairs made
 * to a server's tool definitions and the tool left out. What a host is served is tested
 * in-process, in test/inprocess/definitionRepair.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, runCli, writeConfig } from './harness.js';

describe('definition repair', () => {
  it('mcp-warden tools lists the repairs and the tool left out', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: './audit.jsonl' },
      servers: { good: fixture(), bad: fixture(['--tools', 'badschema']) },
    });
    const { code, stdout } = await runCli(['tools', '--config', config]);
    expect(code).toBe(0);
    expect(stdout).toContain(
      'repaired: server bad, tool bool_subschema: outputSchema.properties.v: true became {}',
    );
    expect(stdout).toContain('repaired: server bad, tool no_type_input: inputSchema.type: missing');
    expect(stdout).toMatch(/left out: server bad, tool string_input: inputSchema\.type/);
    expect(stdout).toContain('good__echo');
    expect(stdout).not.toContain('bad__string_input');
  });
});
