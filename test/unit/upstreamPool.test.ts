import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import type { Logger } from '../../src/core/logger.js';
import { UpstreamPool } from '../../src/core/upstreams/upstreamPool.js';

const quiet = { error() {}, warn() {}, info() {}, debug() {}, child: () => quiet } as unknown as Logger;

describe('UpstreamPool.startedUp', () => {
  it('waits for the first start, however late, and settles when it has (a server that fails too)', async () => {
    const { config } = parseConfigText('servers:\n  gone: { command: ./no-such-server-here }\n', {
      file: '/tmp/proxy.config.yaml',
      env: {},
    });
    const pool = new UpstreamPool({
      config,
      logger: quiet,
      clientInfo: { name: 'test', version: '1' },
      onListsChanged: () => {},
    });
    let settled = false;
    void pool.startedUp.then(() => (settled = true));
    for (let i = 0; i < 5; i++) await turn();
    expect(settled).toBe(false);
    const started = pool.start();
    await pool.startedUp;
    await started;
    expect(pool.upstreams[0]?.state).not.toBe('connecting');
    await pool.stop();
  });
});
