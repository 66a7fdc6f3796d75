/**
 * Enterprise-managed settings through the built binary: the managed folder is a temp folder,
 * given as MCP_WARDEN_MANAGED_DIR (the documented way to move it), holding managed.yaml.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  fixture,
  readAudit,
  runCli,
  tempDir,
  textOf,
  waitForExit,
  writeConfig,
  FAST_GATEWAY,
  NODE,
  FIXTURE,
  type HostSession,
} from './harness.js';
import { startOtlpReceiver, type OtlpReceiver } from '../fixtures/otlpReceiver.js';
import { envelope, MODERN } from '../fixtures/modernHost.js';
import { postRpc, startHttpGateway } from './httpHarness.js';

const sessions: HostSession[] = [];
const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/** The audit records an OTLP receiver got as logs (the sink's `warden` format: the record line). */
function shippedRecords(receiver: OtlpReceiver): Record<string, unknown>[] {
  type LogsExport = {
    resourceLogs?: { scopeLogs?: { logRecords?: { body?: { stringValue?: string } }[] }[] }[];
  };
  return receiver.received
    .filter((r) => r.path === '/v1/logs')
    .flatMap((r) => (JSON.parse(r.body.toString('utf8')) as LogsExport).resourceLogs ?? [])
    .flatMap((rl) => (rl.scopeLogs ?? []).flatMap((sl) => sl.logRecords ?? []))
    .map((lr) => JSON.parse(lr.body?.stringValue ?? '{}') as Record<string, unknown>);
}

