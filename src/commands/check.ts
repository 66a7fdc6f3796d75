import type { ConfigIssue } from '../config/issues.js';
import type { WardenConfig } from '../config/types.js';
import { resolveCommand } from '../core/transports/childProcess.js';
import { stdioSpawnOptions } from '../core/upstreams/childEnvironment.js';

/**
 * Warnings for the enabled stdio servers whose `command` cannot be found, looked up exactly as
 * the gateway will when it starts them: in the server's working directory, on the PATH its
 * process gets (this shell's PATH, or the one the entry's `env` sets). Warnings, not errors: a
 * host may well start the gateway with another PATH, so the message names the one searched.
 */
export async function commandsNotFound(config: WardenConfig): Promise<ConfigIssue[]> {
  const found = await Promise.all(
    config.servers.map(async (server): Promise<ConfigIssue | undefined> => {
      if (
        server.disabled ||
        server.transport !== 'stdio' ||
        server.failedAtLoad !== undefined ||
        server.blockedByManaged !== undefined
      )
        return undefined;
      const options = stdioSpawnOptions(server);
      try {
        await resolveCommand(options.command, options.env, options.cwd);
        return undefined;
      } catch (error) {
        return {
          file: server.source.file,
          line: server.source.line,
          column: 0,
          path: '',
          message: `server "${server.name}": ${(error as Error).message} A host may start mcp-warden with another PATH than this shell's.`,
        };
      }
    }),
  );
  return found.filter((issue): issue is ConfigIssue => issue !== undefined);
}
