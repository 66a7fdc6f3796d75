import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { sharedWritablePaths } from '../../src/commands/checkIsolation.js';

const FILE = path.resolve('/srv/warden/team.yaml');

const warningsOf = (lines: readonly string[]) =>
  sharedWritablePaths(parseConfigText(lines.join('\n'), { file: FILE, env: {} }).config).map(
    (w) => `${w.line}: ${w.path}`,
  );

const LISTEN = ['listen:', '  http: 127.0.0.1:8080', 'servers:'];

describe('check: per-principal servers given a shared writable place', () => {
  it('warns of a cwd, a MEMORY_FILE_PATH (or none) and a filesystem folder that name no principal', () => {
    expect(
      warningsOf([
        ...LISTEN,
        '  memory: { command: npx, args: [-y, "@modelcontextprotocol/server-memory"] }',
        '  memory2:',
        '    command: npx',
        '    args: [-y, "@modelcontextprotocol/server-memory"]',
        '    env: { MEMORY_FILE_PATH: /srv/memory.jsonl }',
        '  files: { command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", /srv/a, sub, "~/b"] }',
        '  tool: { command: tool, cwd: /srv/tool }',
      ]),
    ).toEqual([
      '4: servers.memory.env',
      '5: servers.memory2.env.MEMORY_FILE_PATH',
      '9: servers.files.args[2]',
      '9: servers.files.args[4]',
      '10: servers.tool.cwd',
    ]);
  });

  it('is quiet when each names the principal, for a shared server, and without a listener', () => {
    const isolated = [
      '  memory:',
      '    command: npx',
      '    args: [-y, "@modelcontextprotocol/server-memory"]',
      '    env: { MEMORY_FILE_PATH: "${principal.home}/memory.jsonl" }',
      '  files: { command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", "/srv/${principal.id}"] }',
      '  tool: { command: tool, cwd: "/srv/tool/${principal.id}" }',
      '  search: { command: search, cwd: /srv/search, shared: true }',
    ];
    expect(warningsOf([...LISTEN, ...isolated])).toEqual([]);
    expect(warningsOf(['servers:', '  tool: { command: tool, cwd: /srv/tool }'])).toEqual([]);
  });
});