/** A managed folder with managed.yaml (and any policy files it names). */
function managedDir(yaml: string, files: Record<string, string> = {}): string {
  const dir = tempDir('warden-managed-');
  writeFileSync(path.join(dir, 'managed.yaml'), yaml);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

/** A script named `node` elsewhere that runs the real node: same basename, different program. */
function lookalikeNode(): string {
  const dir = tempDir('warden-lookalike-');
  const file = path.join(dir, 'node');
  writeFileSync(file, `#!/bin/sh\nexec ${NODE} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('managed server allow and deny lists', () => {
  it('blocks a disallowed npx package, a denied URL and a lookalike command; the allowed server serves', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    const dir = managedDir(`
servers:
  allow:
    - command: node
    - npm: "@modelcontextprotocol/server-memory"
  deny:
    - url: https://tools.example.com/mcp
`);
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: audit },
      servers: {
        fx: fixture(),
        notallowed: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] },
        remote: { url: 'https://tools.example.com/mcp/team' },
        lookalike: { command: lookalikeNode(), args: [FIXTURE] },
      },
    });
    const env = { MCP_WARDEN_MANAGED_DIR: dir };

    const host = await connectHost(config, { env });
    sessions.push(host);
    const tools = await host.client.listTools();
    expect(tools.tools.map((t) => t.name).every((name) => name.startsWith('fx__'))).toBe(true);
    expect(tools.tools.length).toBeGreaterThan(0);
    // The host is told why, not left with missing tools.
    const instructions = host.client.getInstructions() ?? '';
    expect(instructions).toContain('server "notallowed" is blocked by managed settings');
    expect(instructions).toContain('server "lookalike" is blocked by managed settings');
    expect(instructions).toMatch(
      /server "remote" is blocked by managed settings: denied by servers\.deny\[0\] \(url: https:\/\/tools\.example\.com\/mcp\)/,
    );
    const called = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'hi' } });
    expect(textOf(called)).toContain('hi');
    await host.close();

    const blocked = readAudit(audit).filter((r) => r.type === 'server_blocked');
    expect(blocked.map((r) => r.server).sort()).toEqual(['lookalike', 'notallowed', 'remote']);
    expect(blocked.every((r) => r.managed === path.join(dir, 'managed.yaml'))).toBe(true);

    const listing = await runCli(['tools', '--config', config], env);
    expect(listing.code).toBe(1);
    expect(listing.stdout).toMatch(/notallowed[\s\S]*blocked by managed settings: not on the allow list/);
    expect(listing.stdout).toMatch(/lookalike[\s\S]*blocked by managed settings/);
    expect(listing.stdout).toContain('fx__echo');

    const checked = await runCli(['check', '--config', config], env);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain('server "remote" is blocked by managed settings');
    expect(checked.stdout).toContain(`layers: managed ${path.join(dir, 'managed.yaml')}`);
    // Administrators are reminded that the host's own server list must be locked too.
    expect(checked.stdout).toContain("lock each host's own server list too");
  });

  it('a denied npm package is blocked whatever version or launcher flags are written', async () => {
    const dir = managedDir(`
servers:
  deny:
    - npm: "@modelcontextprotocol/server-filesystem"
`);
    const config = writeConfig({
      servers: {
        a: { command: 'npx', args: ['--yes', '@modelcontextprotocol/server-filesystem@2026.8.31', '/tmp'] },
        b: {
          command: 'npx',
          args: ['-p', '@modelcontextprotocol/server-filesystem', 'mcp-server-filesystem', '/tmp'],
        },
        fx: fixture(),
      },
    });
    const checked = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: dir });
    expect(checked.stdout).toContain(
      'server "a" is blocked by managed settings and will not be started: denied by servers.deny[0]',
    );
    expect(checked.stdout).toContain(
      'server "b" is blocked by managed settings and will not be started: denied by servers.deny[0]',
    );
    expect(checked.stdout).not.toContain('server "fx" is blocked');
  });

  it('a denied npm package is blocked behind a shell, env or npm x too', async () => {
    const dir = managedDir('servers:\n  deny:\n    - npm: "@modelcontextprotocol/server-filesystem"\n');
    const config = writeConfig({
      servers: {
        shell: { command: 'sh', args: ['-c', 'npx -y @modelcontextprotocol/server-filesystem /tmp'] },
        wrapped: {
          command: 'env',
          args: ['A=1', 'npx', '-y', '@modelcontextprotocol/server-filesystem', '/tmp'],
        },
        npmx: { command: 'npm', args: ['x', '@modelcontextprotocol/server-filesystem', '/tmp'] },
        fx: fixture(),
      },
    });
    const checked = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: dir });
    for (const name of ['shell', 'wrapped', 'npmx'])
      expect(checked.stdout).toContain(
        `server "${name}" is blocked by managed settings and will not be started: denied by servers.deny[0]`,
      );
    expect(checked.stdout).not.toContain('server "fx" is blocked');
  });

  it('an allowed npm package runs only as itself: a launcher form or env that could run other code is refused, saying why', async () => {
    const work = tempDir();
    const marker = path.join(work, 'user-code-ran');
    const evil = path.join(work, 'evil.cjs');
    writeFileSync(evil, `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`);
    const dir = managedDir(`
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
    const host = await connectHost(config, { env: { MCP_WARDEN_MANAGED_DIR: dir } });
    sessions.push(host);
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
  it('a user config without an audit trail is refused: the managed trail is written anyway', async () => {
    const audit = path.join(tempDir(), 'org-audit.jsonl');
    const dir = managedDir(`
audit:
  required: true
  file: ${audit}
  onFailure: block
`);
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture() } });
    const env = { MCP_WARDEN_MANAGED_DIR: dir };
    const checked = await runCli(['check', '--config', config], env);
    expect(checked.stdout).toContain('the config has no audit: section');
    expect(checked.stdout).toContain(
      `${path.join(dir, 'managed.yaml')}:3 audit.required requires one: auditing to ${audit}`,
    );

    const host = await connectHost(config, { env });
    sessions.push(host);
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    await host.close();
    const types = readAudit(audit).map((r) => r.type);
    // Written ahead of the call: the block mode the managed file asks for.
    expect(types).toContain('call_start');
    expect(types).toContain('call');
  });

  it('relaxing onFailure is refused, with the managed value kept', async () => {
    const mine = path.join(tempDir(), 'mine.jsonl');
    const dir = managedDir(`
audit:
  onFailure: block
`);
    const config = writeConfig(
      `gateway:\n  startupTimeout: 5s\naudit:\n  file: ${mine}\n  onFailure: continue\nservers:\n  fx:\n    command: ${NODE}\n    args: [${JSON.stringify(FIXTURE)}]\n`,
    );
    const env = { MCP_WARDEN_MANAGED_DIR: dir };
    const checked = await runCli(['check', '--config', config], env);
    expect(checked.stdout).toMatch(
      new RegExp(
        `proxy\\.config\\.yaml:5:14: audit\\.onFailure: refused: .*managed\\.yaml:3 audit\\.onFailure requires "block"`,
      ),
    );
    const host = await connectHost(config, { env });
    sessions.push(host);
    await host.waitForStderr('audit.onFailure: refused');
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    await host.close();
    // call_start records exist only in block mode: the user's "continue" did not win.
    expect(readAudit(mine).map((r) => r.type)).toContain('call_start');
  });

  it('a locked setting keeps the managed value and says so', async () => {
    const dir = managedDir(`
lock:
  confirmation:
    timeout: 20s
`);
    const config = writeConfig('confirmation:\n  timeout: 90s\nservers:\n  fx:\n    command: node\n');
    const checked = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: dir });
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(
      `confirmation.timeout: refused: ${path.join(dir, 'managed.yaml')}:4 lock.confirmation.timeout locks this setting to "20s", which is used instead of "90s"`,
    );
  });

  it('a server entry cannot undo a gateway lock: validation stays on and a longer timeout is cut to the managed one, with file:line', async () => {
    const dir = managedDir(`
lock:
  gateway:
    validateArguments: true
    timeout: 800ms
    repair:
      invalidStructured: error
`);
    const config = writeConfig(
      [
        'gateway:',
        '  startupTimeout: 5s',
        'servers:',
        '  fx:',
        `    command: ${NODE}`,
        `    args: [${JSON.stringify(FIXTURE)}]`,
        '    validateArguments: false',
        '    timeout: 60s',
        '    repair:',
        '      invalidStructured: "off"',
        '    tools:',
        '      timeouts:',
        '        hang: 90s',
        '        echo: 200ms',
        '',
      ].join('\n'),
    );
    const env = { MCP_WARDEN_MANAGED_DIR: dir };
    const managedFile = path.join(dir, 'managed.yaml');
    const checked = await runCli(['check', '--config', config], env);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(
      `proxy.config.yaml:7:24: servers.fx.validateArguments: refused: server "fx" validateArguments false would undo ${managedFile}:4 lock.gateway.validateArguments, which locks it to true; true is used instead (only true may be set here)`,
    );
    expect(checked.stdout).toContain(
      `proxy.config.yaml:8:14: servers.fx.timeout: refused: server "fx" timeout "60s" would outlast ${managedFile}:5 lock.gateway.timeout, which locks it to "800ms"; "800ms" is used instead (a shorter value may be set here)`,
    );
    expect(checked.stdout).toContain(
      'servers.fx.tools.timeouts.hang: refused: server "fx" tools.timeouts "hang" "90s" would outlast',
    );
    expect(checked.stdout).toContain('servers.fx.repair.invalidStructured: refused');
    // A shorter one narrows the managed value and stays.
    expect(checked.stdout).not.toContain('tools.timeouts.echo');

    const host = await connectHost(config, { env });
    sessions.push(host);
    await host.waitForStderr('servers.fx.validateArguments: refused');
    const invalid = await host.client.callTool({ name: 'fx__add', arguments: { a: 'one', b: 2 } });
    expect(textOf(invalid)).toContain('Invalid arguments for tool "add" on server "fx"');
    const slow = await host.client.callTool({ name: 'fx__hang', arguments: {} });
    expect(textOf(slow)).toMatch(/timed out: no answer or progress for 800 ?ms/);
  });

  it('an invalid locked value is reported at the managed file and stops the gateway', async () => {
    const dir = managedDir('lock:\n  confirmation:\n    timeout: 20\n');
    const config = writeConfig('servers:\n  fx:\n    command: node\n');
    const checked = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: dir });
    expect(checked.code).toBe(2);
    expect(checked.stderr).toContain(`${path.join(dir, 'managed.yaml')}:3`);
    expect(checked.stderr).toContain('lock.confirmation.timeout');
  });
});

