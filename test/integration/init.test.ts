/**
 * `mcp-warden init` through the built binary, as a new user runs it: a home folder holding a real
 * Claude Desktop config, the starter config it writes checked by `mcp-warden check`, and the host
 * entry it prints launched with the SDK Client to call a tool.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { CLI, NODE, runCli, runProcess, serverBin, tempDir } from './harness.js';

/** Runs a command to completion in `cwd` with only PATH and HOME set, as a fresh terminal would. */
export function runIn(cwd: string, command: string, args: string[], home: string) {
  return runProcess(command, args, { cwd, env: { HOME: home } });
}

/** A home folder with a Claude Desktop config (Linux location) holding two real servers. */
export function homeWithClaudeDesktop(): { home: string; project: string; desktopConfig: string } {
  const home = tempDir('warden-home-');
  const project = path.join(home, 'warden');
  mkdirSync(project);
  const desktopConfig = path.join(home, '.config', 'Claude', 'claude_desktop_config.json');
  mkdirSync(path.dirname(desktopConfig), { recursive: true });
  writeFileSync(
    desktopConfig,
    JSON.stringify(
      {
        globalShortcut: 'Ctrl+Space',
        mcpServers: {
          memory: {
            command: NODE,
            args: [serverBin('memory')],
            env: { MEMORY_FILE_PATH: path.join(home, 'memory.jsonl') },
          },
          everything: { command: NODE, args: [serverBin('everything')], autoApprove: ['echo'] },
        },
      },
      null,
      2,
    ),
  );
  return { home, project, desktopConfig };
}

/** The `mcpServers.warden` entry init printed for Claude Desktop. */
export function printedEntry(stdout: string): { command: string; args: string[] } {
  const start = stdout.indexOf('\n  {\n');
  const end = stdout.indexOf('\n  }\n', start);
  expect(start, stdout).toBeGreaterThan(0);
  const json = JSON.parse(stdout.slice(start, end + 4)) as {
    mcpServers: { warden: { command: string; args: string[] } };
  };
  return json.mcpServers.warden;
}

/** Launches what a host entry says and calls `everything__echo` through it. */
export async function echoThrough(entry: { command: string; args: string[] }, home: string): Promise<string> {
  const client = new Client({ name: 'init-test-host', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      env: { PATH: process.env.PATH ?? '', HOME: home },
      stderr: 'ignore',
    }),
  );
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['everything__echo', 'memory__read_graph']),
    );
    const result = await client.callTool({ name: 'everything__echo', arguments: { message: 'via init' } });
    expect(result.isError).toBeFalsy();
    return (result.content as { type: string; text: string }[])[0]!.text;
  } finally {
    await client.close();
  }
}

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
    expect(checked.stdout).toContain(`${config}: ok (2 servers, 2 enabled; 1 policy files`);
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
