/**
 * Secrets the config names as ${keychain:NAME}, as a gateway serving in-process reads them
 * (test/inprocess/served.ts: the same `startServing` as `mcp-warden --config FILE`, with real
 * upstream processes) from the credentials file of a home of the test's own. Storing them with
 * `mcp-warden secret set`, the Secret Service, and what `check` and `init` make of them are the
 * built binary's, in test/integration/credentials.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCredentialStore } from '../../src/lib/credentials/index.js';
import { headlessEnv, keychainConfig, SECRET } from '../integration/credentialsSetup.js';
import { FIXTURE, NODE, tempDir, writeConfig } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

/**
 * The home's credentials file, chosen without asking for the OS store: which store a process
 * picks is the binary's tests' to show, and this one's environment may have a D-Bus session.
 */
function fileStoreHome(): Record<string, string> {
  return { ...headlessEnv().env, MCP_WARDEN_CREDENTIALS: 'file' };
}

describe('a secret from the credentials file', () => {
  it('a stdio server gets its API key from ${keychain:NAME}; the YAML, the log and the audit trail never hold it', async () => {
    const env = fileStoreHome();
    const store = await openCredentialStore({ env });
    await store.set('secret:API_KEY', SECRET);
    const dir = tempDir();
    const config = keychainConfig(dir);
    expect(readFileSync(config, 'utf8')).not.toContain(SECRET);

    const host = await each.connect(config, { env });
    const result = await host.client.callTool({ name: 'api__env', arguments: { name: 'API_KEY' } });
    expect(result.content).toEqual([{ type: 'text', text: SECRET }]);
    await host.close();
    const audit = readFileSync(path.join(dir, 'audit.jsonl'), 'utf8');
    expect(audit).toContain('api__env');
    expect(audit).not.toContain(SECRET);
    expect(readFileSync(path.join(dir, 'gateway.log'), 'utf8')).not.toContain(SECRET);
    expect(host.stderr()).not.toContain(SECRET);
  });

  it('while serving, a secret that is not stored fails its server only, and the host is told how to store it', async () => {
    const config = writeConfig(
      [
        'servers:',
        '  api:',
        `    command: ${JSON.stringify(NODE)}`,
        `    args: [${JSON.stringify(FIXTURE)}]`,
        '    env: { API_KEY: "${keychain:API_KEY}" }',
        '  other:',
        `    command: ${JSON.stringify(NODE)}`,
        `    args: [${JSON.stringify(FIXTURE)}]`,
        '',
      ].join('\n'),
    );
    const host = await each.connect(config, { env: fileStoreHome() });
    expect(host.client.getInstructions()).toMatch(
      /server "api" is not available.*secret "API_KEY" is not in the credential store .*mcp-warden secret set API_KEY/,
    );
    const { tools } = await host.client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('other__echo');
  });
});
