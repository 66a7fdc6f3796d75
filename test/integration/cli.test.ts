/**
 * The subcommands a user runs by hand, and the Streamable HTTP upstream path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  connectHost,
  FAST_GATEWAY,
  FIXTURE,
  fixture,
  freePort,
  NODE,
  runCli,
  serverBin,
  tempDir,
  writeConfig,
} from './harness.js';

/**
 * A claude_desktop_config.json as the app leaves it, its own settings around `mcpServers`, with
 * the fixture server in it; `extra` lines are added at the top level.
 */
function writeDesktopConfig(extra: string[] = []): string {
  const file = path.join(tempDir(), 'claude_desktop_config.json');
  const text = [
    '{',
    '  "globalShortcut": "Alt+Ctrl+Space",',
    ...extra,
    '  "mcpServers": {',
    '    "desk": {',
    `      "command": ${JSON.stringify(NODE)},`,
    `      "args": [${JSON.stringify(FIXTURE)}]`,
    '    }',
    '  },',
    '  "preferences": { "menuBarEnabled": false }',
    '}',
    '',
  ].join('\n');
  writeFileSync(file, text);
  return file;
}

describe('mcp-warden check', () => {
  it('accepts a valid config', async () => {
    const config = writeConfig({ servers: { up: fixture() } });
    const { code, stdout } = await runCli(['check', '--config', config]);
    expect(code).toBe(0);
    expect(stdout).toBe(`${config}: ok (1 server, 1 enabled; no policy files)\n`);
  });

  it('reports every problem with file:line:column and key, exit 2', async () => {
    const config = writeConfig(
      [
        'gateway:',
        '  timeout: soon',
        'servers:',
        '  a:',
        '    command: node',
        '    url: http://x',
        '  b:',
        '    args: [x]',
        '',
      ].join('\n'),
    );
    const { code, stderr, stdout } = await runCli(['check', '--config', config]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('mcp-warden: invalid config:');
    expect(stderr).toMatch(new RegExp(`${config}:2:12: gateway\\.timeout: .*`));
    expect(stderr).toMatch(new RegExp(`${config}:4:3: servers\\.a: .*command.*url`));
    expect(stderr).toMatch(new RegExp(`${config}:7:3: servers\\.b: .*`));
  });

  it('takes a Claude Desktop file as it is: the app’s own keys are warnings on stdout, exit 0', async () => {
    const config = writeDesktopConfig();
    const { code, stdout, stderr } = await runCli(['check', '--config', config]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toBe(
      [
        `warning: ${config}:2:3: globalShortcut: ignored: not an mcp-warden setting`,
        `warning: ${config}:9:3: preferences: ignored: not an mcp-warden setting`,
        `${config}: ok (1 server, 1 enabled; no policy files; 2 warnings)`,
        '',
      ].join('\n'),
    );
  });

  it('keeps a typo of its own key in a Claude Desktop file an error, exit 2', async () => {
    const config = writeDesktopConfig(['  "polices": ["team.yaml"],']);
    const { code, stdout, stderr } = await runCli(['check', '--config', config]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(`${config}:3:3: polices: unknown key "polices" (did you mean "policies"?)`);
  });

  it('names a missing environment variable and the key that uses it', async () => {
    const config = writeConfig(
      ['servers:', '  gh:', '    command: node', '    env:', '      TOKEN: ${WARDEN_NOT_SET}', ''].join('\n'),
    );
    const { code, stderr } = await runCli(['check', '--config', config]);
    expect(code).toBe(2);
    expect(stderr).toContain(`${config}:5:14: servers.gh.env.TOKEN:`);
    expect(stderr).toContain('WARDEN_NOT_SET');
  });

  it('says which file is missing', async () => {
    const { code, stderr } = await runCli(['check', '--config', '/nonexistent/proxy.config.yaml']);
    expect(code).toBe(2);
    expect(stderr).toContain('/nonexistent/proxy.config.yaml');
    expect(stderr).toContain('ENOENT');
  });

  it('explains usage errors', async () => {
    const { code, stderr } = await runCli(['frobnicate', '--config', 'x']);
    expect(code).toBe(2);
    expect(stderr).toContain('unknown command "frobnicate"');
    expect(stderr).toContain('Usage:');
  });
});

describe('mcp-warden tools', () => {
  it('prints the merged catalog with each server’s fate, exit 1 when one failed', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { up: fixture(), broken: fixture(['--crash-at-start']), off: fixture([], { disabled: true }) },
    });
    const { code, stdout } = await runCli(['tools', '--config', config]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^TOOL\s+SERVER\s+DESCRIPTION$/m);
    expect(stdout).toMatch(/^up__echo\s+up\s+Returns its text argument unchanged\.$/m);
    expect(stdout).toMatch(/^server broken: failed|^server broken: unavailable/m);
    expect(stdout).toContain('server off: disabled, 0 tools');
  });

  it('prints JSON with --json', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } });
    const { code, stdout } = await runCli(['tools', '--json', '--config', config]);
    expect(code).toBe(0);
    const listing = JSON.parse(stdout) as { tools: { name: string; server: string; tool: string }[] };
    expect(listing.tools).toContainEqual(
      expect.objectContaining({ name: 'up__add', server: 'up', tool: 'add' }),
    );
  });

  it('leaves out exactly what tools/list through the gateway leaves out: policy-hidden and app-only tools', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'hide.yaml'),
      'rules:\n  - id: no-add\n    match: { server: up, tool: add }\n    action: deny\n',
    );
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: ['./hide.yaml'],
        servers: { up: fixture(), fx: fixture(['--tools', 'apps', '--name', 'fx']) },
      },
      dir,
    );
    const { code, stdout } = await runCli(['tools', '--json', '--config', config]);
    expect(code).toBe(0);
    const printed = (JSON.parse(stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    const host = await connectHost(config);
    let served: string[];
    try {
      served = (await host.client.listTools()).tools.map((t) => t.name);
    } finally {
      await host.close();
    }
    expect(served).toContain('fx__app_show');
    expect(served).not.toContain('up__add');
    expect(served).not.toContain('fx__app_refresh');
    expect([...printed].sort()).toEqual([...served].sort());
  });
});

