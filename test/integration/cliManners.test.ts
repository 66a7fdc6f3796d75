/**
 * How the binary talks to a person, run as a script would run it (no terminal): each command's
 * own help, exit codes that match it, counts in the right number, a warning for a command not on
 * PATH, reasons for servers that are not available, `pins accept` needing --all and leaving an
 * audit record, and a missing audit log being an error. The terminal side (prompt, progress,
 * colour) is in terminal.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, pinsAndAuditConfig, runCli, tempDir, writeConfig } from './harness.js';

const ESC = '\u001b[';

describe('help', () => {
  it('check --help prints the help of check, with the exit codes it really uses', async () => {
    const { code, stdout } = await runCli(['check', '--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: mcp-warden check --config FILE \[--live\] \[--managed FILE\]\n/);
    expect(stdout).toContain('Exit codes: 0 valid (warnings allowed); 2 invalid');
    expect(stdout).not.toContain('mcp-warden tools --config FILE');
  });

  it('every command has its own help; help COMMAND says the same', async () => {
    for (const command of ['tools', 'pins', 'audit', 'policy', 'serve', 'managed']) {
      const { stdout } = await runCli([command, '--help']);
      expect(stdout).toMatch(new RegExp(`^Usage: mcp-warden (\\[)?${command}`));
      expect((await runCli(['help', command])).stdout).toBe(stdout);
    }
  });

  it('the global help no longer says check exits 1 on an invalid config, and check exits 2', async () => {
    const { stdout } = await runCli(['--help']);
    expect(stdout).not.toMatch(/check.*exit 1/);
    expect(stdout).toMatch(/2 bad usage, an\s+invalid config/);
    const config = writeConfig('servers:\n  a: { comand: x }\n');
    expect((await runCli(['check', '--config', config])).code).toBe(2);
  });

  it('a usage error in a command shows that command’s help', async () => {
    const { code, stderr } = await runCli(['audit', 'frob', 'x']);
    expect(code).toBe(2);
    expect(stderr).toContain('Usage: mcp-warden audit verify FILE');
  });
});

describe('check', () => {
  it('warns, without failing, about a command not found on the PATH the gateway would use', async () => {
    const config = writeConfig({ servers: { up: fixture(), typo: { command: 'warden-npxx-not-here' } } });
    const { code, stdout } = await runCli(['check', '--config', config], { PATH: '/usr/bin:/bin' });
    expect(code).toBe(0);
    expect(stdout).toMatch(
      new RegExp(
        `^warning: ${config}:\\d+: server "typo": command not found: "warden-npxx-not-here" \\(searched PATH: /usr/bin:/bin\\)`,
        'm',
      ),
    );
    expect(stdout).toContain('ok (2 servers, 2 enabled; no policy files; 1 warning)');
  });

  it('counts in the right number: 1 policy file, 1 rule', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'one.yaml'),
      'rules:\n  - id: r\n    match: { tool: "*" }\n    action: allow\n',
    );
    const config = writeConfig({ policies: ['./one.yaml'], servers: { up: fixture() } }, dir);
    const { code, stdout } = await runCli(['check', '--config', config]);
    expect(code).toBe(0);
    expect(stdout).toBe(`${config}: ok (1 server, 1 enabled; 1 policy file, 1 rule)\n`);
  });

  it('refuses a bare number as a duration, saying what to write', async () => {
    const config = writeConfig('gateway:\n  startupTimeout: 10\nservers:\n  a: { command: x }\n');
    const { code, stderr } = await runCli(['check', '--config', config]);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `${config}:2:19: gateway.startupTimeout: a number without a unit is not accepted here: read as milliseconds, 10 would stop waiting for the servers to start after 10 ms; write "10s" (that is, 10000ms) for seconds, or "10ms" if that is meant`,
    );
  });
});

describe('tools', () => {
  it('says why a server is unavailable, and how many tools the policy hides', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'hide.yaml'),
      'rules:\n  - id: no-add\n    match: { server: up, tool: add }\n    action: deny\n',
    );
    const config = writeConfig(
      {
        gateway: { ...FAST_GATEWAY, startupTimeout: '1s' },
        policies: ['./hide.yaml'],
        servers: { up: fixture(), slow: fixture(['--hang-on-initialize']) },
      },
      dir,
    );
    const { code, stdout, stderr } = await runCli(['tools', '--config', config]);
    expect(code).toBe(1);
    expect(stdout).toContain(
      'server slow: unavailable, 0 tools: still starting when gateway.startupTimeout (1s) passed',
    );
    expect(stdout).toMatch(/^\d+ tools from 1\/2 servers; 1 hidden by policy/m);
    expect(stdout).not.toContain('up__add');
    // Not a terminal: no progress lines, and no colour.
    expect(stderr).not.toContain('starting');
    expect(stdout).not.toContain(ESC);
  });
});

describe('pins diff', () => {
  it('says how many of the compared tools the policy hides, and why a server was not compared', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'hide.yaml'),
      'rules:\n  - id: no-add\n    match: { server: fx, tool: add }\n    action: deny\n',
    );
    const config = writeConfig(
      {
        gateway: { ...FAST_GATEWAY, startupTimeout: '1s' },
        policies: ['./hide.yaml'],
        pins: { file: './tool-pins.json' },
        servers: { fx: fixture(), slow: fixture(['--hang-on-initialize']) },
      },
      dir,
    );
    const { code, stdout } = await runCli(['pins', 'diff', '--config', config]);
    expect(code).toBe(1);
    expect(stdout).toContain('1 of the tools compared is hidden from the host by policy');
    expect(stdout).toContain(
      'server slow: unavailable: still starting when gateway.startupTimeout (1s) passed; its tools were not compared',
    );
  });
});

describe('pins accept', () => {
  it('without SERVER[/TOOL] and not on a terminal, needs --all and pins nothing', async () => {
    const { config, pinsFile } = pinsAndAuditConfig();
    const { code, stderr } = await runCli(['pins', 'accept', '--config', config]);
    expect(code).toBe(2);
    expect(stderr).toContain('not on a terminal, say so with --all');
    expect(() => readFileSync(pinsFile)).toThrow(/ENOENT/);
  });

  it('--all accepts every change, and each acceptance is in the audit log with who accepted it', async () => {
    const { config, pinsFile, auditFile } = pinsAndAuditConfig();
    const { code, stdout } = await runCli(['pins', 'accept', '--all', '--config', config]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\d+ tools pinned in /m);
    const pinned = Object.keys(
      (JSON.parse(readFileSync(pinsFile, 'utf8')) as { pins: Record<string, object> }).pins['fx'] ?? {},
    );
    const records = readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const accepted = records.filter((r) => r.type === 'tool_pinned');
    expect(accepted.map((r) => r.upstreamTool).sort()).toEqual([...pinned].sort());
    for (const record of accepted)
      expect(record).toMatchObject({ server: 'fx', how: 'accepted', by: userInfo().username });
    // The trail it writes to is one chain: verify says so.
    expect((await runCli(['audit', 'verify', auditFile])).code).toBe(0);
  });

  it('refuses --all next to SERVER[/TOOL] arguments', async () => {
    const { config } = pinsAndAuditConfig();
    const { code, stderr } = await runCli(['pins', 'accept', '--all', '--config', config, 'fx']);
    expect(code).toBe(2);
    expect(stderr).toContain('either SERVER[/TOOL] arguments or --all');
  });
});

describe('audit', () => {
  it.each(['summary', 'verify'])('%s of a file that does not exist exits 2, saying so', async (sub) => {
    const { code, stdout, stderr } = await runCli(['audit', sub, '/nonexistent/audit.jsonl']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('no audit log at /nonexistent/audit.jsonl');
  });
});

describe('colour', () => {
  it('FORCE_COLOR colours what is not a terminal; NO_COLOR alone leaves it plain', async () => {
    const config = writeConfig('servers:\n  a: { comand: x }\n');
    const forced = await runCli(['check', '--config', config], { FORCE_COLOR: '1' });
    expect(forced.stderr).toContain(`${ESC}31mmcp-warden: invalid config:${ESC}39m`);
    const plain = await runCli(['check', '--config', config], { NO_COLOR: '1' });
    expect(plain.stderr).not.toContain(ESC);
  });
});
