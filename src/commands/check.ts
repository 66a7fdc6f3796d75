import { formatKeyPath } from '../config/interpolate.js';
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

/**
 * Warnings for the enabled HTTP servers with `oauth.tokenExchange` in a config without `auth:`:
 * no call then carries a principal's bearer token, so there is nothing to exchange and every
 * call to such a server fails.
 */
export function exchangesWithoutPrincipals(config: WardenConfig): ConfigIssue[] {
  if (config.auth !== undefined) return [];
  return config.servers
    .filter((server) => !server.disabled && server.transport === 'http' && server.oauth?.tokenExchange)
    .map((server) => ({
      file: server.source.file,
      line: server.source.line,
      column: 0,
      path: formatKeyPath(['servers', server.name, 'oauth', 'tokenExchange']),
      message: `server "${server.name}" exchanges each principal's token, but this config has no auth: section, so no call brings a token to exchange and every call to it fails: add an auth: section and serve over HTTP, or remove tokenExchange`,
    }));
}
