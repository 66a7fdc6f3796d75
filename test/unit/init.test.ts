import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  candidateFiles,
  convertServers,
  hostOfFile,
  parseJsonWithComments,
  readHostServers,
} from '../../src/commands/hostConfigs.js';
import { runInit, type InitIo } from '../../src/commands/init.js';

function machine() {
  const home = mkdtempSync(path.join(tmpdir(), 'warden-init-'));
  const cwd = path.join(home, 'project');
  mkdirSync(cwd);
  return { home, cwd };
}

function put(file: string, data: unknown): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, typeof data === 'string' ? data : JSON.stringify(data));
  return file;
}

/** runInit with captured output; `choose` answers the question when given. */
async function init(
  where: { home: string; cwd: string },
  args: string[],
  choose?: InitIo['choose'],
  credentials?: InitIo['credentials'],
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runInit(args, {
    ...where,
    platform: 'linux',
    env: {},
    execPath: '/usr/bin/node',
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
    ...(choose && { choose }),
    ...(credentials && { credentials }),
  });
  return { code, out, err };
}

const SERVER = { command: 'node', args: ['-e', ''] };

describe('finding host configs', () => {
  it('knows where each host keeps its servers on each platform', () => {
    const files = (platform: NodeJS.Platform, env: Record<string, string> = {}) =>
      candidateFiles({ home: '/h', cwd: '/p', platform, env }).map((c) => `${c.host} ${c.file}`);
    expect(files('darwin')).toContain(
      'claude-desktop /h/Library/Application Support/Claude/claude_desktop_config.json',
    );
    expect(files('linux')).toContain('claude-desktop /h/.config/Claude/claude_desktop_config.json');
    expect(files('linux', { XDG_CONFIG_HOME: '/x' })).toContain(
      'claude-desktop /x/Claude/claude_desktop_config.json',
    );
    expect(files('win32', { APPDATA: 'C:\\Users\\me\\AppData\\Roaming' })).toContain(
      'claude-desktop C:\\Users\\me\\AppData\\Roaming\\Claude\\claude_desktop_config.json',
    );
    expect(files('linux')).toEqual(
      expect.arrayContaining([
        'claude-code /p/.mcp.json',
        'claude-code /h/.claude.json',
        'cursor /h/.cursor/mcp.json',
        'cursor /p/.cursor/mcp.json',
        'vscode /p/.vscode/mcp.json',
        'vscode /h/.config/Code/User/settings.json',
      ]),
    );
  });

  it('tells the host of a --from file by its name', () => {
    expect(hostOfFile('/a/claude_desktop_config.json')).toBe('claude-desktop');
    expect(hostOfFile('/h/.claude.json')).toBe('claude-code');
    expect(hostOfFile('/p/.mcp.json')).toBe('claude-code');
    expect(hostOfFile('/h/.cursor/mcp.json')).toBe('cursor');
    expect(hostOfFile('/p/.vscode/mcp.json')).toBe('vscode');
    expect(hostOfFile('/h/.config/Code/User/settings.json')).toBe('vscode');
    expect(hostOfFile('/a/servers.json')).toBe('generic');
  });

  it("reads VS Code's settings, comments and trailing commas included, but never inside strings", () => {
    const text = `{
      // the editor's own
      "editor.fontSize": 14, /* a block
      comment */ "url": "http://x//y/*z*/",
      "mcp": { "servers": { "a": { "command": "node", "args": ["a,]"], }, }, },
    }`;
    expect(parseJsonWithComments(text)).toEqual({
      'editor.fontSize': 14,
      url: 'http://x//y/*z*/',
      mcp: { servers: { a: { command: 'node', args: ['a,]'] } } },
    });
    expect(() => parseJsonWithComments('{"a": }')).toThrow(SyntaxError);
  });

  it("takes Claude Code's user servers and those of the current project from ~/.claude.json", () => {
    const { home, cwd } = machine();
    const file = put(path.join(home, '.claude.json'), {
      numStartups: 3,
      mcpServers: { user: SERVER },
      projects: { [cwd]: { mcpServers: { local: SERVER } }, '/elsewhere': { mcpServers: { other: SERVER } } },
    });
    expect(Object.keys(readHostServers(file, 'claude-code', cwd)!.servers)).toEqual(['user', 'local']);
  });

  it('names a file that is not JSON', () => {
    const { home, cwd } = machine();
    const file = put(path.join(home, 'bad.json'), '{ not json');
    expect(() => readHostServers(file, 'generic', cwd)).toThrow(`${file}: not valid JSON`);
  });
});

