import type { Palette } from '../lib/colour.js';
import { plural } from '../lib/plural.js';
import type { StartupProgress } from './tools.js';

/**
 * Progress of the servers' start-up for a person at a terminal (`tools`, `pins diff`,
 * `pins accept`): which servers are starting, then each one as it is ready or fails, so a cold
 * start of several seconds is not silence. Undefined when `stream` is not a terminal: pipes and
 * logs get the result only.
 */
export function terminalProgress(stream: NodeJS.WriteStream, palette: Palette): StartupProgress | undefined {
  if (stream.isTTY !== true) return undefined;
  // A server that keeps crashing while it starts fails the same way at each restart: once is enough.
  const lastFailure = new Map<string, string>();
  return {
    starting(servers) {
      if (servers.length > 0)
        stream.write(
          `${palette.dim(`starting ${plural(servers.length, 'server')}: ${servers.join(', ')}…`)}\n`,
        );
    },
    ready(server, tools) {
      stream.write(`  ${palette.green(server)} ready (${plural(tools, 'tool')})\n`);
    },
    failed(server, error) {
      if (lastFailure.get(server) === error) return;
      lastFailure.set(server, error);
      stream.write(`  ${palette.red(server)} failed: ${error}\n`);
    },
  };
}
