import { describe, expect, it } from 'vitest';
import {
  environmentProblem,
  namesPackage,
  parseSpec,
  readLaunch,
  urlUnder,
} from '../../src/core/upstreams/managedServers.js';
import { parseManagedText } from '../../src/config/managed.js';
import { ConfigError } from '../../src/config/issues.js';

const pkg = (registry: 'npm' | 'pypi', name: string, version?: string) => ({
  launched: { registry, name, ...(version && { version }) },
});
/** The reason a launch is refused, to assert on the words the user sees. */
function refusal(name: string, args: string[]): string {
  const reading = readLaunch(name, args);
  if (reading === undefined || !('unproven' in reading))
    throw new Error(`${name} ${args.join(' ')} was read as ${JSON.stringify(reading)}`);
  return reading.unproven;
}

describe('the package a launcher runs', () => {
  it('reads npm specs with scopes and versions, past harmless flags', () => {
    expect(readLaunch('npx', ['-y', '@scope/pkg@1.2.3', '/tmp'])).toEqual(pkg('npm', '@scope/pkg', '1.2.3'));
    expect(readLaunch('npx', ['--package=real', 'real'])).toEqual(pkg('npm', 'real'));
    expect(readLaunch('npx', ['-p', '@s/real@^2', 'real', '--flag'])).toEqual(pkg('npm', '@s/real', '^2'));
    expect(readLaunch('npm', ['exec', '--yes', '--', 'pkg@1'])).toEqual(pkg('npm', 'pkg', '1'));
    expect(readLaunch('npm', ['x', 'pkg'])).toEqual(pkg('npm', 'pkg'));
    expect(readLaunch('pnpm', ['dlx', 'pkg'])).toEqual(pkg('npm', 'pkg'));
    expect(readLaunch('node', ['pkg'])).toBeUndefined();
  });
  it('refuses a package option that runs a command of its own choosing', () => {
    expect(refusal('npx', ['-p', 'allowed', 'node', 'evil.js'])).toContain('runs the command "node"');
    expect(refusal('npx', ['--package=allowed', 'sh'])).toContain('runs the command "sh"');
    expect(refusal('npx', ['-p', 'a', '-p', 'b', 'x'])).toContain('several packages');
  });
  it('refuses versions that are not versions: aliases, file:, git, URLs, tarballs, paths', () => {
    for (const spec of [
      'allowed@npm:evil',
      'allowed@file:../evil',
      'allowed@git+https://example.com/evil.git',
      'allowed@https://example.com/evil.tgz',
      'allowed@github:evil/evil',
      'git+https://example.com/x.git',
      'https://example.com/allowed.tgz',
      './local-folder',
      '/abs/allowed',
      '~/allowed',
      'allowed.tgz',
      'file:allowed',
    ])
      expect(refusal('npx', ['-y', spec])).toContain('is not a npm package name with a version');
  });
  it('refuses launcher options that change what runs, naming why', () => {
    expect(refusal('npx', ['--registry', 'https://evil.example', 'allowed'])).toContain(
      '--registry fetches the package from another registry',
    );
    expect(refusal('npx', ['--registry=https://evil.example', 'allowed'])).toContain('--registry');
    expect(refusal('npx', ['--node-options=--require=/tmp/evil.js', 'allowed'])).toContain(
      '--node-options runs node with options of its own',
    );
    expect(refusal('npx', ['-c', 'evil && allowed'])).toContain('runs a shell string');
    expect(refusal('npx', ['--cache', '/tmp/c', 'allowed'])).toContain('cache folder');
    expect(refusal('npx', ['--whatever', 'allowed'])).toContain('--whatever is not one known');
    expect(refusal('npm', ['install', 'allowed'])).toContain('do not start with exec or x');
  });
  it('reads PyPI names normalized, with uv tool run and a Python version', () => {
    expect(readLaunch('uv', ['tool', 'run', '--python', '3.12', 'MCP_Server.Fetch==1.0'])).toEqual(
      pkg('pypi', 'mcp-server-fetch', '1.0'),
    );
    expect(readLaunch('uvx', ['mcp-server-fetch@0.6.2'])).toEqual(pkg('pypi', 'mcp-server-fetch', '0.6.2'));
    expect(readLaunch('pipx', ['run', 'pkg'])).toEqual(pkg('pypi', 'pkg'));
    expect(refusal('uv', ['run', 'x'])).toContain('do not start with tool run');
    expect(parseSpec('pypi', 'pkg[extra]@2')).toEqual({ registry: 'pypi', name: 'pkg', version: '2' });
  });
  it('refuses uvx and pipx forms that run another package, index or interpreter', () => {
    expect(refusal('uvx', ['--from', 'evil', 'allowed'])).toContain('--from installs another package');
    expect(refusal('uvx', ['--with', 'evil', 'allowed'])).toContain('--with installs extra packages');
    expect(refusal('uvx', ['--index-url', 'https://evil.example/simple', 'allowed'])).toContain(
      'another index',
    );
    expect(refusal('uvx', ['--extra-index-url=https://evil.example', 'allowed'])).toContain('another index');
    expect(refusal('uvx', ['--find-links', '/tmp/wheels', 'allowed'])).toContain(
      'takes packages from other places',
    );
    expect(refusal('uvx', ['--python', '/tmp/evil/python', 'allowed'])).toContain(
      'interpreter of its choosing',
    );
    expect(refusal('pipx', ['run', '--spec', 'evil', 'allowed'])).toContain('--spec');
    for (const spec of [
      'allowed @ https://evil.example/a.whl',
      'allowed@https://evil.example/a.whl',
      'allowed @ file:///tmp/x',
      'allowed; python_version>"3"',
      './allowed',
    ])
      expect(refusal('uvx', [spec])).toContain('is not a pypi package name with a version');
  });
});

