/**
 * A host's own config file used as it is: a Claude Desktop `claude_desktop_config.json` keeps
 * the app's settings next to `mcpServers`, and other hosts add keys to server entries
 * (src/config/hostKeys.ts). What is ignored comes back as located warnings; typos stay errors.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText, type Env, type LoadedConfig } from '../../src/config/load.js';
import type { StdioServerConfig } from '../../src/config/types.js';
import { formatConfigIssue } from '../../src/config/issues.js';
import { thrownIssues } from './configIssues.js';

const FILE = path.resolve('/Users/me/Library/Application Support/Claude/claude_desktop_config.json');
const F = FILE;

function load(text: string, env: Env = {}): LoadedConfig {
  return parseConfigText(text, { file: FILE, env });
}

/** The warnings exactly as `mcp-warden check` prints them after "warning: ". */
function warningsOf(text: string, env: Env = {}): string[] {
  return load(text, env).warnings.map(formatConfigIssue);
}

function issuesOf(text: string, env: Env = {}): string[] {
  return thrownIssues(() => load(text, env));
}

/** A Claude Desktop file as the app leaves it: its own settings around `mcpServers`. */
const DESKTOP = `{
  "globalShortcut": "Alt+Ctrl+Space",
  "mcpServers": {
    "memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
    "github": {
      "command": "docker",
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "\${GITHUB_TOKEN}" },
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"]
    }
  },
  "preferences": {
    "menuBarEnabled": false,
    "greeting": "\${NOT_SET_AND_NOT_OURS}"
  }
}
`;

const DESKTOP_YAML = [
  'globalShortcut: Alt+Ctrl+Space',
  'mcpServers:',
  '  filesystem:',
  '    command: npx',
  '    args: [-y, "@modelcontextprotocol/server-filesystem", /Users/me/Desktop]',
  'preferences:',
  '  menuBarEnabled: false',
  '',
].join('\n');

