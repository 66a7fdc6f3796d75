import { homedir } from 'node:os';
import path from 'node:path';

/**
 * The folder where mcp-warden keeps what it remembers between runs: `mcp-warden` in the user's
 * state folder, `$XDG_STATE_HOME` or else `~/.local/state` (HOME from `env`, else the account's).
 */
export function stateFolder(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const state = env.XDG_STATE_HOME || path.join(env.HOME || home, '.local', 'state');
  return path.join(state, 'mcp-warden');
}
