/**
 * What a scenario opens in-process (a served gateway and its host, a host of the stateless
 * revision, an HTTP listener, a raw session) is closed after it, passed or failed, newest first:
 * the head each file would otherwise repeat (a variable per kind, an afterEach closing each one
 * and clearing it). Call `servedPerTest()` once at the top of a file.
 */
import { afterEach } from 'vitest';
import type { ModernHost } from '../fixtures/modernHost.js';
import type { ConnectOptions } from '../integration/harness.js';
import { connectServed, serveHttpInProcess, type ServedHttp, type ServedSession } from './served.js';
import { startServedModern } from './servedModern.js';

interface Closable {
  close(): Promise<unknown>;
}

export interface PerTest {
  /** `connectServed`, closed after the test. */
  connect(configFile: string, options?: Parameters<typeof connectServed>[1]): Promise<ServedSession>;
  /** `startServedModern`, closed after the test. */
  modern(configFile: string, env?: Record<string, string>): Promise<ModernHost>;
  /** `serveHttpInProcess`, stopped after the test. */
  http(configFile: string, options?: Parameters<typeof serveHttpInProcess>[1]): Promise<ServedHttp>;
  /** Anything else with a `close`, closed after the test. */
  track<T extends Closable>(opened: T): T;
}

/** Registers the closing after each test of what the returned functions open. */
export function servedPerTest(): PerTest {
  const opened: Closable[] = [];
  afterEach(async () => {
    for (const each of opened.splice(0).reverse()) await each.close();
  });
  const track = <T extends Closable>(each: T): T => {
    opened.push(each);
    return each;
  };
  return {
    connect: async (configFile, options: ConnectOptions = {}) =>
      track(await connectServed(configFile, options)),
    modern: async (configFile, env) => track(await startServedModern(configFile, env)),
    http: async (configFile, options) => {
      const gateway = await serveHttpInProcess(configFile, options);
      track({ close: () => gateway.stop() });
      return gateway;
    },
    track,
  };
}
