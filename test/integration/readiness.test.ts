/**
 * Readiness per server through the built binary, for a 2026-07-28 host driven raw: its
 * server/discover is answered while a server is still blocked in its handshake. The other
 * readiness scenarios run in-process in test/inprocess/readiness.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startModernHost, type ModernHost } from '../fixtures/modernHost.js';
import { CLI, fixture, writeConfig } from './harness.js';
import { modernResult } from './modernWire.js';

let modern: ModernHost | undefined;
afterEach(async () => {
  await modern?.close();
  modern = undefined;
});

describe('readiness per server', () => {
  it('answers a 2026-07-28 host’s server/discover while a server is still blocked in its handshake', async () => {
    const config = writeConfig({
      gateway: { startupTimeout: '20s', connectTimeout: '60s' },
      servers: { up: fixture(), stuck: fixture(['--hang-on-initialize']) },
    });
    modern = startModernHost(CLI, config);
    const discovered = modernResult('server/discover', await modern.request('server/discover'));
    expect(modern.stderr()).not.toContain('startup deadline');
    expect(discovered.capabilities).toMatchObject({ tools: { listChanged: true } });
  });
});