describe('the managed trail against user audit settings', () => {
  it('a redaction pattern matching everything and a tiny rotation are refused: every record is kept, readable, also at the sink', async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const work = tempDir();
    const trail = path.join(work, 'org-audit.jsonl');
    const dir = managedDir(`
audit:
  required: true
  file: ${trail}
  sinks:
    - name: org-siem
      type: otlp
      endpoint: ${receiver.endpoint}/v1/logs
`);
    const config = writeConfig(
      [
        'gateway:',
        '  startupTimeout: 5s',
        'audit:',
        `  file: ${trail}`,
        '  maxSize: 1KiB',
        '  maxFiles: 1',
        '  redact:',
        "    patterns: ['[\\s\\S]+', 'sk-live-[a-z0-9]+']",
        ...fxServerLines(),
      ].join('\n'),
      work,
    );
    const env = { MCP_WARDEN_MANAGED_DIR: dir };
    const checked = await runCli(['check', '--config', config], env);
    expect(checked.code).toBe(0);
    const managedFile = path.join(dir, 'managed.yaml');
    expect(checked.stdout).toContain(
      `proxy.config.yaml:8:16: audit.redact.patterns[0]: refused: the redaction pattern "[\\s\\S]+" also matches "call", a word every audit record is made of, so it would blank the trail ${managedFile}:3 audit requires`,
    );
    expect(checked.stdout).toMatch(
      /proxy\.config\.yaml:5:\d+: audit\.maxSize: refused: rotating at 1024 bytes would delete records/,
    );
    expect(checked.stdout).toMatch(
      /proxy\.config\.yaml:6:\d+: audit\.maxFiles: refused: keeping 1 rotated file\(s\) would delete records/,
    );
    expect(checked.stdout).not.toContain('patterns[1]');

    const host = await connectHost(config, { env });
    sessions.push(host);
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

describe('a managed audit retention', () => {
  it('refuses a user rotation below it, naming the managed line, and a bad value in it with file and line', async () => {
    const work = tempDir();
    const trail = path.join(work, 'org-audit.jsonl');
    const dir = managedDir(`
audit:
  required: true
  file: ${trail}
  retention:
    maxSize: 100MiB
    maxFiles: 10
`);
    const config = writeConfig(
      ['audit:', `  file: ${trail}`, '  maxSize: 60MiB', '  maxFiles: 7', ...fxServerLines()].join('\n'),
      work,
    );
    const managedFile = path.join(dir, 'managed.yaml');
    const checked = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: dir });
    expect(checked.code).toBe(0);
    expect(checked.stdout).toMatch(
      new RegExp(
        `proxy\\.config\\.yaml:3:\\d+: audit\\.maxSize: refused: rotating at 62914560 bytes would delete records .*; the least ${escapeRegExp(managedFile)}:6 audit\\.retention\\.maxSize sets, 104857600 bytes, is used`,
      ),
    );
    expect(checked.stdout).toMatch(
      new RegExp(
        `proxy\\.config\\.yaml:4:\\d+: audit\\.maxFiles: refused: keeping 7 rotated file\\(s\\) would delete records .*; the least ${escapeRegExp(managedFile)}:7 audit\\.retention\\.maxFiles sets, 10, is used`,
      ),
    );

    const bad = managedDir(`
audit:
  required: true
  retention:
    maxSize: 32MB
    keep: forever
`);
    const refused = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: bad });
    expect(refused.code).not.toBe(0);
    const output = refused.stdout + refused.stderr;
    expect(output).toContain(`${path.join(bad, 'managed.yaml')}:5:`);
    expect(output).toMatch(/audit\.retention\.maxSize: invalid size "32MB"/);
    expect(output).toMatch(/audit\.retention\.keep: unknown key "keep"; retention has maxSize, maxFiles/);
  });
});

