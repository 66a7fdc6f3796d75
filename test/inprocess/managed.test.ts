/**
 * Enterprise-managed settings as a gateway reads them at start, served in-process
 * (test/inprocess/served.ts: the same `startServing` as `mcp-warden --config FILE`, with real
 * upstream processes): what a host is served and what the audit trail and the organisation's
 * sink get. What `check`, `tools`, `managed show` and `policy explain` print of the same files,
 * and a gateway that refuses to start, are the built binary's, in
 * test/integration/managed.test.ts.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startOtlpReceiver } from '../fixtures/otlpReceiver.js';
import { FAST_GATEWAY, fixture, readAudit, tempDir, textOf, writeConfig } from '../integration/harness.js';
import {
  managedDir,
  managedRuleOverUserSetup,
  managedSinkSetup,
  relaxedOnFailureSetup,
  serverEntryAgainstLockSetup,
  shippedRecords,
  trailRequiredSetup,
  userAuditAgainstTrailSetup,
} from '../integration/managedSetup.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

describe('managed server allow lists', () => {
  it('an allowed npm package runs only as itself: a launcher form or env that could run other code is refused, saying why', async () => {
    const work = tempDir();
    const marker = path.join(work, 'user-code-ran');
    const evil = path.join(work, 'evil.cjs');
    writeFileSync(evil, `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`);
    const managed = managedDir(`
servers:
  allow:
    - command: node
    - npm: "@modelcontextprotocol/server-memory"
`);
    const memory = '@modelcontextprotocol/server-memory';
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: {
        fx: fixture(),
        pkgcmd: { command: 'npx', args: ['-y', '-p', memory, 'node', evil] },
        alias: { command: 'npx', args: ['-y', `${memory}@npm:left-pad`] },
        registry: {
          command: 'npx',
          args: ['-y', memory],
          env: { npm_config_registry: 'http://127.0.0.1:9/' },
        },
        preload: { command: 'npx', args: ['-y', memory], env: { NODE_OPTIONS: `--require ${evil}` } },
        nodeopt: { command: 'npx', args: ['-y', `--node-options=--require=${evil}`, memory] },
      },
    });
    const host = await each.connect(config, { env: managed.env });
    const instructions = host.client.getInstructions() ?? '';
    const reason = (name: string) =>
      new RegExp(
        `server "${name}" is blocked by managed settings: not on the allow list of [^\\n]*\\(servers\\.allow\\): ([^\\n]*)`,
      ).exec(instructions)?.[1];
    expect(reason('pkgcmd')).toContain('runs the command "node"');
    expect(reason('alias')).toContain('is not a npm package name with a version');
    expect(reason('registry')).toContain('npm_config_registry');
    expect(reason('preload')).toContain('NODE_OPTIONS');
    expect(reason('nodeopt')).toContain('--node-options runs node with options of its own');
    // The other server still starts and serves.
    const called = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'still here' } });
    expect(textOf(called)).toContain('still here');
    expect(existsSync(marker)).toBe(false);
  });
});

describe('managed audit minimums and locks', () => {
  it('a user config without an audit trail: the managed trail is written anyway, ahead of each call', async () => {
    const { audit, managed, config } = trailRequiredSetup();
    const host = await each.connect(config, { env: managed.env });
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    await host.close();
    const types = readAudit(audit).map((r) => r.type);
    // Written ahead of the call: the block mode the managed file asks for.
    expect(types).toContain('call_start');
    expect(types).toContain('call');
  });

  it('relaxing onFailure is refused, with the managed value kept', async () => {
    const { mine, managed, config } = relaxedOnFailureSetup();
    const host = await each.connect(config, { env: managed.env });
    await host.waitForStderr('audit.onFailure: refused');
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    await host.close();
    // call_start records exist only in block mode: the user's "continue" did not win.
    expect(readAudit(mine).map((r) => r.type)).toContain('call_start');
  });

  it('a server entry cannot undo a gateway lock: validation stays on and a longer timeout is cut to the managed one', async () => {
    const { managed, config } = serverEntryAgainstLockSetup();
    const host = await each.connect(config, { env: managed.env });
    await host.waitForStderr('servers.fx.validateArguments: refused');
    const invalid = await host.client.callTool({ name: 'fx__add', arguments: { a: 'one', b: 2 } });
    expect(textOf(invalid)).toContain('Invalid arguments for tool "add" on server "fx"');
    const slow = await host.client.callTool({ name: 'fx__hang', arguments: {} });
    expect(textOf(slow)).toMatch(/timed out: no answer or progress for 800 ?ms/);
  });
});

describe('the managed trail against user audit settings', () => {
  it('a redaction pattern matching everything and a tiny rotation are refused: every record is kept, readable, also at the sink', async () => {
    const receiver = each.track(await startOtlpReceiver());
    const { trail, managed, config } = userAuditAgainstTrailSetup(receiver.endpoint);
    const host = await each.connect(config, { env: managed.env });
    for (let i = 0; i < 30; i += 1)
      await host.client.callTool({ name: 'fx__echo', arguments: { text: `note ${i} sk-live-abc123` } });
    await host.close();
    const calls = readAudit(trail).filter((r) => r.type === 'call');
    expect(calls).toHaveLength(30);
    expect(calls.every((r) => r.tool === 'fx__echo' && r.upstreamTool === 'echo' && r.server === 'fx')).toBe(
      true,
    );
    // The user's other pattern, which matches a secret only, still applies.
    expect(JSON.stringify(calls)).not.toContain('sk-live-abc123');
    await expect
      .poll(() => shippedRecords(receiver).filter((r) => r.type === 'call' && r.tool === 'fx__echo').length, {
        timeout: 10_000,
      })
      .toBe(30);
  });
});

describe('managed audit sinks', () => {
  it('a managed sink gets the records though the user config says nothing of it; a user entry that redirects it is refused', async () => {
    const receiver = each.track(await startOtlpReceiver());
    const { managed, quiet, redirecting } = managedSinkSetup(receiver.endpoint);
    const echoCalls = (text: string) =>
      shippedRecords(receiver).filter(
        (r) => r.type === 'call' && JSON.stringify(r.arguments ?? r).includes(text),
      );

    // The user's config has an audit trail and no sinks at all.
    const host = await each.connect(quiet, { env: managed.env });
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'first-session' } });
    await receiver.until(() => echoCalls('first-session').length === 1, 'the call of the first session');
    await host.close();

    // The user's config points a sink of that name elsewhere, optional, and relaxes onFailure.
    const second = await each.connect(redirecting, { env: managed.env });
    await second.waitForStderr('the sink "org-siem" is set by');
    await second.client.callTool({ name: 'fx__echo', arguments: { text: 'second-session' } });
    await receiver.until(() => echoCalls('second-session').length === 1, 'the call of the refused config');
    await second.close();
    // Block mode (the managed sink is required) writes call_start records too.
    expect(readAudit(path.join(path.dirname(redirecting), 'audit.jsonl')).map((r) => r.type)).toContain(
      'call_start',
    );
  });
});

describe('managed policies', () => {
  it('a managed rule wins over a user rule that would allow, and the audit says which layer decided', async () => {
    const { audit, managed, config } = managedRuleOverUserSetup();
    const host = await each.connect(config, { env: managed.env });
    const denied = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('The organisation does not allow echo.');
    await host.close();
    const call = readAudit(audit).find((r) => r.type === 'call');
    expect(call?.decision).toMatchObject({ effect: 'deny', rule: 'org-no-echo', layer: 'managed' });
  });
});
