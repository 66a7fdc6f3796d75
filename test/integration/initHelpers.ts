/**
 * What the init and install tests share: a home folder with a real Claude Desktop config, running
 * a program there as a fresh terminal would, and a host that launches the entry init printed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { expect } from 'vitest';
import { NODE, runProcess, serverBin, tempDir } from './harness.js';

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
export function printedEntry(stdout: string): {
  command: string;
  args: string[];
  env?: Record<string, string>;
} {
  const start = stdout.indexOf('\n  {\n');
  const end = stdout.indexOf('\n  }\n', start);
  expect(start, stdout).toBeGreaterThan(0);
  const json = JSON.parse(stdout.slice(start, end + 4)) as {
    mcpServers: { warden: { command: string; args: string[]; env?: Record<string, string> } };
  };
  return json.mcpServers.warden;
}

/** Launches what a host entry says and calls `everything__echo` through it. */
export async function echoThrough(
  entry: { command: string; args: string[]; env?: Record<string, string> },
  home: string,
): Promise<string> {
  const client = new Client({ name: 'init-test-host', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      // What a desktop host gives: its own few variables and the entry's env, not the terminal's.
      env: { PATH: process.env.PATH ?? '', HOME: home, ...entry.env },
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
