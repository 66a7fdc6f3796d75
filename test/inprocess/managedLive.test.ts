/**
 * Managed settings edited while the gateway serves (locks, audit minimums, server lists and
 * policies), run in-process (test/inprocess/served.ts: the same `startServing` as
 * `mcp-warden --config FILE`, with real upstream processes): the managed folder is a temp folder
 * given as MCP_WARDEN_MANAGED_DIR, and each test waits for the gateway to say the edit is in
 * force before it calls.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { envelope, MODERN } from '../fixtures/modernHost.js';
import {
  fixture,
  readAudit,
  tempDir,
  textOf,
  waitForExit,
  writeConfig,
  FAST_GATEWAY,
  NODE,
  type HostSession,
} from '../integration/harness.js';
import { startOtlpReceiver } from '../fixtures/otlpReceiver.js';
import { connectHttpHost, postRpc } from '../integration/httpHarness.js';
import { managedDir } from '../integration/managedSetup.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

/** Nothing managed but an empty deny list: the file exists, so it is watched. */
const NOTHING = 'servers:\n  deny: []\n';

function serve(config: string, env: Record<string, string>): Promise<HostSession> {
  return each.connect(config, { env });
}

/** Waits for the n-th "reloaded" line: the edit before it is in force. */
async function reloaded(host: { stderr(): string; waitForStderr(text: string | RegExp): Promise<void> }) {
  const count = host.stderr().split('reloaded: its policies, server lists, locks').length;
  await host.waitForStderr(new RegExp(`(reloaded: its policies, server lists, locks[^]*){${count}}`));
}

describe('locks edited while serving', () => {
  it('gateway.validateArguments: a lock applies from the next call, naming the overridden user setting; unlocked, the user value applies again', async () => {
    const managed = managedDir(NOTHING);
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, validateArguments: false },
      servers: { fx: fixture() },
    });
    const host = await serve(config, managed.env);
    const badCall = () => host.client.callTool({ name: 'fx__add', arguments: { a: 'one', b: 2 } });
    // Unchecked by the gateway, the call reaches the server, which refuses it in its own words.
    await expect(badCall()).rejects.toThrow('Argument a must be a finite number');

    managed.edit('lock:\n  gateway:\n    validateArguments: true\n');
    await reloaded(host);
    expect(host.stderr()).toContain(
      `gateway.validateArguments: refused: ${managed.file}:3 lock.gateway.validateArguments locks this setting to true, which is used instead of false`,
    );
    expect(host.stderr()).toContain(`${managed.file}:3 lock.gateway.validateArguments is now true`);
    const refused = await badCall();
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('Invalid arguments for tool "add" on server "fx"');

    managed.edit(NOTHING);
    await reloaded(host);
    expect(host.stderr()).toContain(`no longer lock gateway.validateArguments`);
    await expect(badCall()).rejects.toThrow('Argument a must be a finite number');
  });

  it('gateway.maxTimeout: a locked shorter limit ends the next call; unlocked, the user limit applies again', async () => {
    const managed = managedDir(NOTHING);
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, maxTimeout: '10m' },
      servers: { fx: fixture() },
    });
    const host = await serve(config, managed.env);
    managed.edit('lock:\n  gateway:\n    maxTimeout: 1s\n');
    await reloaded(host);
    expect(host.stderr()).toContain(
      `gateway.maxTimeout: refused: ${managed.file}:3 lock.gateway.maxTimeout locks this setting to "1s", which is used instead of "10m"`,
    );
    // The sleep reports progress, so only the hard limit can end it.
    const ended = await host.client.callTool({ name: 'fx__sleep', arguments: { ms: 3000 } });
    expect(ended.isError).toBe(true);
    expect(textOf(ended)).toContain('ran for 1s, its maximum (maxTimeout)');

    managed.edit(NOTHING);
    await reloaded(host);
    const served = await host.client.callTool({ name: 'fx__sleep', arguments: { ms: 1500 } });
    expect(served.isError).toBeFalsy();
  });

  it('confirmation.timeout: a locked timeout ends a confirmation that would wait longer', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'default: allow\nrules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n',
    );
    // The hook never answers: only the timeout ends the wait.
    const hang = `process.stdin.resume(); setInterval(() => {}, 1e9);`;
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: ['policy.yaml'],
        confirmation: {
          methods: ['command'],
          timeout: '10m',
          command: { command: NODE, args: ['-e', hang] },
        },
        servers: { fx: fixture() },
      },
      dir,
    );
    const managed = managedDir(NOTHING);
    const host = await serve(config, managed.env);
    managed.edit('lock:\n  confirmation:\n    timeout: 300ms\n');
    await reloaded(host);
    expect(host.stderr()).toContain(
      `confirmation.timeout: refused: ${managed.file}:3 lock.confirmation.timeout locks this setting to "300ms", which is used instead of "10m"`,
    );
    const result = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('No confirmation from the confirmation command');
  });

  it('gateway.repair: a locked repair setting applies to the next result', async () => {
    const managed = managedDir(NOTHING);
    const config = writeConfig({
      gateway: { ...FAST_GATEWAY, repair: { invalidStructured: 'off' } },
      servers: { fx: fixture(['--tools', 'structured']) },
    });
    const host = await serve(config, managed.env);
    // The user's setting passes the invalid structuredContent on as it is.
    const passed = await host.client.callTool({ name: 'fx__structured_invalid', arguments: {} });
    expect(passed.isError).toBeFalsy();
    expect(passed.structuredContent).toEqual({ value: 'not a number' });
    managed.edit('lock:\n  gateway:\n    repair:\n      invalidStructured: error\n');
    await reloaded(host);
    expect(host.stderr()).toContain(`lock.gateway.repair.invalidStructured is now "error"`);
    const repaired = await host.client.callTool({ name: 'fx__structured_invalid', arguments: {} });
    expect(repaired.isError).toBe(true);
    expect(repaired.structuredContent).toBeUndefined();
  });

  it('a setting fixed at start is not changed under the running gateway: said as an error naming key and file', async () => {
    const managed = managedDir(NOTHING);
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture() } });
    const host = await serve(config, managed.env);
    managed.edit('lock:\n  gateway:\n    log:\n      level: debug\n');
    await reloaded(host);
    expect(host.stderr()).toContain(
      `managed settings ${managed.file}:4 lock.gateway.log.level changed, but gateway.log.level cannot change in a running gateway (the log is opened when the gateway starts): the value in force since start stays until mcp-warden restarts`,
    );
  });

  it('a broken lock value is refused with file:line, and the last good lock stays in force', async () => {
    const managed = managedDir('lock:\n  gateway:\n    maxTimeout: 1s\n');
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture() } });
    const host = await serve(config, managed.env);
    managed.edit('lock:\n  gateway:\n    maxTimeout: 20\n');
    await host.waitForStderr('the last good version stays in force');
    expect(host.stderr()).toContain(`${managed.file}:3`);
    expect(host.stderr()).toContain('lock.gateway.maxTimeout');
    const ended = await host.client.callTool({ name: 'fx__sleep', arguments: { ms: 3000 } });
    expect(textOf(ended)).toContain('ran for 1s, its maximum (maxTimeout)');
  });
});

