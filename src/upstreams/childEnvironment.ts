import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

/**
 * The environment an upstream child gets: the SDK's short list of safe variables (HOME, PATH,
 * USER, ... as of SDK 1.32) plus what the config lists for that server. Never the gateway's
 * whole environment, which may hold secrets meant for other servers (FIELD_NOTES "Configuration").
 */
export function childEnvironment(configured: Readonly<Record<string, string>>): Record<string, string> {
  return { ...getDefaultEnvironment(), ...configured };
}