describe('Claude Desktop shape (mcpServers, no servers): top-level keys that are not ours', () => {
  it('ignores them with a warning naming file, line and key, and loads mcpServers', () => {
    const { config, warnings } = load(DESKTOP, { GITHUB_TOKEN: 'ghp_x' });
    expect(warnings.map(formatConfigIssue)).toEqual([
      `${F}:2:3: globalShortcut: ignored: not an mcp-warden setting`,
      `${F}:11:3: preferences: ignored: not an mcp-warden setting`,
    ]);
    expect(warnings[0]).toEqual({
      file: FILE,
      line: 2,
      column: 3,
      path: 'globalShortcut',
      message: 'ignored: not an mcp-warden setting',
    });
    expect(config.servers.map((s) => [s.name, s.source.line])).toEqual([
      ['memory', 4],
      ['github', 5],
    ]);
    expect((config.servers[1] as StdioServerConfig).env).toEqual({ GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_x' });
  });

  it('does not expand ${VAR} in what it ignores: an unset one there is no error', () => {
    // NOT_SET_AND_NOT_OURS is unset; only GITHUB_TOKEN (under mcpServers) must be.
    expect(issuesOf(DESKTOP)).toEqual([
      `${F}:7:48: mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN: environment variable "GITHUB_TOKEN" is not set (use \${GITHUB_TOKEN:-default} to give a default)`,
    ]);
  });

  it('gives the same warnings for the file written as YAML', () => {
    expect(warningsOf(DESKTOP_YAML)).toEqual([
      `${F}:1:1: globalShortcut: ignored: not an mcp-warden setting`,
      `${F}:6:1: preferences: ignored: not an mcp-warden setting`,
    ]);
  });

  it('keeps a likely typo of one of its own top-level keys an error, with the did-you-mean', () => {
    const text = DESKTOP_YAML + 'polices: [team.yaml]\ngatway: { timeout: 2m }\nmcpServer: {}\n';
    expect(issuesOf(text)).toEqual([
      `${F}:8:1: polices: unknown key "polices" (did you mean "policies"?)`,
      `${F}:9:1: gatway: unknown key "gatway" (did you mean "gateway"?)`,
      `${F}:10:1: mcpServer: unknown key "mcpServer" (did you mean "mcpServers"?)`,
    ]);
  });

  it('still reads its own settings written next to the app’s', () => {
    const { config, warnings } = load(DESKTOP_YAML + 'gateway: { timeout: 2m }\n');
    expect(config.gateway.callTimeoutMs).toBe(120_000);
    expect(warnings.map((w) => w.path)).toEqual(['globalShortcut', 'preferences']);
  });

  it('returns the warnings frozen, with the config', () => {
    const loaded = load(DESKTOP_YAML);
    expect(Object.isFrozen(loaded)).toBe(true);
    expect(Object.isFrozen(loaded.warnings)).toBe(true);
    expect(Object.isFrozen(loaded.warnings[0])).toBe(true);
  });
});

describe('files with servers: unknown top-level keys stay errors', () => {
  const allowed =
    'allowed keys are: gateway, policies, flow, confirmation, audit, pins, guardrails, telemetry, rateLimits, store, listen, auth, catalog, profiles, servers, mcpServers';
  it.each<[string, string, string[]]>([
    [
      'the native shape',
      'globalShortcut: Alt+Space\nservers:\n  a: { command: x }\n',
      [`${F}:1:1: globalShortcut: unknown key "globalShortcut"; ${allowed}`],
    ],
    [
      'both sections',
      'servers:\n  a: { command: x }\nmcpServers:\n  b: { command: y }\npreferences: {}\n',
      [`${F}:5:1: preferences: unknown key "preferences"; ${allowed}`],
    ],
    [
      'no server section at all',
      'globalShortcut: Alt+Space\n',
      [
        `${F}:1:1: globalShortcut: unknown key "globalShortcut"; ${allowed}`,
        `${F}:1:1: no servers configured: add at least one under "servers" (or "mcpServers")`,
      ],
    ],
  ])('%s', (_what, text, expected) => {
    expect(issuesOf(text)).toEqual(expected);
  });

  it('has no warnings for a file of its own', () => {
    expect(warningsOf('servers:\n  a: { command: x }\n')).toEqual([]);
  });
});

describe('server entries written for other hosts', () => {
  const allowed =
    'allowed keys are: type, command, args, env, envFile, cwd, url, headers, oauth, namespace, timeout, maxTimeout, startupTimeout, repair, guardrails, validateArguments, maxConcurrency, maxQueue, tools, disabled, start, idleTimeout, trusted, labels, shared, acrossReplicas, sampling, elicitation, instructions, roots, sandbox';

  it('ignores approval lists under mcpServers with a warning; type and disabled work as written', () => {
    const text = [
      'mcpServers:',
      '  fs:',
      '    command: npx',
      '    args: [-y, "@modelcontextprotocol/server-filesystem", /tmp]',
      '    disabled: true',
      '    autoApprove: [read_file]',
      '  web:',
      '    type: http',
      '    url: https://example.com/mcp',
      '    alwaysAllow: []',
      '',
    ].join('\n');
    const { config, warnings } = load(text);
    const why =
      "ignored: the host's list of tools to run without asking; in mcp-warden, policy files decide which calls need confirmation";
    expect(warnings.map(formatConfigIssue)).toEqual([
      `${F}:6:5: mcpServers.fs.autoApprove: ${why}`,
      `${F}:10:5: mcpServers.web.alwaysAllow: ${why}`,
    ]);
    expect(config.servers.map((s) => [s.name, s.transport, s.disabled])).toEqual([
      ['fs', 'stdio', true],
      ['web', 'http', false],
    ]);
  });

  it.each<[string, string, string[]]>([
    [
      'an approval list under servers is an unknown key',
      'servers:\n  fs: { command: x, autoApprove: [a] }\n',
      [`${F}:2:21: servers.fs.autoApprove: unknown key "autoApprove"; ${allowed}`],
    ],
    [
      'the SSE transport',
      'mcpServers:\n  remote: { type: sse, url: "https://example.com/sse" }\n',
      [
        `${F}:2:19: mcpServers.remote.type: type "sse" (the older HTTP+SSE transport) is not supported: mcp-warden reaches remote servers over Streamable HTTP; give that endpoint of the server (often ending in /mcp) as "url", with type "http" or no type`,
      ],
    ],
    [
      'a timeout under mcpServers as a bare number below 1000',
      'mcpServers:\n  a: { command: x, timeout: 60 }\n',
      [
        `${F}:2:29: mcpServers.a.timeout: a number here is milliseconds, so 60 would end every call after 60 ms; some hosts (such as Cline) write seconds in this key: write "60s" for seconds, or "60ms" if that is meant`,
      ],
    ],
  ])('%s: an error saying what to write', (_what, text, expected) => {
    expect(issuesOf(text)).toEqual(expected);
  });

  it('reads other timeouts as before: units written, and 1000 or more as ms', () => {
    const text = [
      'mcpServers:',
      '  a: { command: x, timeout: 60s }',
      '  b: { command: x, timeout: 60ms }',
      '  c: { command: x, timeout: 30000 }',
      'servers:',
      '  d: { command: x, timeout: 60ms }',
      '',
    ].join('\n');
    const { config, warnings } = load(text);
    expect(warnings).toEqual([]);
    expect(Object.fromEntries(config.servers.map((s) => [s.name, s.timeoutMs]))).toEqual({
      d: 60,
      a: 60_000,
      b: 60,
      c: 30_000,
    });
  });
});

describe('a host file that lists mcp-warden itself', () => {
  it('is an error when mcp-warden is given this same file: each gateway would start another', () => {
    const text = [
      'mcpServers:',
      '  warden:',
      '    command: npx',
      '    args: [-y, mcp-warden, --config, claude_desktop_config.json]',
      '  again:',
      '    command: node',
      `    args: [/opt/node_modules/mcp-warden/dist/cli.js, "--config=${FILE}"]`,
      '',
    ].join('\n');
    const why =
      'this server is mcp-warden reading this same file, so each gateway would start another without end; keep the servers mcp-warden fronts in a file of their own and give that file here';
    expect(issuesOf(text)).toEqual([
      `${F}:4:38: mcpServers.warden.args[3]: ${why}`,
      `${F}:7:54: mcpServers.again.args[1]: ${why}`,
    ]);
  });

  it('lets another server read this file, and mcp-warden be given another file', () => {
    const text = [
      'mcpServers:',
      '  settings:',
      '    command: claude-settings-mcp',
      `    args: ["${FILE}"]`,
      '  warden:',
      '    command: npx',
      '    args: [mcp-warden, --config, warden.json]',
      '',
    ].join('\n');
    expect(load(text).config.servers.map((s) => s.name)).toEqual(['settings', 'warden']);
  });
});
