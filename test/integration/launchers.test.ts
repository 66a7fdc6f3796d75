/**
 * Servers started through a package launcher (npx, uvx, ...), through the built binary, with a
 * fake `npx` first on PATH: a first start that installs for longer than the gateway's start-up
 * window is waited for and never cut short (which would leave npx's cache half written), and a
 * launcher whose cache is broken fails with an error that says so and how to clear it.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURE, NODE, runCli, tempDir } from './harness.js';

/** A folder holding an executable `npx` that runs `script` (sh). */
function fakeNpx(script: string): string {
  const bin = tempDir('warden-fake-npx-');
  const file = path.join(bin, 'npx');
  writeFileSync(file, `#!/bin/sh\n${script}\n`);
  chmodSync(file, 0o755);
  return bin;
}

describe('a server started through npx', () => {
  it('is given the time a first install takes: tools waits past gateway.startupTimeout and never stops it mid-install', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'install.log');
    // An install of about 12 s, past the default gateway.startupTimeout of 10 s, written step by
    // step so that a stop part-way shows as a log without its last line; then the server.
    const bin = fakeNpx(
      [
        'i=0',
        'while [ $i -lt 24 ]; do echo "step $i" >> "$MARKER"; sleep 0.5; i=$((i+1)); done',
        'echo complete >> "$MARKER"',
        `exec "${NODE}" "${FIXTURE}" --name fake`,
      ].join('\n'),
    );
    const config = path.join(dir, 'proxy.config.yaml');
    writeFileSync(
      config,
      `servers:\n  fake:\n    command: npx\n    args: [-y, fake-mcp-server]\n    env: { MARKER: ${JSON.stringify(marker)} }\n`,
    );
    const { code, stdout, stderr } = await runCli(['tools', '--config', config], {
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
    });
    expect(readFileSync(marker, 'utf8')).toMatch(/step 23\ncomplete\n$/);
    expect(stdout, stderr).toMatch(/^server fake: ready, \d+ tools/m);
    expect(code).toBe(0);
  }, 90_000);

  it('when it must be stopped, gives its whole process group the grace period, even after npx itself has exited', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'installer.log');
    // npx exits at once on SIGTERM; the installer it started takes 100 ms to finish its write.
    const bin = fakeNpx(
      [
        `sh -c 'trap "sleep 0.1; echo finished >> \\"$MARKER\\"; exit 0" TERM; echo started >> "$MARKER"; while :; do sleep 0.1; done' &`,
        'wait',
      ].join('\n'),
    );
    const config = path.join(dir, 'proxy.config.yaml');
    writeFileSync(
      config,
      `servers:\n  fake:\n    command: npx\n    args: [-y, fake-mcp-server]\n    startupTimeout: 1s\n    env: { MARKER: ${JSON.stringify(marker)} }\n`,
    );
    const { code, stdout } = await runCli(['tools', '--config', config], {
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
    });
    expect(stdout).toContain(
      'server fake: unavailable, 0 tools: still starting when its startupTimeout (1s) passed',
    );
    expect(code).toBe(1);
    expect(readFileSync(marker, 'utf8')).toBe('started\nfinished\n');
  }, 60_000);

  it('whose cache is broken fails saying so, and how to clear it', async () => {
    const dir = tempDir();
    const cached = '/home/someone/.npm/_npx/3f9c1a2b4d5e6f70';
    const bin = fakeNpx(
      [
        "cat >&2 <<'EOF'",
        'node:internal/modules/esm/resolve:873',
        '  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);',
        '        ^',
        '',
        `Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from ${cached}/node_modules/@acme/mcp-server/dist/index.js`,
        '    at packageResolve (node:internal/modules/esm/resolve:873:9)',
        '    at moduleResolve (node:internal/modules/esm/resolve:946:18)',
        '    at defaultResolve (node:internal/modules/esm/resolve:1188:11)',
        '    at ModuleLoader.defaultResolve (node:internal/modules/esm/loader:708:12)',
        '    at ModuleLoader.resolve (node:internal/modules/esm/loader:640:38) {',
        "  code: 'ERR_MODULE_NOT_FOUND'",
        '}',
        '',
        'Node.js v20.20.2',
        'EOF',
        'exit 1',
      ].join('\n'),
    );
    const config = path.join(dir, 'proxy.config.yaml');
    writeFileSync(
      config,
      'gateway:\n  restart: { initialDelay: 50ms, maxDelay: 100ms, maxRestarts: 1, window: 10s }\nservers:\n  acme:\n    command: npx\n    args: [-y, "@acme/mcp-server"]\n',
    );
    const { code, stdout } = await runCli(['tools', '--config', config], {
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
    });
    expect(code).toBe(1);
    expect(stdout).toContain(
      `npx's cache looks broken (a package there is incomplete, as when an install was cut short): remove that package's folder with rm -rf ${cached} (or clear the whole cache with npm cache clean --force), then start again`,
    );
  }, 60_000);
});
