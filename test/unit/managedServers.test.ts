import { describe, expect, it } from 'vitest';
import { parseSpec, readLauncherArgs, urlUnder } from '../../src/core/upstreams/managedServers.js';
import { parseManagedText } from '../../src/config/managed.js';
import { ConfigError } from '../../src/config/issues.js';

const npx = {
  registry: 'npm' as const,
  subcommand: [],
  withValue: ['--cache'],
  packageOption: ['-p', '--package'],
  unreadable: ['-c', '--call'],
};
const uv = {
  registry: 'pypi' as const,
  subcommand: ['tool', 'run'],
  withValue: ['--python'],
  packageOption: ['--from'],
  unreadable: [],
};

describe('the package a launcher runs', () => {
  it('reads npm specs with scopes and versions, past flags', () => {
    expect(readLauncherArgs(npx, ['-y', '@scope/pkg@1.2.3', '/tmp'])).toEqual({
      registry: 'npm',
      name: '@scope/pkg',
      version: '1.2.3',
    });
    expect(readLauncherArgs(npx, ['--cache', '/c', 'pkg'])).toEqual({ registry: 'npm', name: 'pkg' });
    expect(readLauncherArgs(npx, ['--package=real', 'bin-name'])).toEqual({ registry: 'npm', name: 'real' });
  });
  it('gives up on what it cannot read rather than guess', () => {
    expect(readLauncherArgs(npx, ['-c', 'evil && good'])).toBeUndefined();
    expect(readLauncherArgs(npx, ['-p', 'a', '-p', 'b', 'x'])).toBeUndefined();
    expect(readLauncherArgs(npx, ['./local-folder'])).toBeUndefined();
    expect(readLauncherArgs(npx, ['git+https://example.com/x.git'])).toBeUndefined();
  });
  it('reads PyPI names normalized, with uv tool run and --from', () => {
    expect(readLauncherArgs(uv, ['tool', 'run', '--python', '3.12', 'MCP_Server.Fetch==1.0'])).toEqual({
      registry: 'pypi',
      name: 'mcp-server-fetch',
      version: '1.0',
    });
    expect(readLauncherArgs(uv, ['tool', 'run', '--from', 'real-pkg', 'cmd'])).toEqual({
      registry: 'pypi',
      name: 'real-pkg',
    });
    expect(readLauncherArgs(uv, ['run', 'x'])).toBeUndefined();
    expect(parseSpec('pypi', 'pkg[extra]@2')).toEqual({ registry: 'pypi', name: 'pkg', version: '2' });
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
