/**
 * Where the built binary reads managed settings from when MCP_WARDEN_MANAGED_DIR is set: the
 * variable may move them to a folder only an administrator can have made, never switch them
 * off. The gateway runs as an ordinary user (uid 65534; the tests run as root, so they can
 * start it under another uid and hand folders to either), and the operating system's managed
 * folder is a temp folder put in place by `test/fixtures/systemManagedDir.mjs`.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, FIXTURE, NODE, ROOT, tempDir } from './harness.js';

const USER = 65534;
const PRELOAD = path.join(ROOT, 'test/fixtures/systemManagedDir.mjs');
const asRoot = process.getuid?.() === 0;

/** A folder anyone may read, owned by `uid`, holding `managed.yaml` when given. */
function folder(options: { uid: number; managed?: string; mode?: number; gid?: number }): string {
  const dir = tempDir('warden-managed-loc-');
  if (options.managed !== undefined) {
    writeFileSync(path.join(dir, 'managed.yaml'), options.managed);
    chmodSync(path.join(dir, 'managed.yaml'), 0o644);
    chownSync(path.join(dir, 'managed.yaml'), options.uid, options.gid ?? options.uid);
  }
  chmodSync(dir, options.mode ?? 0o755);
  chownSync(dir, options.uid, options.gid ?? options.uid);
  return dir;
}

/** Runs the CLI as the ordinary user, with `system` as the machine's managed folder. */
function runAsUser(
  args: string[],
  env: { system: string; override?: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const home = folder({ uid: USER });
  return new Promise((resolve) => {
    const child = spawn(NODE, ['--import', PRELOAD, CLI, ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        WARDEN_TEST_SYSTEM_MANAGED_DIR: env.system,
        ...(env.override !== undefined && { MCP_WARDEN_MANAGED_DIR: env.override }),
      },
      uid: USER,
      gid: USER,
      cwd: home,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const SYSTEM_YAML = 'servers:\n  deny:\n    - command: ' + NODE + '\n';

describe.skipIf(!asRoot)('MCP_WARDEN_MANAGED_DIR set by the user', () => {
  it('pointing at a folder of their own is ignored while the system has managed settings, and says so', async () => {
    const system = folder({ uid: 0, managed: SYSTEM_YAML });
    const mine = folder({ uid: USER, managed: 'servers: {}\n' });
    const result = await runAsUser(['managed', 'show'], { system, override: mine });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`managed settings from ${system}/managed.yaml`);
    expect(result.stdout).not.toContain('set by MCP_WARDEN_MANAGED_DIR');
    expect(result.stderr).toContain(
      `MCP_WARDEN_MANAGED_DIR=${mine} is ignored: ${mine} belongs to uid ${USER}, not root`,
    );
    expect(result.stderr).toContain(`the managed settings in ${system}/managed.yaml are in force`);
  });

  it('cannot switch managed settings off through an empty folder of root, and the blocked server stays blocked', async () => {
    const system = folder({ uid: 0, managed: SYSTEM_YAML });
    const empty = folder({ uid: 0 });
    const configDir = folder({ uid: USER });
    const config = path.join(configDir, 'proxy.config.yaml');
    writeFileSync(config, `servers:\n  fx:\n    command: ${NODE}\n    args: [${FIXTURE}]\n`);
    chmodSync(config, 0o644);
    const result = await runAsUser(['check', '--config', config], { system, override: empty });
    expect(result.stdout).toContain(
      `MCP_WARDEN_MANAGED_DIR=${empty} is ignored: ${empty} holds no managed.yaml, and a moved managed folder cannot switch managed settings off`,
    );
    expect(result.stdout + result.stderr).toContain('server "fx" is blocked by managed settings');
  });

  it('pointing at a root folder its group can write is ignored', async () => {
    const system = folder({ uid: 0, managed: SYSTEM_YAML });
    const shared = folder({ uid: 0, gid: USER, mode: 0o775, managed: 'servers: {}\n' });
    const result = await runAsUser(['managed', 'show'], { system, override: shared });
    expect(result.stderr).toContain(`${shared} may be written by its group (gid ${USER})`);
    expect(result.stdout).toContain(`managed settings from ${system}/managed.yaml`);
  });

  it('is honoured when an administrator made the folder and its file (root owns them, nobody else may write)', async () => {
    const system = folder({ uid: 0, managed: SYSTEM_YAML });
    const moved = folder({ uid: 0, managed: 'servers:\n  allow: []\n' });
    const result = await runAsUser(['managed', 'show'], { system, override: moved });
    expect(result.stderr).not.toContain('is ignored');
    expect(result.stdout).toContain(
      `managed settings from ${moved}/managed.yaml (set by MCP_WARDEN_MANAGED_DIR)`,
    );
    expect(result.stdout).toContain('allow: none (every server is blocked)');
    expect(result.stdout).toContain("lock each host's own server list too");
  });

  it('is honoured wherever it points when the machine has no managed settings', async () => {
    const system = folder({ uid: 0 });
    const mine = folder({ uid: USER });
    mkdirSync(path.join(mine, 'sub'));
    writeFileSync(path.join(mine, 'managed.yaml'), 'servers:\n  allow: []\n');
    const result = await runAsUser(['managed', 'show'], { system, override: mine });
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain(
      `managed settings from ${mine}/managed.yaml (set by MCP_WARDEN_MANAGED_DIR)`,
    );
  });
});