describe('audit minimums edited while serving', () => {
  it('onFailure: block added by an edit writes the next call ahead; removed, the user value applies again', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    const managed = managedDir(NOTHING);
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: audit, onFailure: 'continue' },
      servers: { fx: fixture() },
    });
    const host = await serve(config, managed.env);
    const starts = () =>
      readAudit(audit)
        .filter((r) => r.type === 'call_start')
        .map((r) => r.args);
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'before' } });

    managed.edit('audit:\n  onFailure: block\n');
    await reloaded(host);
    expect(host.stderr()).toContain(
      `audit.onFailure: refused: onFailure: continue would serve calls that cannot be audited; ${managed.file}:2 audit.onFailure requires "block"`,
    );
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'during' } });

    managed.edit(NOTHING);
    await reloaded(host);
    expect(host.stderr()).toContain('audit.onFailure is now continue');
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'after' } });
    await host.close();
    // Only the call made while the managed file said block was written ahead.
    expect(starts()).toEqual([{ text: 'during' }]);
  });

  it('a required sink added by an edit is opened and gets the next records', async () => {
    const receiver = each.track(await startOtlpReceiver());
    const managed = managedDir(NOTHING);
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: './audit.jsonl', onFailure: 'continue' },
      servers: { fx: fixture() },
    });
    const host = await serve(config, managed.env);
    managed.edit(
      `audit:\n  sinks:\n    - name: org-siem\n      type: otlp\n      endpoint: ${receiver.endpoint}/v1/logs\n      required: true\n`,
    );
    await reloaded(host);
    expect(host.stderr()).toContain('audit sink org-siem opened');
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'shipped' } });
    await receiver.until(
      () =>
        receiver.received.some((r) => r.path === '/v1/logs' && r.body.toString('utf8').includes('shipped')),
      'the call made after the edit',
    );
    await host.close();
    // The required sink put the trail in block mode: the call was written ahead.
    const starts = readAudit(path.join(path.dirname(config), 'audit.jsonl')).filter(
      (r) => r.type === 'call_start',
    );
    expect(starts.map((r) => r.args)).toEqual([{ text: 'shipped' }]);
  });

  it('an audit trail required by an edit, with none open, refuses calls until a restart', async () => {
    const audit = path.join(tempDir(), 'org.jsonl');
    const managed = managedDir(NOTHING);
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture() } });
    const host = await serve(config, managed.env);
    expect(textOf(await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } }))).toBe('x');
    managed.edit(`audit:\n  required: true\n  file: ${audit}\n`);
    await reloaded(host);
    expect(host.stderr()).toContain(`${managed.file}:2 audit.required now requires an audit trail`);
    const refused = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('now require an audit trail');
    await host.close();

    // Started again, the trail is open and calls are served and recorded.
    const again = await serve(config, managed.env);
    expect(textOf(await again.client.callTool({ name: 'fx__echo', arguments: { text: 'y' } }))).toBe('y');
    await again.close();
    expect(readAudit(audit).some((r) => r.type === 'call')).toBe(true);
  });
});

