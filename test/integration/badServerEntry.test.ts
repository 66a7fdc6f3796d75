/**
 * One bad server entry (an unset variable, an unsupported transport, an unreadable env file)
 * fails that server only: the gateway serves the others, and says why to the host, in its log and
 * in `mcp-warden tools`. `check` still calls each an error, and a problem outside the server
 * entries still stops the gateway.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

/** A good fixture server next to the three kinds of bad entry. */
function configWithBadEntries(): string {
  const dir = tempDir();
  return writeConfig(
    {
      gateway: FAST_GATEWAY,
      mcpServers: {
        good: fixture(),
        sandbox: fixture(['--root', '${WARDEN_TEST_UNSET_SANDBOX_DIR}']),
        remote: { type: 'sse', url: 'https://example.com/sse' },
        secrets: fixture([], { envFile: path.join(dir, 'no-such.env') }),
      },
    },
    dir,
  );
}

describe('a bad server entry fails that server, not the gateway', () => {
  it('serves the good server; the host is told which servers failed and why', async () => {
    const config = configWithBadEntries();
    host = await connectHost(config);

    const instructions = host.client.getInstructions() ?? '';
    expect(instructions).toMatch(
      /server "sandbox" is not available, because its config entry has problems: .*mcpServers\.sandbox\.args\[2\]: .*WARDEN_TEST_UNSET_SANDBOX_DIR/,
    );
    expect(instructions).toMatch(/server "remote" is not available.*type "sse" .* is not supported/);
    expect(instructions).toMatch(/server "secrets" is not available.*mcpServers\.secrets\.envFile: /);
    expect(instructions).not.toMatch(/"good"/);

    const { tools } = await host.client.listTools();
    expect(tools.map((t) => t.name)).toContain('good__echo');
    expect(tools.some((t) => !t.name.startsWith('good__'))).toBe(false);
    const result = await host.client.callTool({ name: 'good__echo', arguments: { text: 'still here' } });
    expect(textOf(result)).toBe('still here');

    expect(host.stderr()).toMatch(
      /error.*server "sandbox" is not started, its config entry has problems: .*WARDEN_TEST_UNSET_SANDBOX_DIR/,
    );
  });

  it('gives no instructions when every server entry is good', async () => {
    host = await connectHost(writeConfig({ gateway: FAST_GATEWAY, servers: { good: fixture() } }));
    expect(host.client.getInstructions()).toBeUndefined();
  });

  it('mcp-warden tools lists the good server and each failed one with its reason', async () => {
    const { code, stdout } = await runCli(['tools', '--config', configWithBadEntries()]);
    expect(stdout).toMatch(/^good__echo\s+good\s/m);
    expect(stdout).toMatch(
      /^server sandbox: failed, 0 tools: its config entry has problems: .*WARDEN_TEST_UNSET_SANDBOX_DIR/m,
    );
    expect(stdout).toMatch(/^server remote: failed, 0 tools: its config entry has problems: .*"sse"/m);
    expect(code).toBe(1);
  });

  it('pins diff and accept work on the good servers and say which server was not compared', async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        pins: { file: './pins.json' },
        mcpServers: { good: fixture(), remote: { type: 'sse', url: 'https://example.com/sse' } },
      },
      dir,
    );
    const diff = await runCli(['pins', 'diff', '--config', config]);
    expect(diff.stdout).toMatch(/^NEW good\/echo /m);
    expect(diff.stdout).toMatch(
      /^server remote: failed: its config entry has problems: .*"sse".*its tools were not compared/m,
    );
    expect(diff.code).toBe(1);
    // The good server's tools are pinned; the exit code still says a server was not available.
    const accept = await runCli(['pins', 'accept', '--all', '--config', config]);
    expect(accept.stdout).toMatch(/^\d+ tools pinned in /m);
    expect(accept.code).toBe(1);
    const again = await runCli(['pins', 'diff', '--config', config]);
    expect(again.stdout).toMatch(/\d+ match their pins, 0 changed, 0 new/);
    expect(again.code).toBe(1);
  });

  it('mcp-warden check still reports each as an error', async () => {
    const { code, stderr } = await runCli(['check', '--config', configWithBadEntries()]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/mcpServers\.sandbox\.args\[2\]: .*WARDEN_TEST_UNSET_SANDBOX_DIR/);
    expect(stderr).toMatch(/mcpServers\.remote\.type: type "sse"/);
    expect(stderr).toMatch(/mcpServers\.secrets\.envFile: /);
  });

  it('a problem in the gateway settings still stops serving', async () => {
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, timeout: '${WARDEN_TEST_UNSET_TIMEOUT}' },
      servers: { good: fixture() },
    });
    const { code, stderr } = await runCli(['--config', config]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/invalid config:\n.*gateway\.timeout: .*WARDEN_TEST_UNSET_TIMEOUT/);
  });
});
