/**
 * `mcp-warden init` through the built binary, as a new user runs it: a home folder holding a real
 * Claude Desktop config, the starter config it writes checked by `mcp-warden check`, and the host
 * entry it prints launched with the SDK Client to call a tool.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, NODE, runCli, runProcess, serverBin } from './harness.js';
import { echoThrough, homeWithClaudeDesktop, printedEntry, runIn } from './initHelpers.js';

describe('mcp-warden init from a Claude Desktop config', () => {
  it('writes a config that checks, prints an entry that works, and never overwrites without --force', async () => {
    const { home, project, desktopConfig } = homeWithClaudeDesktop();
    const first = await runIn(project, NODE, [CLI, 'init', '--policy', 'default'], home);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`Servers taken from ${desktopConfig} (Claude Desktop)`);
    expect(first.stdout).toContain('left out "autoApprove"');
    expect(first.stdout).toContain('Put this entry in claude_desktop_config.json');

    const config = path.join(project, 'proxy.config.yaml');
    const checked = await runCli(['check', '--config', config]);
    expect(checked.stdout).toContain(`${config}: ok (2 servers, 2 enabled; 1 policy file`);
    expect(checked.code).toBe(0);

    const entry = printedEntry(first.stdout);
    expect(entry.args).toEqual([CLI, '--config', config]);
    expect(await echoThrough(entry, home)).toBe('Echo: via init');
    // The pins and the audit trail the starter config turns on are in use.
    expect(readFileSync(path.join(project, 'audit.jsonl'), 'utf8')).toContain('"tool":"everything__echo"');
    expect(readFileSync(path.join(project, 'tool-pins.json'), 'utf8')).toContain('"echo"');

    const written = readFileSync(config, 'utf8');
    const again = await runIn(project, NODE, [CLI, 'init'], home);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exist');
    expect(readFileSync(config, 'utf8')).toBe(written);
  });
});

describe('mcp-warden init from a host config that reads environment variables', () => {
  it('prints an entry that names them with placeholders, and works once they are filled in', async () => {
    const { home, project, desktopConfig } = homeWithClaudeDesktop();
    const desktop = JSON.parse(readFileSync(desktopConfig, 'utf8')) as {
      mcpServers: { memory: { env: Record<string, string> } };
    };
    desktop.mcpServers.memory.env = { MEMORY_FILE_PATH: '${WARDEN_MEMORY_FILE}' };
    writeFileSync(desktopConfig, JSON.stringify(desktop));
    const memoryFile = path.join(home, 'memory-from-env.jsonl');
    // The terminal init runs in has the variable; the host that starts the entry will not.
    const run = await runProcess(NODE, [CLI, 'init', '--policy', 'none'], {
      cwd: project,
      env: { HOME: home, WARDEN_MEMORY_FILE: memoryFile },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('The config reads the environment variable WARDEN_MEMORY_FILE');
    expect(run.stdout).not.toContain(memoryFile);

    const entry = printedEntry(run.stdout);
    expect(entry.env).toEqual({ WARDEN_MEMORY_FILE: '<value of WARDEN_MEMORY_FILE>' });
    expect(await echoThrough({ ...entry, env: { WARDEN_MEMORY_FILE: memoryFile } }, home)).toBe(
      'Echo: via init',
    );
  });
});

describe('mcp-warden init on a terminal', () => {
  it('asks which host config to use when several hold servers, and uses the answer', async () => {
    const { home, project } = homeWithClaudeDesktop();
    mkdirSync(path.join(project, '.vscode'));
    writeFileSync(
      path.join(project, '.vscode', 'mcp.json'),
      JSON.stringify({ servers: { vscodeonly: { command: NODE, args: [serverBin('everything')] } } }),
    );
    // script(1) from util-linux runs init on a pseudo-terminal; the answer "2" is typed ahead.
    const run = await runProcess(
      'sh',
      ['-c', `printf '2\\n' | script -qec "${NODE} ${CLI} init --policy none" /dev/null`],
      { cwd: project, env: { HOME: home } },
    );
    expect(run.stdout).toContain('Several host configs hold MCP servers. Which one should mcp-warden front?');
    expect(run.stdout).toMatch(/1\) Claude Desktop: .*claude_desktop_config\.json \(memory, everything\)/);
    expect(run.stdout).toMatch(/2\) VS Code: .*\.vscode\/mcp\.json \(vscodeonly\)/);
    expect(run.stdout).toContain('(VS Code)');
    expect(readFileSync(path.join(project, 'proxy.config.yaml'), 'utf8')).toContain('vscodeonly:');
  });
});