/** A config's `servers:` section with the fixture as `fx`, as YAML lines (and the final newline). */
function fxServerLines(): string[] {
  return ['servers:', '  fx:', `    command: ${NODE}`, `    args: [${JSON.stringify(FIXTURE)}]`, ''];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('managed audit sinks', () => {
  it('a managed sink gets the records though the user config says nothing of it; a user entry that redirects it is refused', async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const dir = managedDir(`
audit:
  sinks:
    - name: org-siem
      type: otlp
      endpoint: ${receiver.endpoint}/v1/logs
      required: true
`);
    const managedFile = path.join(dir, 'managed.yaml');
    const env = { MCP_WARDEN_MANAGED_DIR: dir };
    const echoCalls = (text: string) =>
      shippedRecords(receiver).filter(
        (r) => r.type === 'call' && JSON.stringify(r.arguments ?? r).includes(text),
      );

    // The user's config has an audit trail and no sinks at all.
    const quiet = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: './audit.jsonl' },
      servers: { fx: fixture() },
    });
    const shown = await runCli(['managed', 'show'], env);
    expect(shown.stdout).toContain(
      `sink "org-siem" (otlp ${receiver.endpoint}/v1/logs, required), always added`,
    );
    const host = await connectHost(quiet, { env });
    sessions.push(host);
    await host.client.callTool({ name: 'fx__echo', arguments: { text: 'first-session' } });
    await receiver.until(() => echoCalls('first-session').length === 1, 'the call of the first session');
    await host.close();

    // The user's config points a sink of that name elsewhere, optional, and relaxes onFailure.
    const redirecting = writeConfig(
      `gateway:\n  startupTimeout: 5s\naudit:\n  file: ./audit.jsonl\n  onFailure: continue\n  sinks:\n    - name: org-siem\n      type: otlp\n      endpoint: http://127.0.0.1:9/v1/logs\n      required: false\nservers:\n  fx:\n    command: ${NODE}\n    args: [${JSON.stringify(FIXTURE)}]\n`,
    );
    const checked = await runCli(['check', '--config', redirecting], env);
    expect(checked.stdout).toContain(
      `proxy.config.yaml:7:7: audit.sinks[0]: refused: the sink "org-siem" is set by ${managedFile}:4 audit.sinks[0] and cannot be changed or made optional here; the managed sink is used instead`,
    );
    expect(checked.stdout).toContain(
      `audit.onFailure: refused: onFailure: continue would serve calls the required managed sink "org-siem" cannot take; ${managedFile}:4 audit.sinks[0].required requires "block"`,
    );
    const second = await connectHost(redirecting, { env });
    sessions.push(second);
    await second.waitForStderr('the sink "org-siem" is set by');
    await second.client.callTool({ name: 'fx__echo', arguments: { text: 'second-session' } });
    await receiver.until(() => echoCalls('second-session').length === 1, 'the call of the refused config');
    await second.close();
    // Block mode (the managed sink is required) writes call_start records too.
    expect(readAudit(path.join(path.dirname(redirecting), 'audit.jsonl')).map((r) => r.type)).toContain(
      'call_start',
    );
  });

  it('a managed sink the schema refuses is reported at the managed file, and nothing starts', async () => {
    const dir = managedDir(
      'audit:\n  sinks:\n    - name: org\n      type: otlp\n      endpoint: ftp://siem/logs\n',
    );
    const config = writeConfig({ audit: { file: './audit.jsonl' }, servers: { fx: fixture() } });
    const checked = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: dir });
    expect(checked.code).toBe(2);
    expect(checked.stderr).toContain(`${path.join(dir, 'managed.yaml')}:3`);
    expect(checked.stderr).toContain('audit.sinks[0].endpoint');
  });
});