describe("a server entry's environment", () => {
  const gateway = { PATH: '/usr/bin:/bin' };
  it('may not change the registry, the runtime or the PATH a launcher uses', () => {
    expect(environmentProblem('npm', { npm_config_registry: 'https://evil' }, gateway)).toContain(
      'npm_config_registry',
    );
    expect(environmentProblem('npm', { NPM_CONFIG_USERCONFIG: '/tmp/rc' }, gateway)).toContain(
      'NPM_CONFIG_USERCONFIG',
    );
    expect(environmentProblem('npm', { NODE_OPTIONS: '--require /tmp/e.js' }, gateway)).toContain(
      'NODE_OPTIONS',
    );
    expect(environmentProblem('npm', { PATH: '/tmp/fake:/usr/bin' }, gateway)).toContain('another node');
    expect(environmentProblem('npm', { LD_PRELOAD: '/tmp/e.so' }, gateway)).toContain('LD_PRELOAD');
    for (const key of ['UV_INDEX_URL', 'PIP_INDEX_URL', 'PYTHONPATH', 'PYTHONSTARTUP', 'UV_PYTHON'])
      expect(environmentProblem('pypi', { [key]: 'x' }, gateway)).toContain(key);
  });
  it('may set what changes nothing about what runs', () => {
    expect(environmentProblem('npm', { API_KEY: 'k', PATH: '/usr/bin:/bin' }, gateway)).toBeUndefined();
    expect(environmentProblem('pypi', { DEBUG: '1' }, gateway)).toBeUndefined();
  });
});

describe('deny rules', () => {
  const evil = { registry: 'npm' as const, name: 'evil' };
  it('find the denied package behind shells, env, aliases and package options', () => {
    expect(namesPackage(['sh', '-c', 'npx -y evil@1'], evil)).toBe(true);
    expect(namesPackage(['bash', '-c', 'exec npx evil;'], evil)).toBe(true);
    expect(namesPackage(['env', 'A=1', 'npx', 'evil'], evil)).toBe(true);
    expect(namesPackage(['npm', 'x', 'evil'], evil)).toBe(true);
    expect(namesPackage(['npx', 'good@npm:evil'], evil)).toBe(true);
    expect(namesPackage(['npx', '--package=evil', 'node', 'x.js'], evil)).toBe(true);
  });
  it('do not match other names that merely contain it', () => {
    expect(namesPackage(['npx', 'not-evil', 'evilish'], evil)).toBe(false);
  });
});

describe('URL rules', () => {
  it('match by origin and whole path segments', () => {
    expect(urlUnder('https://h.example/mcp', 'https://h.example/mcp')).toBe(true);
    expect(urlUnder('https://h.example/mcp/team', 'https://h.example/mcp')).toBe(true);
    expect(urlUnder('https://h.example/mcpx', 'https://h.example/mcp')).toBe(false);
    expect(urlUnder('https://h.example:8443/mcp', 'https://h.example/mcp')).toBe(false);
    expect(urlUnder('http://h.example/mcp', 'https://h.example/mcp')).toBe(false);
    expect(urlUnder('https://h.example/anything', 'https://h.example/')).toBe(true);
  });
});

describe('managed.yaml validation', () => {
  it('names every problem with its line', () => {
    let error: unknown;
    try {
      parseManagedText(
        'servers:\n  allow:\n    - npm: a\n      url: https://x\n  deny: [{sha256: abc}]\nlock:\n  servers: {}\nextra: 1\n',
        '/m/managed.yaml',
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).message;
    expect(text).toContain('/m/managed.yaml:3');
    expect(text).toContain('give exactly one way of matching per rule');
    expect(text).toContain('must be 64 hexadecimal digits');
    expect(text).toContain('"servers" cannot be locked');
    expect(text).toContain('unknown key "extra"');
  });
});
