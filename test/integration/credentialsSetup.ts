/**
 * The credential scenarios' setup, shared by the built binary's tests
 * (test/integration/credentials.test.ts) and the in-process ones
 * (test/inprocess/credentials.test.ts): a home of its own, a secret, and a config that names it
 * as ${keychain:NAME}.
 */
import path from 'node:path';
import { FAST_GATEWAY, FIXTURE, NODE, tempDir, writeConfig } from './harness.js';

export const SECRET = 'sk-live-4f9a0c1e7d2b';

/** A home of its own and no D-Bus session: the file fallback. */
export function headlessEnv(): { env: Record<string, string>; file: string } {
  const home = tempDir('warden-home-');
  return {
    env: { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config') },
    file: path.join(home, 'config', 'mcp-warden', 'credentials.json'),
  };
}

/**
 * A config in `dir` whose server `api` gets API_KEY from ${keychain:API_KEY} (at line 11,
 * column 16), with a debug log file and an audit trail beside it.
 */
export function keychainConfig(dir: string): string {
  return writeConfig(
    [
      'gateway:',
      `  startupTimeout: ${FAST_GATEWAY.startupTimeout}`,
      '  log: { level: debug, file: ./gateway.log }',
      'audit:',
      '  file: ./audit.jsonl',
      'servers:',
      '  api:',
      `    command: ${JSON.stringify(NODE)}`,
      `    args: [${JSON.stringify(FIXTURE)}]`,
      '    env:',
      '      API_KEY: ${keychain:API_KEY}',
      '',
    ].join('\n'),
    dir,
  );
}
