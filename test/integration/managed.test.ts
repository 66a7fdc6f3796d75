/**
 * Enterprise-managed settings through the built binary: the managed folder is a temp folder,
 * given as MCP_WARDEN_MANAGED_DIR (the documented way to move it), holding managed.yaml. One
 * gateway reads a real managed file at start end to end; the rest is what the commands (`check`,
 * `tools`, `managed show`, `policy explain`) print and a gateway that refuses to start. What a
 * served gateway does with the same files is in test/inprocess/managed.test.ts and, for edits
 * while serving, test/inprocess/managedLive.test.ts.
 */
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  fixture,
  readAudit,
  runCli,
  tempDir,
  textOf,
  writeConfig,
  FAST_GATEWAY,
  NODE,
  FIXTURE,
  type HostSession,
} from './harness.js';
import {
  fxServerLines,
  managedDir,
  managedRuleOverUserSetup,
  managedSinkSetup,
  relaxedOnFailureSetup,
  serverEntryAgainstLockSetup,
  trailRequiredSetup,
  userAuditAgainstTrailSetup,
} from './managedSetup.js';

const sessions: HostSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

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
    const { dir } = managedDir(`
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
    const { dir } = managedDir(`
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
    const { dir } = managedDir('servers:\n  deny:\n    - npm: "@modelcontextprotocol/server-filesystem"\n');
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
});

describe('managed audit minimums and locks', () => {
  it('check says a user config without an audit trail is refused, naming the managed trail', async () => {
    const { audit, managed, config } = trailRequiredSetup();
    const checked = await runCli(['check', '--config', config], managed.env);
    expect(checked.stdout).toContain('the config has no audit: section');
    expect(checked.stdout).toContain(`${managed.file}:3 audit.required requires one: auditing to ${audit}`);
  });

  it('check says relaxing onFailure is refused, naming the managed line', async () => {
    const { managed, config } = relaxedOnFailureSetup();
    const checked = await runCli(['check', '--config', config], managed.env);
    expect(checked.stdout).toMatch(
      new RegExp(
        `proxy\\.config\\.yaml:5:14: audit\\.onFailure: refused: .*managed\\.yaml:3 audit\\.onFailure requires "block"`,
      ),
    );
  });

  it('a locked setting keeps the managed value and says so', async () => {
    const { dir } = managedDir(`
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

  it('check says a server entry cannot undo a gateway lock: each refused value with file:line, a shorter one kept', async () => {
    const { managed, config } = serverEntryAgainstLockSetup();
    const managedFile = managed.file;
    const checked = await runCli(['check', '--config', config], managed.env);
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
  });

  it('an invalid locked value is reported at the managed file and stops the gateway', async () => {
    const { dir } = managedDir('lock:\n  confirmation:\n    timeout: 20\n');
    const config = writeConfig('servers:\n  fx:\n    command: node\n');
    const checked = await runCli(['check', '--config', config], { MCP_WARDEN_MANAGED_DIR: dir });
    expect(checked.code).toBe(2);
    expect(checked.stderr).toContain(`${path.join(dir, 'managed.yaml')}:3`);
    expect(checked.stderr).toContain('lock.confirmation.timeout');
  });
});

describe('the managed trail against user audit settings', () => {
  it('check says a redaction pattern matching everything and a tiny rotation are refused, naming the managed trail', async () => {
    // Nothing is shipped by check: the sink's address is never dialled.
    const { managed, config } = userAuditAgainstTrailSetup('http://127.0.0.1:9');
    const checked = await runCli(['check', '--config', config], managed.env);
    expect(checked.code).toBe(0);
    const managedFile = managed.file;
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
  });
});

describe('a managed audit retention', () => {
  it('refuses a user rotation below it, naming the managed line, and a bad value in it with file and line', async () => {
    const work = tempDir();
    const trail = path.join(work, 'org-audit.jsonl');
    const { dir } = managedDir(`
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

    const { dir: bad } = managedDir(`
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

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('managed audit sinks', () => {
  it('managed show and check name a managed sink; a user entry that redirects it is refused', async () => {
    // Nothing is shipped by these commands: the sink's address is never dialled.
    const endpoint = 'http://127.0.0.1:9';
    const { managed, redirecting } = managedSinkSetup(endpoint);
    const shown = await runCli(['managed', 'show'], managed.env);
    expect(shown.stdout).toContain(`sink "org-siem" (otlp ${endpoint}/v1/logs, required), always added`);
    const checked = await runCli(['check', '--config', redirecting], managed.env);
    expect(checked.stdout).toContain(
      `proxy.config.yaml:7:7: audit.sinks[0]: refused: the sink "org-siem" is set by ${managed.file}:4 audit.sinks[0] and cannot be changed or made optional here; the managed sink is used instead`,
    );
    expect(checked.stdout).toContain(
      `audit.onFailure: refused: onFailure: continue would serve calls the required managed sink "org-siem" cannot take; ${managed.file}:4 audit.sinks[0].required requires "block"`,
    );
  });

  it('a managed sink the schema refuses is reported at the managed file, and nothing starts', async () => {
    const { dir } = managedDir(
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
    const { dir } = managedDir('servers:\n  allow:\n    - npm: ok\n  deny: nope\n');
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
  it('policy explain says a managed rule wins over a user rule that would allow, as the managed layer', async () => {
    const { managed, config } = managedRuleOverUserSetup();
    const explained = await runCli(['policy', 'explain', '--config', config, 'fx__echo'], managed.env);
    expect(explained.stdout).toContain('decision: DENY by rule "org-no-echo"');
    expect(explained.stdout).toContain('managed layer');
  });
});
