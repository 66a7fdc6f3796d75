import { mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/logger.js';
import type { Upstream } from '../../src/core/upstreams/upstream.js';
import { liveServers, liveStateFolder, readLiveStates, writeLiveState } from '../../src/gateway/liveState.js';

const logger = createLogger({ level: 'error' });

/** An upstream as the live state reads it. */
function upstream(name: string, facts: Partial<Record<string, unknown>> = {}): Upstream {
  return {
    name,
    state: 'ready',
    stateSince: Date.parse('2026-01-01T00:00:00Z'),
    pid: 42,
    tools: [{}, {}],
    lastError: undefined,
    config: { start: 'eager' },
    ...facts,
  } as unknown as Upstream;
}

/** A pid that runs no process: far above any pid_max. */
const GONE = 2 ** 30;

describe('live state', () => {
  it("describes each configured server in config order: shared ones one by one, a per-principal one by its processes, never a principal's name", () => {
    const servers = liveServers({
      names: ['a', 'lz', 'own', 'gone'],
      shared: [
        upstream('lz', { state: 'asleep', pid: undefined, config: { start: 'lazy', idleTimeoutMs: 60_000 } }),
        upstream('a', { state: 'failed', pid: undefined, lastError: 'x'.repeat(2000) }),
      ],
      principals: [[upstream('own')], [upstream('own', { pid: undefined, state: 'asleep' })]],
    });
    expect(servers.map((s) => [s.name, s.state])).toEqual([
      ['a', 'failed'],
      ['lz', 'asleep'],
      ['own', 'per principal'],
    ]);
    expect(servers[0]!.lastError).toHaveLength(500);
    expect(servers[1]).toEqual({
      name: 'lz',
      state: 'asleep',
      since: '2026-01-01T00:00:00.000Z',
      tools: 2,
      lazy: true,
      idleTimeoutMs: 60_000,
    });
    expect(servers[2]).toMatchObject({ processes: 1, tools: 2 });
  });

  it('writes a file its user alone reads, tells a gone writer from a running one, and removes its own on close and stale ones at start', async () => {
    const state = mkdtempSync(path.join(tmpdir(), 'warden-live-'));
    const env = { XDG_STATE_HOME: state };
    const config = path.join(state, 'proxy.config.yaml');
    writeFileSync(config, 'servers: {}\n');
    const folder = liveStateFolder(config, env);
    const running = () => ({ names: ['a'], shared: [upstream('a')], principals: [] });

    const gone = writeLiveState({ configFile: config, running, logger, env, pid: GONE });
    const live = writeLiveState({ configFile: config, running, logger, env });
    await expect
      .poll(() => readdirSync(folder).sort())
      .toEqual([`${GONE}.json`, `${process.pid}.json`].sort());
    expect(statSync(path.join(folder, `${process.pid}.json`)).mode & 0o777).toBe(0o600);
    const read = readLiveStates(config, env);
    expect(read.running.map((s) => s.pid)).toEqual([process.pid]);
    expect(read.running[0]!.servers[0]).toMatchObject({ name: 'a', state: 'running', pid: 42 });
    expect(read.stale.map((s) => s.pid)).toEqual([GONE]);

    live.close();
    gone.close();
    expect(readdirSync(folder)).toEqual([]);
    // A file left by a gateway that was killed goes when the next one starts.
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, `${GONE}.json`), JSON.stringify({ version: 1, pid: GONE, servers: [] }));
    writeLiveState({ configFile: config, running, logger, env }).close();
    expect(readdirSync(folder)).toEqual([]);
  });
});
