import { describe, expect, it } from 'vitest';
import { canSandboxHere, proposeSandboxes } from '../../src/commands/initSandbox.js';

describe('init proposes sandboxes', () => {
  const servers = {
    fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem@2025.1.1', '/work'] },
    git: { command: 'uvx', args: ['mcp-server-git==0.6', '--repository', '.'] },
    fetch: { command: 'uvx', args: ['mcp-server-fetch'] },
    mine: { command: 'node', args: ['server.js'] },
    set: { command: 'npx', args: ['@modelcontextprotocol/server-memory'], sandbox: false },
  };

  it('gives the servers it knows sandbox: auto where the machine can sandbox, and no others', () => {
    const { servers: out, proposed, deferred } = proposeSandboxes(servers, true);
    expect(proposed).toEqual(['fs', 'git']);
    expect(deferred).toEqual([]);
    expect(out.fs).toMatchObject({ sandbox: 'auto' });
    expect(out.fetch).not.toHaveProperty('sandbox');
    expect(out.mine).not.toHaveProperty('sandbox');
    expect(out.set).toMatchObject({ sandbox: false });
  });

  it('only names them where it cannot, so a server never fails to start for want of bubblewrap', () => {
    const { servers: out, proposed, deferred } = proposeSandboxes(servers, false);
    expect([proposed, deferred]).toEqual([[], ['fs', 'git']]);
    expect(out.fs).not.toHaveProperty('sandbox');
  });

  it('knows a machine that can sandbox', () => {
    expect(canSandboxHere({ PATH: '/nonexistent' }, 'linux')).toBe(false);
    expect(canSandboxHere({}, 'darwin')).toBe(true);
    expect(canSandboxHere({}, 'win32')).toBe(false);
  });
});
