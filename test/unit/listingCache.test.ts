import { mkdirSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StdioServerConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/core/logger.js';
import {
  createListingCache,
  installedVersion,
  listingKey,
  listingsFolder,
  principalListingCache,
} from '../../src/features/pins/listingCache.js';

const dir = () => mkdtempSync(path.join(tmpdir(), 'warden-listings-'));
const logger = createLogger({ level: 'error' });

function server(overrides: Partial<StdioServerConfig> = {}): StdioServerConfig {
  return {
    name: 'mem',
    transport: 'stdio',
    command: 'npx',
    args: ['-y', '@modelcontextprotocol/server-memory'],
    env: { TOKEN: 'secret-value' },
    cwd: '/nowhere',
    start: 'lazy',
    ...overrides,
  } as StdioServerConfig;
}

const listing = {
  lists: {
    tools: [{ name: 'read_graph', inputSchema: { type: 'object' } }],
    prompts: [],
    resources: [],
    resourceTemplates: [],
  },
  capabilities: { tools: {} },
};
/** What a read gives back: the listing as written, with when it was kept. */
const asKept = { ...listing, keptAt: expect.any(String) as unknown as string };

describe('listing cache', () => {
  it('keeps a listing for the same entry, beside the pins file, without the values of env', () => {
    const folder = dir();
    const config = {
      file: path.join(folder, 'proxy.config.yaml'),
      pins: { file: path.join(folder, 'tool-pins.json') },
    };
    const cache = createListingCache(config as never, { logger });
    cache.write(server(), listing);
    const kept = path.join(folder, 'tool-pins.listings');
    expect(listingsFolder(config as never)).toBe(kept);
    expect(readFileSync(path.join(kept, 'mem.json'), 'utf8')).not.toContain('secret-value');
    expect(readFileSync(path.join(kept, 'mem.lists.json'), 'utf8')).toContain('read_graph');
    // A second gateway reads what the first kept.
    expect(createListingCache(config as never, { logger }).read(server())).toEqual(asKept);
  });

  it('does not give a listing to an entry whose command, args, env or url changed', () => {
    const folder = dir();
    const cache = createListingCache({ file: '/x.yaml' } as never, { logger, folder });
    cache.write(server(), listing);
    expect(cache.read(server())).toEqual(asKept);
    // An eager server's capabilities are kept, not its lists.
    cache.write(server({ name: 'eager', start: 'eager' }), listing);
    expect(cache.read(server({ name: 'eager', start: 'eager' }))).toEqual({
      capabilities: listing.capabilities,
      keptAt: expect.any(String),
    });
    expect(cache.read(server({ args: ['-y', '@modelcontextprotocol/server-memory@2.0.0'] }))).toBeUndefined();
    expect(cache.read(server({ env: { TOKEN: 'another' } }))).toBeUndefined();
    expect(cache.read(server({ command: 'node' }))).toBeUndefined();
  });

  it('keys an npx server by the version installed where npx finds it', () => {
    const project = dir();
    const pkg = path.join(project, 'node_modules', '@scope', 'tool');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ version: '1.2.3' }));
    const cwd = path.join(project, 'sub');
    mkdirSync(cwd);
    expect(installedVersion('npx', ['-y', '@scope/tool@^1'], cwd, '/no-home')).toBe('1.2.3');
    expect(installedVersion('npx', ['--package=@scope/tool', 'tool'], cwd, '/no-home')).toBe('1.2.3');
    const before = listingKey(server({ args: ['-y', '@scope/tool'], cwd }));
    writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ version: '1.3.0' }));
    expect(listingKey(server({ args: ['-y', '@scope/tool'], cwd }))).not.toBe(before);
    // In npx's own cache, when no project has it.
    const home = dir();
    const cached = path.join(home, '.npm', '_npx', 'abc123', 'node_modules', 'other');
    mkdirSync(cached, { recursive: true });
    writeFileSync(path.join(cached, 'package.json'), JSON.stringify({ version: '0.9.0' }));
    expect(installedVersion('npx', ['other'], '/', home)).toBe('0.9.0');
    expect(installedVersion('node', ['other'], '/', home)).toBeUndefined();
  });

  it('keys a uvx server by the version uv last installed, and by its spec', () => {
    const home = dir();
    const sitePackages = (env: string) => {
      const folder = path.join(home, '.cache', 'uv', 'archive-v0', env, 'lib', 'python3.12', 'site-packages');
      mkdirSync(folder, { recursive: true });
      return folder;
    };
    const older = path.join(sitePackages('aaa'), 'mcp_server_fetch-1.0.0.dist-info');
    mkdirSync(older);
    utimesSync(older, 1_000, 1_000);
    expect(installedVersion('uvx', ['mcp-server-fetch'], '/', home, {})).toBe('1.0.0');
    expect(installedVersion('uvx', ['--python', '3.12', 'mcp-server-fetch'], '/', home, {})).toBe('1.0.0');
    expect(installedVersion('uvx', ['--from', 'mcp-server-fetch==1.0.0', 'x'], '/', home, {})).toBe('1.0.0');
    expect(installedVersion('uvx', ['other-tool'], '/', home, {})).toBeUndefined();
    const uvx = (args: string[]) =>
      listingKey(server({ command: 'uvx', args, env: { UV_CACHE_DIR: path.join(home, '.cache', 'uv') } }));
    const before = uvx(['mcp-server-fetch']);
    // uv installed a newer copy: the listing may describe other tools.
    mkdirSync(path.join(sitePackages('bbb'), 'mcp_server_fetch-1.1.0.dist-info'));
    expect(installedVersion('uvx', ['mcp-server-fetch'], '/', home, {})).toBe('1.1.0');
    expect(uvx(['mcp-server-fetch'])).not.toBe(before);
    // A pinned spec keys it too, whatever is installed.
    expect(uvx(['mcp-server-fetch==1.0.0'])).not.toBe(uvx(['mcp-server-fetch==1.1.0']));
  });

  it('treats a file that is not JSON as no listing', () => {
    const folder = dir();
    writeFileSync(path.join(folder, 'mem.json'), '{ not json');
    const cache = createListingCache({ file: '/x.yaml' } as never, { logger, folder });
    expect(cache.read(server())).toBeUndefined();
    cache.write(server(), listing);
    expect(createListingCache({ file: '/x.yaml' } as never, { logger, folder }).read(server())).toEqual(
      asKept,
    );
  });

  it('says why a server has no usable listing: never listed, its entry changed, or its file unreadable', () => {
    const folder = dir();
    const cache = createListingCache({ file: '/x.yaml' } as never, { logger, folder });
    expect(cache.look(server())).toMatchObject({ missing: 'never', warnings: [] });
    cache.write(server(), listing);
    expect(cache.look(server())).toMatchObject({ listing: asKept });
    expect(cache.look(server({ env: { TOKEN: 'another' } }))).toMatchObject({ missing: 'changed' });
    writeFileSync(path.join(folder, 'mem.json'), '{ not json');
    const broken = cache.look(server());
    expect(broken.missing).toBe('unreadable');
    expect(broken.warnings.join()).toMatch(/mem\.json is not valid JSON/);
  });

  it("keeps each principal's listings apart from the shared ones and from each other's", () => {
    const folder = dir();
    const config = {
      file: path.join(folder, 'proxy.config.yaml'),
      pins: { file: path.join(folder, 'p.json') },
    };
    const alice = principalListingCache(config as never, { logger, principalKey: 'https://idp\0alice' });
    alice.write(server(), listing);
    expect(alice.read(server())).toEqual(asKept);
    expect(createListingCache(config as never, { logger }).read(server())).toBeUndefined();
    const bob = principalListingCache(config as never, { logger, principalKey: 'https://idp\0bob' });
    expect(bob.read(server())).toBeUndefined();
    expect(readdirSync(path.join(folder, 'p.listings', 'principals'))).toHaveLength(1);
  });
});