describe('managed edits with the HTTP listener', () => {
  it('a server denied and a tool denied by an edit are refused to the next HTTP call, naming the managed layer', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    // Another argument list than fx's, so that a rule for one is not a rule for the other.
    const gx = fixture(['--name', 'gx']);
    const managed = managedDir(NOTHING, {
      'org.yaml':
        'rules:\n  - id: org-no-echo\n    match: { tool: echo }\n    action: deny\n    reason: Not in this team.\n',
    });
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: audit },
      servers: { fx: fixture(), gx: { ...gx, shared: true } },
    });
    const gateway = await each.http(config, { env: managed.env });
    const host = each.track(await connectHttpHost(gateway.url));
    expect(textOf(await host.client.callTool({ name: 'fx__echo', arguments: { text: 'a' } }))).toBe('a');
    expect(textOf(await host.client.callTool({ name: 'gx__echo', arguments: { text: 'b' } }))).toBe('b');

    managed.edit(
      `policies: [org.yaml]\nservers:\n  deny:\n    - command: ${NODE}\n      args: ${JSON.stringify(gx.args)}\n`,
    );
    await reloaded(gateway);
    const denied = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'c' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('Not in this team.');
    // The model is told why, as a tool result, rather than a protocol error it cannot read.
    const refused = await host.client.callTool({ name: 'gx__echo', arguments: { text: 'd' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(
      /server "gx" is not available: it is blocked by managed settings: denied by servers\.deny\[0\]/,
    );
    const other = each.track(await connectHttpHost(gateway.url, { name: 'second-host' }));
    const deniedToo = await other.client.callTool({ name: 'fx__echo', arguments: { text: 'e' } });
    expect(textOf(deniedToo)).toContain('Not in this team.');
    await gateway.stop();

    const calls = readAudit(audit).filter((r) => r.type === 'call');
    const decided = (text: string) =>
      calls.find((r) => (r.args as { text?: string } | undefined)?.text === text)?.decision;
    expect(decided('a')).toMatchObject({ effect: 'allow', layer: 'user' });
    expect(decided('c')).toMatchObject({ effect: 'deny', rule: 'org-no-echo', layer: 'managed' });
    expect(decided('e')).toMatchObject({ effect: 'deny', rule: 'org-no-echo', layer: 'managed' });
    const blocked = readAudit(audit).filter((r) => r.type === 'server_blocked');
    expect(blocked.map((r) => r.server)).toEqual(['gx']);
  });
});

