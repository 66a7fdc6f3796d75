import { describe, expect, it } from 'vitest';
import { brokenCacheHint, launcherOf } from '../../src/lib/launchers.js';

describe('launcherOf', () => {
  it('tells package launchers, by name or by subcommand, from other commands', () => {
    expect(launcherOf('npx', ['-y', 'pkg'])).toBe('npx');
    expect(launcherOf('/usr/local/bin/uvx', ['mcp-server-git'])).toBe('uvx');
    expect(launcherOf('C:\\Program Files\\nodejs\\npx.cmd', [])).toBe('npx');
    expect(launcherOf('bunx', ['pkg'])).toBe('bunx');
    expect(launcherOf('pnpm', ['dlx', 'pkg'])).toBe('pnpm dlx');
    expect(launcherOf('uv', ['tool', 'run', 'pkg'])).toBe('uv tool run');
    expect(launcherOf('pnpm', ['run', 'serve'])).toBeUndefined();
    expect(launcherOf('node', ['server.js'])).toBeUndefined();
    expect(launcherOf('npxx', [])).toBeUndefined();
  });
});

describe('brokenCacheHint', () => {
  it('names the npx cache folder to remove when a module under _npx is missing', () => {
    const hint = brokenCacheHint([
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /home/me/.npm/_npx/0a1b2c3d/node_modules/x/index.js",
    ]);
    expect(hint).toContain('rm -rf /home/me/.npm/_npx/0a1b2c3d ');
    expect(hint).toContain('npm cache clean --force');
  });

  it("says uv cache clean when uvx's cached files are missing", () => {
    expect(
      brokenCacheHint([
        "ModuleNotFoundError: No module named 'mcp'",
        '  File "/home/me/.cache/uv/archive-v0/AbC123/lib/python3.12/site-packages/x.py", line 1',
      ]),
    ).toContain('uv cache clean');
  });

  it('says nothing of an ordinary failure', () => {
    expect(brokenCacheHint(['Error: GITHUB_TOKEN is not set'])).toBeUndefined();
    expect(brokenCacheHint(["Error: Cannot find module './config.js'"])).toBeUndefined();
  });
});
