/**
 * A host of the stateless revision (test/fixtures/modernHost.ts) in front of the gateway as
 * `mcp-warden --config FILE` runs it, served in this process (test/inprocess/served.ts): the
 * in-process twin of `startModernHost`, with the same ModernHost. Its stderr() is the log lines
 * the binary would write; closing it ends the gateway's stdin, as a host going away does, and
 * resolves once the gateway has stopped and everything it wrote has been read.
 */
import { once } from 'node:events';
import { speakModern, type ModernHost } from '../fixtures/modernHost.js';
import { start } from './served.js';

/**
 * Serves `configFile` in this process and speaks the stateless revision to it. `env` is set in
 * `process.env` while the gateway runs (with the harness's own: no managed settings, a private
 * state folder).
 */
export async function startServedModern(
  configFile: string,
  env: Record<string, string> = {},
): Promise<ModernHost> {
  const { serving, log, toGateway, fromGateway } = await start(configFile, { env });
  const allRead = once(fromGateway, 'end');
  return speakModern({
    input: toGateway,
    output: fromGateway,
    stderr: log.text,
    async close() {
      toGateway.end();
      await serving.stopped;
      await allRead;
    },
  });
}