describe('managed settings edited while serving', () => {
  /** Resolves on the host's next tools/list_changed notification. */
  function nextListChanged(host: HostSession): Promise<void> {
    return new Promise((resolve) =>
      host.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
  }
  const toolNames = async (host: HostSession) => (await host.client.listTools()).tools.map((t) => t.name);

  it('a broken edit of the managed file while serving is reported, and the last good version stays in force', async () => {
    const managed = managedDir('policies: [org.yaml]\n', {
      'org.yaml': 'rules:\n  - id: org-no-echo\n    match: { tool: echo }\n    action: deny\n',
    });
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture() } });
    const host = await serve(config, managed.env);
    managed.edit('policies: [org.yaml\n');
    await host.waitForStderr('the last good version stays in force');
    expect(host.stderr()).toContain(`${managed.file}:2`);
    const denied = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('org-no-echo');
  });

  it('a server allowed by an edit starts and its tools appear; denied again, it is stopped, its tools leave and it is audited', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    const pidFile = path.join(tempDir(), 'gx.pid');
    const gx = fixture(['--pid-file', pidFile]);
    const denyGx = `servers:\n  deny:\n    - command: ${NODE}\n      args: ${JSON.stringify(gx.args)}\n`;
    const managed = managedDir(denyGx);
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: audit },
      servers: { fx: fixture(), gx },
    });
    const host = await serve(config, managed.env);
    expect(await toolNames(host)).not.toContain('gx__echo');
    expect(existsSync(pidFile)).toBe(false);

    let changed = nextListChanged(host);
    managed.edit(NOTHING);
    await changed;
    await host.waitForStderr('server "gx" is now allowed by managed settings');
    expect(await toolNames(host)).toContain('gx__echo');
    const served = await host.client.callTool({ name: 'gx__echo', arguments: { text: 'allowed now' } });
    expect(textOf(served)).toContain('allowed now');
    const pid = Number(readFileSync(pidFile, 'utf8'));

    changed = nextListChanged(host);
    managed.edit(denyGx);
    await changed;
    const names = await toolNames(host);
    expect(names).not.toContain('gx__echo');
    expect(names).toContain('fx__echo');
    // The model may still hold the tool from an earlier list: it is told why the call cannot go.
    const refused = await host.client.callTool({ name: 'gx__echo', arguments: { text: 'x' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(
      /Upstream server "gx" is not available: it is blocked by managed settings: denied by servers\.deny\[0\]/,
    );
    expect(await waitForExit(pid, 5000)).toBe(true);
    await host.waitForStderr(
      'server "gx" is stopped, it is now blocked by managed settings: denied by servers.deny[0]',
    );
    await host.close();

    const blocked = readAudit(audit).filter((r) => r.type === 'server_blocked');
    // Once at start, once when the edit denied it again.
    expect(blocked.map((r) => r.server)).toEqual(['gx', 'gx']);
    expect(blocked[1]?.reason).toContain(`denied by servers.deny[0] (command: ${NODE}`);
  });

  it('what a host is told of blocked servers follows the edits, for hosts that ask after them', async () => {
    const gx = fixture();
    const managed = managedDir(
      `servers:\n  deny:\n    - command: ${NODE}\n      args: ${JSON.stringify(gx.args)}\n`,
    );
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture(), gx } });
    const gateway = await each.http(config, { env: managed.env });
    const instructions = async () => {
      const answer = await postRpc(
        gateway.url,
        { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope() } },
        { 'Mcp-Protocol-Version': MODERN, 'Mcp-Method': 'server/discover' },
      );
      return String((JSON.parse(answer.text) as { result: { instructions?: string } }).result.instructions);
    };
    expect(await instructions()).toContain('server "gx" is blocked by managed settings');
    managed.edit(NOTHING);
    await gateway.waitForStderr('server "gx" is now allowed by managed settings');
    expect(await instructions()).not.toContain('blocked by managed settings');
  });

  it('managed policy files named by an edit decide the next call, as the managed layer', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    const managed = managedDir(NOTHING, {
      'org.yaml':
        'rules:\n  - id: org-no-echo\n    match: { tool: echo }\n    action: deny\n    reason: Not here.\n',
    });
    const config = writeConfig({ gateway: FAST_GATEWAY, audit: { file: audit }, servers: { fx: fixture() } });
    const host = await serve(config, managed.env);
    const before = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'before' } });
    expect(textOf(before)).toContain('before');

    managed.edit('policies: [org.yaml]\n');
    await host.waitForStderr('reloaded: its policies, server lists, locks and audit minimums are in force');
    const after = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'after' } });
    expect(after.isError).toBe(true);
    expect(textOf(after)).toContain('Not here.');

    // A lock applies from the next call, said with the key and the file.
    managed.edit('policies: [org.yaml]\nlock:\n  confirmation:\n    timeout: 20s\n');
    await host.waitForStderr(
      `${managed.file}:4 lock.confirmation.timeout is now "20s": in force from the next call`,
    );
    // An edit naming a policy file that is not there keeps the policies in force.
    managed.edit('policies: [org.yaml, missing.yaml]\n');
    await host.waitForStderr('the last good version stays in force');
    expect(host.stderr()).toContain(path.join(managed.dir, 'missing.yaml'));
    const still = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'still' } });
    expect(textOf(still)).toContain('Not here.');
    await host.close();
    const calls = readAudit(audit).filter((r) => r.type === 'call');
    expect(calls.map((r) => (r.decision as { layer?: string } | undefined)?.layer)).toEqual([
      'user',
      'managed',
      'managed',
    ]);
  });
});