describe('converting server entries', () => {
  it('keeps what means the same, renames what mcp-warden cannot take, and says why it leaves out the rest', () => {
    const converted = convertServers({
      'my.server': { command: 'npx', args: ['x'], env: { A: '1' }, autoApprove: ['t'] },
      remote: { type: 'http', url: 'https://example.com/mcp', headers: { A: 'b' } },
      legacy: { type: 'sse', url: 'https://example.com/sse' },
      warden: { command: 'npx', args: ['-y', 'mcp-warden', '--config', '/c.yaml'] },
      asked: { command: 'x', env: { TOKEN: '${input:token}' } },
    });
    expect(converted).toEqual([
      {
        name: 'my_server',
        entry: { command: 'npx', args: ['x'], env: { A: '1' } },
        notes: [
          'renamed from "my.server" (server names may use letters, digits, _ and -)',
          'left out "autoApprove" (a setting of the host, not of the server)',
        ],
      },
      {
        name: 'remote',
        entry: { type: 'http', url: 'https://example.com/mcp', headers: { A: 'b' } },
        notes: [],
        remote: true,
        secrets: [],
      },
      {
        name: 'legacy',
        entry: { type: 'http', url: 'https://example.com/sse' },
        notes: [expect.stringContaining('was type "sse" (the older HTTP+SSE transport')],
        remote: true,
        secrets: [],
      },
      { name: 'warden', skipped: 'it runs mcp-warden itself' },
      { name: 'asked', entry: expect.any(Object), notes: [expect.stringContaining('${input:')] },
    ]);
  });
});

describe('converting entries from an editor', () => {
  it("writes ${workspaceFolder} out as the folder it meant in the editor's file", () => {
    const [converted] = convertServers(
      { fs: { command: 'node', args: ['${workspaceFolder}/server.js', '${workspaceFolderBasename}'] } },
      { workspaceFolder: '/home/me/project' },
    );
    expect(converted).toEqual({
      name: 'fs',
      entry: { command: 'node', args: ['/home/me/project/server.js', 'project'] },
      notes: ['${workspaceFolder} written out as /home/me/project'],
    });
  });
});

