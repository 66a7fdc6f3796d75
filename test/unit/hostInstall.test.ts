import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { installInto } from '../../src/commands/hostInstall.js';

const RUN = { command: '/usr/bin/node', args: ['/opt/warden/cli.js', '--config', '/p/proxy.config.yaml'] };
const NOW = new Date('2026-01-02T03:04:05.678Z');

function file(name: string, text: string): string {
  const at = path.join(mkdtempSync(path.join(tmpdir(), 'warden-install-')), name);
  writeFileSync(at, text);
  return at;
}

describe('installInto', () => {
  it("writes VS Code's mcp.json servers with type stdio, and takes out the moved server", () => {
    const at = file(
      'mcp.json',
      JSON.stringify({ servers: { fs: { command: 'npx' }, keep: { url: 'https://k' } } }),
    );
    const done = installInto({
      file: at,
      host: 'vscode',
      run: RUN,
      moved: new Map([['fs', { command: 'npx' }]]),
      cwd: '/p',
      now: NOW,
    });
    expect(done.removed).toEqual(['fs']);
    expect(done.backup).toBe(`${at}.2026-01-02T03-04-05-678Z.bak`);
    expect(JSON.parse(readFileSync(at, 'utf8'))).toEqual({
      servers: { keep: { url: 'https://k' }, warden: { type: 'stdio', ...RUN } },
    });
  });

  it("writes VS Code's settings.json under mcp.servers, keeping its other settings", () => {
    const at = file('settings.json', '{\n  // mine\n  "editor.fontSize": 14,\n}\n');
    installInto({ file: at, host: 'vscode', run: RUN, moved: new Map(), cwd: '/p', now: NOW });
    expect(JSON.parse(readFileSync(at, 'utf8'))).toEqual({
      'editor.fontSize': 14,
      mcp: { servers: { warden: { type: 'stdio', ...RUN } } },
    });
  });

  it('leaves a server of the same name whose entry differs from the one moved', () => {
    const at = file('mcp.json', JSON.stringify({ mcpServers: { fs: { command: 'other' } } }));
    const done = installInto({
      file: at,
      host: 'cursor',
      run: RUN,
      moved: new Map([['fs', { command: 'npx' }]]),
      cwd: '/p',
      now: NOW,
    });
    expect(done.removed).toEqual([]);
    expect(Object.keys((JSON.parse(readFileSync(at, 'utf8')) as { mcpServers: object }).mcpServers)).toEqual([
      'fs',
      'warden',
    ]);
  });
});
