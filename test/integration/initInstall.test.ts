/**
 * `mcp-warden init --from A --from B` (several hosts' servers merged, clashes resolved and said)
 * and `init --install HOST` (mcp-warden registered in the host's own file in place of the servers
 * it now runs, the file backed up, a second run changing nothing), through the built binary in a
 * home folder holding real host configs.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, NODE, runCli, serverBin } from './harness.js';
import { echoThrough, homeWithClaudeDesktop, runIn } from './initHelpers.js';

/** Cursor's user file beside the Claude Desktop one: the same memory server, another everything. */
function withCursor(home: string): string {
  const desktop = JSON.parse(
    readFileSync(path.join(home, '.config', 'Claude', 'claude_desktop_config.json'), 'utf8'),
  ) as { mcpServers: Record<string, unknown> };
  const file = path.join(home, '.cursor', 'mcp.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(
    file,
    JSON.stringify(
      {
        mcpServers: {
          memory: desktop.mcpServers['memory'],
          everything: { command: NODE, args: [serverBin('everything')], env: { FROM: 'cursor' } },
        },
      },
      null,
      2,
    ),
  );
  return file;
}

describe('mcp-warden init --from A --from B', () => {
  it('merges both: an identical server once, a different one of the same name renamed, each said', async () => {
    const { home, project, desktopConfig } = homeWithClaudeDesktop();
    const cursor = withCursor(home);
    const { code, stdout, stderr } = await runIn(
      project,
      NODE,
      [CLI, 'init', '--from', desktopConfig, '--from', cursor, '--policy', 'none'],
      home,
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`Servers taken from ${desktopConfig} (Claude Desktop):\n  + memory\n`);
    expect(stdout).toContain(
      `Servers taken from ${cursor} (Cursor):\n  - memory: left out: the same server as "memory" from ${desktopConfig}\n` +
        `  + everything_cursor\n      renamed from "everything": ${desktopConfig} has a different server of that name\n`,
    );
    const config = path.join(project, 'proxy.config.yaml');
    const checked = await runCli(['check', '--config', config]);
    expect(checked.stdout).toContain(`${config}: ok (3 servers, 3 enabled`);
    expect(readFileSync(config, 'utf8')).toContain('everything_cursor:');
  });
});

describe('mcp-warden init --install', () => {
  it('puts mcp-warden in place of the servers it runs, backs the file up, says how to undo, and changes nothing the second time', async () => {
    const { home, project, desktopConfig } = homeWithClaudeDesktop();
    const before = readFileSync(desktopConfig, 'utf8');
    const first = await runIn(project, NODE, [CLI, 'init', '--install', 'claude-desktop'], home);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const after = JSON.parse(readFileSync(desktopConfig, 'utf8')) as {
      globalShortcut: string;
      mcpServers: Record<string, { command: string; args: string[] }>;
    };
    const config = path.join(project, 'proxy.config.yaml');
    expect(after.globalShortcut).toBe('Ctrl+Space');
    expect(after.mcpServers).toEqual({ warden: { command: NODE, args: [CLI, '--config', config] } });
    const backups = readdirSync(path.dirname(desktopConfig)).filter((f) => f.endsWith('.bak'));
    expect(backups).toHaveLength(1);
    const backup = path.join(path.dirname(desktopConfig), backups[0]!);
    expect(readFileSync(backup, 'utf8')).toBe(before);
    expect(first.stdout).toContain(
      `Claude Desktop: changed ${desktopConfig}:\n  + "warden", which runs mcp-warden\n  - "memory" (mcp-warden runs it now)\n  - "everything" (mcp-warden runs it now)\n`,
    );
    expect(first.stdout).toContain(`to undo: cp '${backup}' '${desktopConfig}'`);
    // What the host now starts serves the servers that left its file.
    expect(await echoThrough(after.mcpServers['warden']!, home)).toBe('Echo: via init');

    const written = readFileSync(desktopConfig, 'utf8');
    const again = await runIn(project, NODE, [CLI, 'init', '--install', 'claude-desktop'], home);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`already runs mcp-warden as "warden"; nothing was changed`);
    expect(readFileSync(desktopConfig, 'utf8')).toBe(written);
    expect(readdirSync(path.dirname(desktopConfig)).filter((f) => f.endsWith('.bak'))).toHaveLength(1);
  });

  it('creates the host file when the host has none yet, and refuses a host it cannot install into', async () => {
    const { home, project } = homeWithClaudeDesktop();
    const first = await runIn(project, NODE, [CLI, 'init', '--install', 'cursor'], home);
    expect(first.code, first.stderr).toBe(0);
    const cursor = path.join(home, '.cursor', 'mcp.json');
    expect(first.stdout).toContain(`Cursor: created ${cursor}:`);
    expect(first.stdout).toContain(`To undo: delete ${cursor}.`);
    expect(JSON.parse(readFileSync(cursor, 'utf8'))).toEqual({
      mcpServers: {
        warden: { command: NODE, args: [CLI, '--config', path.join(project, 'proxy.config.yaml')] },
      },
    });
    const generic = await runIn(project, NODE, [CLI, 'init', '--install', 'generic'], home);
    expect(generic.code).toBe(2);
    expect(generic.stderr).toContain(
      '--install generic: choose one of claude-desktop, claude-code, cursor, vscode',
    );
  });
});
