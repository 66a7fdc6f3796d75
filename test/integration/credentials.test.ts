import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, connectHost, NODE, runCli, runProcess, tempDir } from './harness.js';
import { headlessEnv, keychainConfig, SECRET } from './credentialsSetup.js';

/*
 * Secrets the config names as ${keychain:NAME}, stored with `mcp-warden secret set`: in the
 * Secret Service when a D-Bus session has one (a real gnome-keyring-daemon, started here), else
 * in the user-only file with a warning naming it. What a gateway serving in-process does with
 * a stored or missing secret is in test/inprocess/credentials.test.ts; `check` and `init` here
 * read the file the binary wrote, end to end.
 */

/** Runs the CLI with `input` on its stdin (a pipe, as `printf %s "$TOKEN" | mcp-warden ...`). */
function runWithInput(
  args: string[],
  input: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe('without a Secret Service: the file', () => {
  it('secret set stores a piped value in a file only the user can read, warning once where it is', async () => {
    const { env, file } = headlessEnv();
    const set = await runWithInput(['secret', 'set', 'API_KEY'], `${SECRET}\n`, env);
    expect(set.stderr).toContain(`secrets are kept in ${file}, readable by you only`);
    expect(set.stderr.match(/mcp-warden: warning:/g)).toHaveLength(1);
    expect(set.stderr).toContain(`stored secret "API_KEY" in ${file}`);
    expect(set.stderr).not.toContain(SECRET);
    expect(set.code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    // The final line break a pipe brings is not part of the value.
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      version: 1,
      secrets: { 'secret:API_KEY': SECRET },
    });

    const list = await runCli(['secret', 'list'], env);
    expect(list.stdout).toBe('API_KEY\n');
    expect(list.code).toBe(0);

    expect((await runCli(['secret', 'delete', 'API_KEY'], env)).code).toBe(0);
    const again = await runCli(['secret', 'delete', 'API_KEY'], env);
    expect(again.stderr).toContain('there is no secret "API_KEY"');
    expect(again.code).toBe(1);
  });

  it('refuses a file others can read, naming it and the chmod that fixes it', async () => {
    const { env, file } = headlessEnv();
    await runWithInput(['secret', 'set', 'A'], 'x', env);
    spawnSync('chmod', ['644', file]);
    const list = await runCli(['secret', 'list'], env);
    expect(list.stderr).toContain(
      `the credentials file ${file} can be read or written by other users (mode 0644)`,
    );
    expect(list.stderr).toContain(`chmod 600 ${file}`);
    expect(list.code).toBe(2);
  });

  it('a secret that is not stored is a config error naming file:line, key and the command that stores it', async () => {
    const { env } = headlessEnv();
    const config = keychainConfig(tempDir());
    const { code, stderr } = await runCli(['check', '--config', config], env);
    expect(stderr).toContain(
      `${config}:11:16: servers.api.env.API_KEY: secret "API_KEY" is not in the credential store`,
    );
    expect(stderr).toContain('store it with: mcp-warden secret set API_KEY');
    expect(code).toBe(2);
  });
});

describe('init with a remote server from Cursor', () => {
  it('writes it as an HTTP server that signs in through the gateway, its header token in the credential store', async () => {
    const { env, file } = headlessEnv();
    const cursor = path.join(env.HOME!, '.cursor', 'mcp.json');
    mkdirSync(path.dirname(cursor), { recursive: true });
    writeFileSync(
      cursor,
      JSON.stringify({
        mcpServers: {
          linear: { url: 'https://mcp.linear.app/mcp', headers: { Authorization: `Bearer ${SECRET}` } },
        },
      }),
    );
    const project = tempDir('warden-project-');
    const init = await runProcess(NODE, [CLI, 'init'], { cwd: project, env });
    expect(init.stdout).toContain(
      `header Authorization: its value is kept in ${file} as LINEAR_AUTHORIZATION`,
    );
    expect(init.code).toBe(0);
    const yaml = readFileSync(path.join(project, 'proxy.config.yaml'), 'utf8');
    expect(yaml).not.toContain(SECRET);
    expect(yaml).toContain('Authorization: Bearer ${keychain:LINEAR_AUTHORIZATION}');
    expect(yaml).toContain('linear__authorize');
    expect(JSON.parse(readFileSync(file, 'utf8')).secrets).toEqual({ 'secret:LINEAR_AUTHORIZATION': SECRET });
    expect(init.stdout + init.stderr).not.toContain(SECRET);

    const check = await runCli(['check', '--config', path.join(project, 'proxy.config.yaml')], env);
    expect(check.code).toBe(0);
  });
});