describe('a Claude Desktop file as the config', () => {
  it('is served, its ignored keys logged on stderr at start-up', async () => {
    const config = writeDesktopConfig();
    const host = await connectHost(config);
    try {
      expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('desk__echo');
      const result = await host.client.callTool({ name: 'desk__echo', arguments: { text: 'hi' } });
      expect(result.content).toEqual([{ type: 'text', text: 'hi' }]);
      await host.waitForStderr(
        new RegExp(`warn: ${config}:2:3: globalShortcut: ignored: not an mcp-warden setting`),
      );
      expect(host.stderr()).toContain(`${config}:9:3: preferences: ignored: not an mcp-warden setting`);
    } finally {
      await host.close();
    }
  });

  it('keeps `tools --json` output JSON: the warnings go to stderr', async () => {
    const config = writeDesktopConfig();
    const { code, stdout, stderr } = await runCli(['tools', '--json', '--config', config]);
    expect(code).toBe(0);
    const listing = JSON.parse(stdout) as { tools: { name: string }[] };
    expect(listing.tools.map((t) => t.name)).toContain('desk__echo');
    expect(stderr).toContain(`warning: ${config}:2:3: globalShortcut: ignored: not an mcp-warden setting`);
  });
});

/**
 * A project folder with a `.vscode/mcp.json` as VS Code users write it: an `inputs` list, and
 * the fixture server given an env file and a `${workspaceFolder}` path. Returns the config file.
 */
function writeVscodeProject(secret: string): { project: string; config: string } {
  const project = tempDir('warden-vscode-');
  mkdirSync(path.join(project, '.vscode'));
  writeFileSync(
    path.join(project, '.env'),
    `# read by mcp-warden, as by VS Code\nFROM_ENV_FILE="${secret}"\n`,
  );
  const config = path.join(project, '.vscode', 'mcp.json');
  const text = [
    '{',
    '  "inputs": [{ "type": "promptString", "id": "token", "description": "API token", "password": true }],',
    '  "servers": {',
    '    "code": {',
    '      "type": "stdio",',
    `      "command": ${JSON.stringify(NODE)},`,
    `      "args": [${JSON.stringify(FIXTURE)}, "--pid-file", "\${workspaceFolder}/fixture.pid"],`,
    '      "envFile": "${workspaceFolder}/.env"',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');
  writeFileSync(config, text);
  return { project, config };
}

describe('a VS Code .vscode/mcp.json as the config', () => {
  const inputsWarning =
    "inputs: ignored: the editor's list of values to ask the user for; mcp-warden cannot ask, so a ${input:…} that uses one is an error";

  it('is checked: its inputs are a warning on stdout, exit 0', async () => {
    const { config } = writeVscodeProject('s3cret-check');
    const { code, stdout, stderr } = await runCli(['check', '--config', config]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toBe(
      [
        `warning: ${config}:2:3: ${inputsWarning}`,
        `${config}: ok (1 server, 1 enabled; no policy files; 1 warning)`,
        '',
      ].join('\n'),
    );
  });

  it('is served: the server gets its env file and runs with ${workspaceFolder} expanded', async () => {
    const secret = 's3cret-from-the-env-file';
    const { project, config } = writeVscodeProject(secret);
    const host = await connectHost(config);
    try {
      const result = await host.client.callTool({ name: 'code__env', arguments: { name: 'FROM_ENV_FILE' } });
      expect(result.content).toEqual([{ type: 'text', text: secret }]);
      // The fixture wrote its pid where ${workspaceFolder} pointed: the project, not .vscode/.
      expect(Number(readFileSync(path.join(project, 'fixture.pid'), 'utf8'))).toBeGreaterThan(0);
      await host.waitForStderr(`${config}:2:3: ${inputsWarning}`);
      expect(host.stderr()).not.toContain(secret);
    } finally {
      await host.close();
    }
  });
});

describe('Streamable HTTP upstream', () => {
  let httpServer: ChildProcess;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    httpServer = spawn(NODE, [serverBin('everything'), 'streamableHttp'], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    await new Promise<void>((resolve) => {
      let seen = '';
      httpServer.stderr!.on('data', (c: Buffer) => {
        seen += c.toString();
        if (seen.includes(`listening on port ${port}`)) resolve();
      });
    });
  });
  afterAll(() => {
    httpServer?.kill('SIGKILL');
  });

  it('is listed and called like a stdio one', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { remote: { url: `http://127.0.0.1:${port}/mcp` }, local: fixture() },
    });
    const host = await connectHost(config);
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('remote__echo');
    expect(names).toContain('local__echo');
    const result = await host.client.callTool({ name: 'remote__echo', arguments: { message: 'over http' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: over http' }]);
    await host.close();
  });

  it('an unreachable URL fails that server only, naming the URL', async () => {
    const dead = await freePort();
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { remote: { url: `http://127.0.0.1:${dead}/mcp` }, local: fixture() },
    });
    const host = await connectHost(config);
    expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('local__echo');
    await host.waitForStderr(new RegExp(`\\[remote\\].*url: http://127\\.0\\.0\\.1:${dead}/mcp`));
    await host.close();
  });
});
