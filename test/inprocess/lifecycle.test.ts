/**
 * What of the gateway's lifecycle needs no process of its own, served in-process (`startServing`
 * on the config file): an upstream child gets the minimal default environment plus its
 * configured env, never the gateway's secrets (set in this process while the gateway serves).
 * Shutdown, orphans, stdout and start-up stay with the built binary in
 * test/integration/lifecycle.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, writeConfig } from '../integration/harness.js';
import { connectServed } from './served.js';

describe('child environment', () => {
  it('gets the minimal default environment plus its configured env, never the gateway’s secrets', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: {
        up: fixture([], { env: { GIVEN: '${WARDEN_TEST_VALUE}', DEFAULTED: '${WARDEN_UNSET:-fallback}' } }),
      },
    });
    const host = await connectServed(config, {
      env: { WARDEN_TEST_VALUE: 'from-config', GATEWAY_SECRET: 's3cret' },
    });
    const read = async (name: string) => {
      const r = await host.client.callTool({ name: 'up__env', arguments: { name } });
      return (r.content as { text: string }[])[0]!.text;
    };
    expect(await read('GIVEN')).toBe('from-config');
    expect(await read('DEFAULTED')).toBe('fallback');
    expect(await read('GATEWAY_SECRET')).toBe('<unset>');
    expect(await read('PATH')).toBe(process.env.PATH);
    await host.close();
  });
});