describe('a broken managed file', () => {
  it('refuses to start, naming the file and line, and starts no server', async () => {
    const marker = path.join(tempDir(), 'started');
    const dir = managedDir('servers:\n  allow:\n    - npm: ok\n  deny: nope\n');
    const config = writeConfig({ servers: { fx: fixture(['--pid-file', marker]) } });
    const env = { MCP_WARDEN_MANAGED_DIR: dir };
    const served = await runCli(['--config', config], env);
    expect(served.code).toBe(2);
    expect(served.stderr).toContain('invalid managed settings');
    expect(served.stderr).toContain(`${path.join(dir, 'managed.yaml')}:4`);
    expect(served.stderr).toContain('servers.deny');
    expect(existsSync(marker)).toBe(false);
    const checked = await runCli(['check', '--config', config], env);
    expect(checked.code).toBe(2);
    const shown = await runCli(['managed', 'show'], env);
    expect(shown.code).toBe(2);
  });

  it('check --managed tries a file before it is rolled out', async () => {
    const candidate = path.join(tempDir(), 'candidate.yaml');
    writeFileSync(candidate, 'servers:\n  deny:\n    - command: node\n');
    const config = writeConfig({ servers: { fx: fixture() } });
    const checked = await runCli(['check', '--config', config, '--managed', candidate]);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(
      'server "fx" is blocked by managed settings and will not be started: denied by servers.deny[0] (command: node)',
    );
    const shown = await runCli(['managed', 'show', '--managed', candidate]);
    expect(shown.stdout).toContain(`managed settings from ${candidate}`);
    expect(shown.stdout).toContain('servers.deny[0] (command: node)');
  });
});