const KEYRING_TOOLS = ['dbus-run-session', 'gnome-keyring-daemon', 'secret-tool'];
const missingTools = KEYRING_TOOLS.filter(
  (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0,
);

/**
 * A D-Bus session with gnome-keyring's Secret Service in it, unlocked with a password given on
 * stdin. The session lasts while this process's stdin is open.
 */
class SecretServiceSession {
  private readonly child: ChildProcessWithoutNullStreams;
  readonly home = tempDir('warden-keyring-home-');
  readonly ready: Promise<string>;

  constructor() {
    this.child = spawn(
      'dbus-run-session',
      [
        '--',
        'sh',
        '-c',
        'printf %s test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null && echo "BUS=$DBUS_SESSION_BUS_ADDRESS" && exec cat',
      ],
      { env: { PATH: process.env.PATH ?? '', HOME: this.home }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.ready = new Promise((resolve, reject) => {
      const lines = createInterface({ input: this.child.stdout });
      lines.on('line', (line) => {
        if (line.startsWith('BUS=')) resolve(line.slice(4));
      });
      this.child.on('close', (code) => reject(new Error(`dbus-run-session ended (${code})`)));
    });
  }

  async env(): Promise<Record<string, string>> {
    return {
      HOME: this.home,
      XDG_CONFIG_HOME: path.join(this.home, 'config'),
      DBUS_SESSION_BUS_ADDRESS: await this.ready,
    };
  }

  close(): void {
    this.child.stdin.end();
  }
}

describe.skipIf(missingTools.length > 0)('with a Secret Service (gnome-keyring in a D-Bus session)', () => {
  let session: SecretServiceSession | undefined;
  afterEach(() => session?.close());

  it('secret set lands in the Secret Service, not in the file, and the config reads it from there', async () => {
    session = new SecretServiceSession();
    const env = await session.env();
    const set = await runWithInput(['secret', 'set', 'API_KEY'], SECRET, env);
    expect(set.stderr).toBe(
      'mcp-warden: stored secret "API_KEY" in Secret Service; refer to it in the config as ${keychain:API_KEY}\n',
    );
    expect(set.code).toBe(0);

    const lookup = spawnSync(
      'secret-tool',
      ['lookup', 'service', 'mcp-warden', 'username', 'secret:API_KEY'],
      {
        env: { PATH: process.env.PATH ?? '', ...env },
        encoding: 'utf8',
      },
    );
    expect(lookup.stdout).toBe(SECRET);
    expect(existsSync(path.join(env.XDG_CONFIG_HOME!, 'mcp-warden', 'credentials.json'))).toBe(false);

    const list = await runCli(['secret', 'list'], env);
    expect(list.stdout).toBe('API_KEY\n');

    const dir = tempDir();
    const host = await connectHost(keychainConfig(dir), { env });
    try {
      const result = await host.client.callTool({ name: 'api__env', arguments: { name: 'API_KEY' } });
      expect(result.content).toEqual([{ type: 'text', text: SECRET }]);
    } finally {
      await host.close();
    }
    expect(host.stderr()).not.toContain('warning');
    expect(readFileSync(path.join(dir, 'audit.jsonl'), 'utf8')).not.toContain(SECRET);
  });
});

describe.skipIf(missingTools.length === 0)('with a Secret Service', () => {
  // Reported as skipped, with the reason, rather than as a test that passed.
  it('needs gnome-keyring, dbus and libsecret-tools', (context) =>
    context.skip(`${missingTools.join(', ')} not installed (.ci/run installs them with apt-get)`));
});
