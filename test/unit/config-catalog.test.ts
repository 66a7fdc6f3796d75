import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { claudeCodeName } from '../../src/features/toolSearch/view.js';
import { thrownIssues } from './configIssues.js';

const FILE = path.resolve('/srv/warden/proxy.config.yaml');
const parse = (text: string) => parseConfigText(text, { file: FILE, env: {} }).config;

describe('catalog: and profiles:', () => {
  it('fills the defaults, and keeps what is written', () => {
    expect(parse('servers:\n  a: { command: c }\n').catalog).toEqual({
      mode: 'auto',
      alwaysLoad: [],
      auto: { maxTools: 60, maxTokens: 20_000 },
      hostServerName: 'mcp-warden',
    });
    const config = parse(
      [
        'catalog: { mode: search, alwaysLoad: [a__x*], auto: { maxTools: 5 } }',
        'profiles:',
        '  cursor: { clients: [Cursor*], servers: [a], mode: all }',
        "  docs: { prompts: ['a__*'], resources: ['file:///docs/*'] }",
        'servers:',
        '  a: { command: c }',
        '',
      ].join('\n'),
    );
    expect(config.catalog).toMatchObject({
      mode: 'search',
      alwaysLoad: ['a__x*'],
      auto: { maxTools: 5, maxTokens: 20_000 },
    });
    expect(config.profiles).toEqual([
      {
        name: 'cursor',
        clients: ['Cursor*'],
        principals: [],
        servers: ['a'],
        tools: [],
        prompts: [],
        resources: [],
        mode: 'all',
      },
      {
        name: 'docs',
        clients: [],
        principals: [],
        servers: [],
        tools: [],
        prompts: ['a__*'],
        resources: ['file:///docs/*'],
      },
    ]);
  });

  it('refuses a mode it does not know, a profile naming no server, and a host name with no room left, at file:line', () => {
    const issues = thrownIssues(() =>
      parse(
        [
          'catalog: { mode: lazy, hostServerName: a-host-name-that-is-far-too-long-for-claude-code }',
          'profiles:',
          '  cursor: { servers: [a, githb] }',
          'servers:',
          '  a: { command: c }',
          '  github: { command: c }',
          '',
        ].join('\n'),
      ),
    );
    expect(issues).toEqual([
      expect.stringMatching(/proxy\.config\.yaml:1:\d+: catalog\.mode: .*all.*search.*auto/),
      expect.stringMatching(
        /proxy\.config\.yaml:1:\d+: catalog\.hostServerName: .* Claude Code's tool names/,
      ),
      expect.stringMatching(
        /proxy\.config\.yaml:3:\d+: profiles\.cursor\.servers\[1\]: profile "cursor": "githb" matches no configured server \(servers: a, github\)/,
      ),
    ]);
  });
});

describe("Claude Code's name budget", () => {
  it('keeps a name that fits and shortens one that does not, the same way every time', () => {
    expect(claudeCodeName('github__create_issue', 'mcp-warden')).toBe('github__create_issue');
    const long = 'github__add_pull_request_review_comment_to_pending_review';
    const short = claudeCodeName(long, 'mcp-warden');
    expect(`mcp__mcp-warden__${short}`).toHaveLength(64);
    expect(short).toMatch(/^github__add_pull_request_review_co[a-z_]*_[0-9a-f]{8}$/);
    expect(claudeCodeName(long, 'mcp-warden')).toBe(short);
    expect(claudeCodeName(`${long}_2`, 'mcp-warden')).not.toBe(short);
  });
});
