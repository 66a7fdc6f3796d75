/**
 * The package as a user gets it: `npm pack` of this checkout, installed globally into a temporary
 * prefix from the tarball, then the installed `mcp-warden` run for `--version`, `init` from a
 * Claude Desktop config, and a real tool call by a host launching what init printed. Offline
 * after `npm ci` where npm's cache has what the install needs (--prefer-offline).
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runProcess, tempDir } from './harness.js';
import { echoThrough, homeWithClaudeDesktop, printedEntry, runIn } from './initHelpers.js';

const NPM_QUIET = ['--no-audit', '--no-fund', '--loglevel=error'];

describe('the packed package, installed', () => {
  it('installs from its tarball and runs --version, init and a tool call', { timeout: 180_000 }, async () => {
    const work = tempDir('warden-install-');
    const packDir = path.join(work, 'pack');
    const prefix = path.join(work, 'prefix');
    mkdirSync(packDir);
    // --ignore-scripts: the tests run on a fresh build already, and prepare would rebuild dist/
    // under the feet of other tests running at the same time.
    const pack = await runProcess(
      'npm',
      ['pack', '--ignore-scripts', '--pack-destination', packDir, ...NPM_QUIET],
      { cwd: ROOT },
    );
    expect(pack.code, pack.stderr).toBe(0);
    const tarballs = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
    expect(tarballs).toHaveLength(1);
    const tarball = path.join(packDir, tarballs[0]!);

    const install = await runProcess(
      'npm',
      ['install', '--global', '--prefix', prefix, '--prefer-offline', ...NPM_QUIET, tarball],
      { cwd: work },
    );
    expect(install.code, install.stderr).toBe(0);

    const installed = path.join(prefix, 'lib', 'node_modules', 'mcp-warden');
    const shipped = readdirSync(installed).sort();
    expect(shipped).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'dist',
        'examples',
        'package.json',
        'policies',
        'schema',
      ]),
    );
    expect(shipped).not.toContain('src');
    expect(shipped).not.toContain('test');
    // No source maps: they would point at src/, which is not shipped.
    const built = readdirSync(path.join(installed, 'dist'), { recursive: true }) as string[];
    expect(built.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(built).toContain('cli.js');

    const bin = path.join(prefix, 'bin', 'mcp-warden');
    const version = await runProcess(bin, ['--version']);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(version.stdout.trim()).toBe(pkg.version);

    const { home, project } = homeWithClaudeDesktop();
    const init = await runIn(project, bin, ['init'], home);
    expect(init.code, init.stderr).toBe(0);
    // The starter config's modeline names the schema of the installed package.
    expect(readFileSync(path.join(project, 'proxy.config.yaml'), 'utf8')).toContain(
      `$schema=${path.join(installed, 'schema', 'proxy.config.schema.json')}`,
    );
    const entry = printedEntry(init.stdout);
    expect(entry.args[0]).toBe(path.join(installed, 'dist', 'cli.js'));
    expect(await echoThrough(entry, home)).toBe('Echo: via init');
  });
});
