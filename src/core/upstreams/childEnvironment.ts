import type { StdioServerConfig } from '../../config/types.js';
import { SpawnError, type CommandWrapper, type SpawnChildOptions } from '../transports/childProcess.js';

/**
 * The variables a child inherits from the gateway: the SDK's short list of safe ones (as of SDK
 * 1.32), so an upstream gets what a direct connection from the SDK would give it. Listed here
 * rather than imported because the SDK's stdio client module costs start-up time we do not
 * otherwise pay; a unit test keeps the two equal.
 */
export const INHERITED_ENV_VARS: readonly string[] =
  process.platform === 'win32'
    ? [
        'APPDATA',
        'HOMEDRIVE',
        'HOMEPATH',
        'LOCALAPPDATA',
        'PATH',
        'PROCESSOR_ARCHITECTURE',
        'SYSTEMDRIVE',
        'SYSTEMROOT',
        'TEMP',
        'USERNAME',
        'USERPROFILE',
        'PROGRAMFILES',
      ]
    : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'];

/**
 * The environment an upstream child gets: the inherited safe variables plus what the config
 * lists for that server. Never the gateway's whole environment, which may hold secrets meant
 * for other servers.
 */
export function childEnvironment(
  configured: Readonly<Record<string, string>>,
  from: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV_VARS) {
    const value = from[name];
    // Exported shell functions look like "() { ...": never pass code through the environment.
    if (value !== undefined && !value.startsWith('()')) env[name] = value;
  }
  return { ...env, ...configured };
}

/**
 * How a stdio server's process is started: on each connection attempt, or ahead (earlySpawn.ts).
 * A server with a sandbox is started only through `wrap`: without one, whoever starts it has no
 * sandbox to give, and the start fails rather than run the server unconfined.
 */
export function stdioSpawnOptions(config: StdioServerConfig, wrap?: CommandWrapper): SpawnChildOptions {
  const options = {
    command: config.command,
    args: config.args,
    env: childEnvironment(config.env),
    cwd: config.cwd,
  };
  if (wrap !== undefined) return { ...options, wrap };
  if (config.sandbox === undefined) return options;
  return {
    ...options,
    wrap: () => Promise.reject(new SpawnError('it asks for a sandbox, and nothing here can provide one')),
  };
}