describe('managed policies', () => {
  it('a managed rule wins over a user rule that would allow, and the audit says which layer decided', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    const dir = managedDir('policies: [org.yaml]\n', {
      'org.yaml':
        'rules:\n  - id: org-no-echo\n    match: { tool: echo }\n    action: deny\n    reason: The organisation does not allow echo.\n',
    });
    const userDir = tempDir();
    writeFileSync(
      path.join(userDir, 'mine.yaml'),
      'rules:\n  - id: my-echo\n    match: { tool: echo }\n    action: allow\n',
    );
    const config = writeConfig(
      { gateway: FAST_GATEWAY, audit: { file: audit }, policies: ['mine.yaml'], servers: { fx: fixture() } },
      userDir,
    );
    const env = { MCP_WARDEN_MANAGED_DIR: dir };
    const host = await connectHost(config, { env });
    sessions.push(host);
    const denied = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('The organisation does not allow echo.');
    await host.close();
    const call = readAudit(audit).find((r) => r.type === 'call');
    expect(call?.decision).toMatchObject({ effect: 'deny', rule: 'org-no-echo', layer: 'managed' });

    const explained = await runCli(['policy', 'explain', '--config', config, 'fx__echo'], env);
    expect(explained.stdout).toContain('decision: DENY by rule "org-no-echo"');
    expect(explained.stdout).toContain('managed layer');
  });

  it('a broken edit of the managed file while serving is reported, and the last good version stays in force', async () => {
    const dir = managedDir('policies: [org.yaml]\n', {
      'org.yaml': 'rules:\n  - id: org-no-echo\n    match: { tool: echo }\n    action: deny\n',
    });
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture() } });
    const host = await connectHost(config, { env: { MCP_WARDEN_MANAGED_DIR: dir } });
    sessions.push(host);
    writeFileSync(path.join(dir, 'managed.yaml'), 'policies: [org.yaml\n');
    await host.waitForStderr('the last good version stays in force');
    expect(host.stderr()).toContain(`${path.join(dir, 'managed.yaml')}:2`);
    const denied = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'x' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('org-no-echo');
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

  it('a server allowed by an edit starts and its tools appear; denied again, it is stopped, its tools leave and it is audited', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    const pidFile = path.join(tempDir(), 'gx.pid');
    const gx = fixture(['--pid-file', pidFile]);
    const denyGx = `servers:\n  deny:\n    - command: ${NODE}\n      args: ${JSON.stringify(gx.args)}\n`;
    const dir = managedDir(denyGx);
    const managedFile = path.join(dir, 'managed.yaml');
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      audit: { file: audit },
      servers: { fx: fixture(), gx },
    });
    const host = await connectHost(config, { env: { MCP_WARDEN_MANAGED_DIR: dir } });
    sessions.push(host);
    expect(await toolNames(host)).not.toContain('gx__echo');
    expect(existsSync(pidFile)).toBe(false);

    let changed = nextListChanged(host);
    writeFileSync(managedFile, 'servers:\n  deny: []\n');
    await changed;
    await host.waitForStderr('server "gx" is now allowed by managed settings');
    expect(await toolNames(host)).toContain('gx__echo');
    const served = await host.client.callTool({ name: 'gx__echo', arguments: { text: 'allowed now' } });
    expect(textOf(served)).toContain('allowed now');
    const pid = Number(readFileSync(pidFile, 'utf8'));

    changed = nextListChanged(host);
    writeFileSync(managedFile, denyGx);
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
    const dir = managedDir(
      `servers:\n  deny:\n    - command: ${NODE}\n      args: ${JSON.stringify(gx.args)}\n`,
    );
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture(), gx } });
    const gateway = await startHttpGateway(config, { env: { MCP_WARDEN_MANAGED_DIR: dir } });
    try {
      const instructions = async () => {
        const answer = await postRpc(
          gateway.url,
          { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope() } },
          { 'Mcp-Protocol-Version': MODERN, 'Mcp-Method': 'server/discover' },
        );
        return String((JSON.parse(answer.text) as { result: { instructions?: string } }).result.instructions);
      };
      expect(await instructions()).toContain('server "gx" is blocked by managed settings');
      writeFileSync(path.join(dir, 'managed.yaml'), 'servers:\n  deny: []\n');
      await gateway.waitForStderr('server "gx" is now allowed by managed settings');
      expect(await instructions()).not.toContain('blocked by managed settings');
    } finally {
      await gateway.stop();
    }
  });

  it('managed policy files named by an edit decide the next call, as the managed layer', async () => {
    const audit = path.join(tempDir(), 'audit.jsonl');
    const dir = managedDir('servers:\n  deny: []\n', {
      'org.yaml':
        'rules:\n  - id: org-no-echo\n    match: { tool: echo }\n    action: deny\n    reason: Not here.\n',
    });
    const config = writeConfig({ gateway: FAST_GATEWAY, audit: { file: audit }, servers: { fx: fixture() } });
    const host = await connectHost(config, { env: { MCP_WARDEN_MANAGED_DIR: dir } });
    sessions.push(host);
    const before = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'before' } });
    expect(textOf(before)).toContain('before');

    writeFileSync(path.join(dir, 'managed.yaml'), 'policies: [org.yaml]\n');
    await host.waitForStderr('reloaded: its policies, server lists, locks and audit minimums are in force');
    const after = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'after' } });
    expect(after.isError).toBe(true);
    expect(textOf(after)).toContain('Not here.');

    // A lock applies from the next call, said with the key and the file.
    writeFileSync(
      path.join(dir, 'managed.yaml'),
      'policies: [org.yaml]\nlock:\n  confirmation:\n    timeout: 20s\n',
    );
    await host.waitForStderr(
      `${path.join(dir, 'managed.yaml')}:4 lock.confirmation.timeout is now "20s": in force from the next call`,
    );
    // An edit naming a policy file that is not there keeps the policies in force.
    writeFileSync(path.join(dir, 'managed.yaml'), 'policies: [org.yaml, missing.yaml]\n');
    await host.waitForStderr('the last good version stays in force');
    expect(host.stderr()).toContain(path.join(dir, 'missing.yaml'));
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