describe('mcp-warden init', () => {
  it('writes a valid config from the one host config found, with the policy, and prints the entry', async () => {
    const where = machine();
    put(path.join(where.home, '.cursor', 'mcp.json'), { mcpServers: { one: SERVER } });
    const { code, out } = await init(where, ['--policy', 'read-only-workstation']);
    expect(code).toBe(0);
    const config = path.join(where.cwd, 'proxy.config.yaml');
    const text = readFileSync(config, 'utf8');
    expect(text).toMatch(/^# yaml-language-server: \$schema=\/.*\/schema\/proxy\.config\.schema\.json$/m);
    expect(text).toContain('./read-only-workstation.policy.yaml');
    expect(statSync(config).mode & 0o777).toBe(0o600);
    const policy = readFileSync(path.join(where.cwd, 'read-only-workstation.policy.yaml'), 'utf8');
    expect(policy).toMatch(/^# yaml-language-server: \$schema=\/.*\/schema\/policy\.schema\.json$/m);
    expect(out).toContain(`Servers taken from ${path.join(where.home, '.cursor', 'mcp.json')} (Cursor)`);
    expect(out).toContain('Checked:');
    expect(out).toContain('"mcpServers": {');
    expect(out).toContain(`"${config}"`);
  });

  it('asks which host config to use when several hold servers, and refuses to guess without a terminal', async () => {
    const where = machine();
    put(path.join(where.home, '.config', 'Claude', 'claude_desktop_config.json'), {
      mcpServers: { desk: SERVER },
    });
    put(path.join(where.cwd, '.vscode', 'mcp.json'), { servers: { code: SERVER } });

    const refused = await init(where, []);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('several host configs hold MCP servers; choose one with --from FILE');
    expect(refused.err).toContain('VS Code: ');

    let asked: readonly string[] = [];
    const picked = await init(where, [], async (_question, choices) => {
      asked = choices;
      return 2;
    });
    expect(asked[0]).toContain('Claude Desktop');
    expect(picked.code).toBe(0);
    expect(picked.out).toContain('(VS Code)');
    expect(picked.out).toContain('"type": "stdio"');
    expect(readFileSync(path.join(where.cwd, 'proxy.config.yaml'), 'utf8')).toContain('code:');
  });

  it('never overwrites without --force', async () => {
    const where = machine();
    const config = put(path.join(where.cwd, 'proxy.config.yaml'), 'mine\n');
    const refused = await init(where, [
      '--from',
      put(path.join(where.home, 'x.json'), { mcpServers: { a: SERVER } }),
    ]);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain(`${config} already exists; nothing was written (add --force to overwrite)`);
    expect(readFileSync(config, 'utf8')).toBe('mine\n');
    const forced = await init(where, ['--from', path.join(where.home, 'x.json'), '--force']);
    expect(forced.code).toBe(0);
    expect(readFileSync(config, 'utf8')).toContain('servers:');
  });

  it('prints the claude mcp add command for Claude Code', async () => {
    const where = machine();
    put(path.join(where.cwd, '.mcp.json'), { mcpServers: { proj: SERVER } });
    const { code, out } = await init(where, ['--policy', 'none', '--config', 'sub dir/w.yaml']);
    expect(code).toBe(0);
    const config = path.join(where.cwd, 'sub dir', 'w.yaml');
    expect(out).toContain(`claude mcp add --scope user warden -- /usr/bin/node `);
    expect(out).toContain(`--config '${config}'`);
    expect(readFileSync(config, 'utf8')).not.toMatch(/^#? ?policies:/m);
  });

  it('puts the environment variables the config reads in the entry, as placeholders, and says so', async () => {
    const where = machine();
    const from = put(path.join(where.home, 'h.json'), {
      mcpServers: {
        gh: {
          command: 'node',
          args: ['${env:GH_HOST}'],
          env: { GITHUB_TOKEN: '${GITHUB_TOKEN}', LOG: '${LOG:-info}' },
        },
      },
    });
    const run = async (host: string) => {
      let out = '';
      const code = await runInit(['--from', from, '--host', host, '--force'], {
        ...where,
        platform: 'linux',
        env: { GITHUB_TOKEN: 'ghp_realvalue_never_printed', GH_HOST: 'github.com' },
        execPath: '/usr/bin/node',
        stdout: (t) => (out += t),
        stderr: () => {},
      });
      return { code, out };
    };
    const { code, out } = await run('claude-desktop');
    expect(code).toBe(0);
    expect(out).toContain(
      [
        '"env": {',
        '          "GH_HOST": "<value of GH_HOST>",',
        '          "GITHUB_TOKEN": "<value of GITHUB_TOKEN>"',
        '        }',
      ].join('\n'),
    );
    expect(out).toContain('The config reads the environment variables GH_HOST, GITHUB_TOKEN');
    expect(out).not.toContain('ghp_realvalue_never_printed');
    expect(out).not.toContain('"LOG"');

    const claude = await run('claude-code');
    expect(claude.out).toContain(
      `claude mcp add --scope user warden -e 'GH_HOST=<value of GH_HOST>' -e 'GITHUB_TOKEN=<value of GITHUB_TOKEN>' -- /usr/bin/node `,
    );
  });

  it('writes an example server when no host config is found, or none of its servers can be used', async () => {
    const { code, out } = await init(machine(), []);
    expect(code).toBe(0);
    expect(out).toContain('No host config was found');
    const where = machine();
    const from = put(path.join(where.home, 'h.json'), {
      mcpServers: { old: { type: 'sse' } },
    });
    const onlySse = await init(where, ['--from', from]);
    expect(onlySse.code).toBe(0);
    expect(onlySse.out).toContain(
      'None of them could be used, so the config holds one example server (memory)',
    );
    expect(readFileSync(path.join(where.cwd, 'proxy.config.yaml'), 'utf8')).toContain('memory:');
  });

  it('reports a written config that is not valid yet, with file:line', async () => {
    const where = machine();
    const from = put(path.join(where.home, 'h.json'), {
      mcpServers: { a: { command: 'x', env: { T: '${SURELY_UNSET_VARIABLE_42}' } } },
    });
    const { code, out } = await init(where, ['--from', from]);
    expect(code).toBe(1);
    expect(out).toMatch(
      /is not valid yet.*\n.*proxy\.config\.yaml:\d+:\d+: servers\.a\.env\.T: .*SURELY_UNSET_VARIABLE_42/,
    );
  });

  it('rejects an unknown policy or host and a --from without servers', async () => {
    const where = machine();
    expect((await init(where, ['--policy', 'nope'])).err).toContain(
      'no shipped policy "nope"; choose one of default, locked-down-org, read-only-workstation, none',
    );
    expect((await init(where, ['--host', 'emacs'])).code).toBe(2);
    const empty = put(path.join(where.home, 'e.json'), { other: 1 });
    expect((await init(where, ['--from', empty])).err).toContain('holds no MCP servers');
  });
});

describe("a host's remote servers", () => {
  /** runInit with a credential store in a file of its own (as where no OS store is reachable). */
  async function initWithStore(where: { home: string; cwd: string }, args: string[]) {
    const { openCredentialStore } = await import('../../src/lib/credentials/index.js');
    const file = path.join(where.home, 'credentials.json');
    const store = await openCredentialStore({ env: { MCP_WARDEN_CREDENTIALS_FILE: file }, prefer: 'file' });
    const { code, out } = await init(where, args, undefined, () => Promise.resolve(store));
    return { code, out, store, file };
  }

  it("Cursor's url entries become HTTP servers that sign in through the gateway; a token in a header goes to the credential store", async () => {
    const where = machine();
    put(path.join(where.home, '.cursor', 'mcp.json'), {
      mcpServers: {
        linear: { url: 'https://mcp.linear.app/mcp', headers: { Authorization: 'Bearer lin_api_s3cret' } },
        notion: { url: 'https://mcp.notion.com/mcp' },
      },
    });
    const { code, out, store, file } = await initWithStore(where, []);
    expect(out).toContain(
      `header Authorization: its value is kept in ${file} as LINEAR_AUTHORIZATION, and the config reads it as \${keychain:LINEAR_AUTHORIZATION}`,
    );
    expect(code).toBe(0);
    const yaml = readFileSync(path.join(where.cwd, 'proxy.config.yaml'), 'utf8');
    expect(yaml).not.toContain('lin_api_s3cret');
    expect(yaml).toContain(
      [
        '  # A remote server. If it asks for a sign-in (OAuth), mcp-warden signs in for it: call the',
        '  # linear__authorize tool from the host, or run: mcp-warden auth login linear --config <this file>',
        '  linear:',
        '    type: http',
        '    url: https://mcp.linear.app/mcp',
        '    headers:',
        '      Authorization: Bearer ${keychain:LINEAR_AUTHORIZATION}',
      ].join('\n'),
    );
    expect(yaml).toContain('# notion__authorize tool from the host');
    expect(yaml).toMatch(/ {2}notion:\n {4}type: http\n {4}url: https:\/\/mcp\.notion\.com\/mcp\n/);
    expect(await store.get('secret:LINEAR_AUTHORIZATION')).toBe('lin_api_s3cret');
  });

  it("VS Code's http and sse entries keep their other headers; without a credential store a secret header reads an environment variable", async () => {
    const where = machine();
    const from = put(path.join(where.cwd, '.vscode', 'mcp.json'), {
      servers: {
        gh: {
          type: 'http',
          url: 'https://api.example.com/mcp',
          headers: { 'X-API-Key': 'k-s3cret', 'X-Org': 'acme', 'X-Token-From-Env': '${env:TOKEN}' },
        },
        events: { type: 'sse', url: 'https://events.example.com/sse' },
      },
    });
    const { code, out } = await init(where, ['--from', from]);
    const yaml = readFileSync(path.join(where.cwd, 'proxy.config.yaml'), 'utf8');
    expect(yaml).not.toContain('k-s3cret');
    expect(yaml).toContain('X-API-Key: ${env:GH_X_API_KEY}');
    expect(yaml).toContain('X-Org: acme');
    expect(yaml).toContain('X-Token-From-Env: ${env:TOKEN}');
    expect(yaml).toMatch(/ {2}events:\n {4}type: http\n {4}url: https:\/\/events\.example\.com\/sse\n/);
    expect(out).toContain(
      'header X-API-Key: its value is not copied into the config, which reads it from the environment variable GH_X_API_KEY',
    );
    expect(out).toContain('was type "sse"');
    // The environment variables are not set here, so the config is written but not valid yet.
    expect(out).toMatch(/servers\.gh\.headers\.X-API-Key: environment variable "GH_X_API_KEY" is not set/);
    expect(code).toBe(1);
  });

  it("Claude Code's type http entries are carried over", async () => {
    const where = machine();
    const from = put(path.join(where.cwd, '.mcp.json'), {
      mcpServers: { sentry: { type: 'http', url: 'https://mcp.sentry.dev/mcp' } },
    });
    const { code } = await init(where, ['--from', from]);
    expect(code).toBe(0);
    const yaml = readFileSync(path.join(where.cwd, 'proxy.config.yaml'), 'utf8');
    expect(yaml).toContain('mcp-warden auth login sentry --config <this file>\n  sentry:\n    type: http\n');
  });
});
