/**
 * What a scenario opens in-process (a served gateway and its host, a host of the stateless
 * revision, an HTTP listener, a raw session, a gateway built over memory) is closed after it,
 * passed or failed, newest first: the head each file would otherwise repeat (a variable per
 * kind, an afterEach closing each one and clearing it). Call `servedPerTest()` once at the top
 * of a file; a describe whose tests share what its beforeAll opens calls it inside with
 * `{ closeAfter: 'all' }`.
 */
import { afterAll, afterEach } from 'vitest';
import type { ModernHost } from '../fixtures/modernHost.js';
import type { ConnectOptions } from '../integration/harness.js';
import { connectHttpHost, type HttpHost } from '../integration/httpHarness.js';
import {
  startInProcess,
  startInProcessModern,
  type InProcessGateway,
  type InProcessModernGateway,
} from './harness.js';
import { connectServed, serveHttpInProcess, type ServedHttp, type ServedSession } from './served.js';
import { startServedModern } from './servedModern.js';
import { servedRawSession, type ServedRawSession } from './servedRaw.js';

interface Closable {
  close(): Promise<unknown> | void;
}

export interface PerTest {
  /** `connectServed`, closed after the test. */
  connect(configFile: string, options?: Parameters<typeof connectServed>[1]): Promise<ServedSession>;
  /** `startServedModern`, closed after the test. */
  modern(configFile: string, env?: Record<string, string>): Promise<ModernHost>;
  /** `serveHttpInProcess`, stopped after the test. */
  http(configFile: string, options?: Parameters<typeof serveHttpInProcess>[1]): Promise<ServedHttp>;
  /**
   * `connectHttpHost`, closed after the test (before the listener it connected to, opened
   * earlier); a close that fails, the listener being gone already, is no failure of the test.
   */
  httpHost(url: string, options?: Parameters<typeof connectHttpHost>[1]): Promise<HttpHost>;
  /** `servedRawSession`, closed after the test. */
  raw(configFile: string, env?: Record<string, string>): Promise<ServedRawSession>;
  /** `startInProcess`: the gateway built over memory, closed after the test. */
  inProcess(options: Parameters<typeof startInProcess>[0]): Promise<InProcessGateway>;
  /** `startInProcessModern`, closed after the test. */
  inProcessModern(options: Parameters<typeof startInProcessModern>[0]): Promise<InProcessModernGateway>;
  /** Anything else with a `close`, closed after the test. */
  track<T extends Closable>(opened: T): T;
}

export interface PerTestOptions {
  /**
   * 'each' (the default): closed after each test. 'all': closed once the tests of the describe
   * (or file) it is called in have run, for what a beforeAll opens and its tests share.
   */
  readonly closeAfter?: 'each' | 'all';
}

/** Registers the closing, after each test or after all, of what the returned functions open. */
export function servedPerTest(options: PerTestOptions = {}): PerTest {
  const opened: Closable[] = [];
  (options.closeAfter === 'all' ? afterAll : afterEach)(async () => {
    for (const each of opened.splice(0).reverse()) await each.close();
  });
  const track = <T extends Closable>(each: T): T => {
    opened.push(each);
    return each;
  };
  return {
    connect: async (configFile, connectOptions: ConnectOptions = {}) =>
      track(await connectServed(configFile, connectOptions)),
    modern: async (configFile, env) => track(await startServedModern(configFile, env)),
    http: async (configFile, httpOptions) => {
      const gateway = await serveHttpInProcess(configFile, httpOptions);
      track({ close: () => gateway.stop() });
      return gateway;
    },
    httpHost: async (url, hostOptions) => {
      const host = await connectHttpHost(url, hostOptions);
      track({ close: () => host.close().catch(() => {}) });
      return host;
    },
    raw: async (configFile, env) => track(await servedRawSession(configFile, env)),
    inProcess: async (gatewayOptions) => track(await startInProcess(gatewayOptions)),
    inProcessModern: async (gatewayOptions) => track(await startInProcessModern(gatewayOptions)),
    track,
  };
}
