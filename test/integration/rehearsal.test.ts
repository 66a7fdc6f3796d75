/**
 * A serving gateway rehearses its call path on a gateway of its own while it waits for its
 * servers to start (src/gateway/rehearsal.ts). The rehearsal must leave no trace anywhere a user
 * looks: not in the host's lists, not at the servers, not in the audit trail, and not in the log
 * above debug.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  readAudit,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

describe('the call path rehearsal', () => {
  it('runs while the server starts, and nothing of it reaches the host, the server or the audit trail', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'received.jsonl');
    const auditFile = path.join(dir, 'audit.jsonl');
    const file = writeConfig(
      {
        gateway: { ...FAST_GATEWAY, log: { level: 'debug' } },
        audit: { file: auditFile },
        // A server slower to start than the rehearsal takes, so that it runs to its end.
        servers: { up: fixture(['--start-delay', '1500', '--record', record]) },
      },
      dir,
    );
    const state = tempDir('warden-rehearsal-state-');
    host = await connectHost(file, { env: { XDG_STATE_HOME: state } });
    await host.waitForStderr(/call path rehearsed \(4 of 4 calls\)/);
    const { tools } = await host.client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    expect(tools.filter((tool) => !tool.name.startsWith('up__'))).toEqual([]);
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'hello' } });
    expect(textOf(result)).toContain('hello');
    const stderr = host.stderr();
    await host.close();
    host = undefined;

    const calls = readAudit(auditFile).filter((record) => record.type === 'call');
    expect(calls.map((call) => call['tool'])).toEqual(['up__echo']);
    expect(readFileSync(auditFile, 'utf8')).not.toMatch(/rehears|measure/);
    expect(readFileSync(record, 'utf8')).not.toMatch(/rehears/);
    // Nothing kept in the state folder names it (listings, valid documents, live state). The
    // code cache holds mcp-warden's compiled code, the rehearsal's module among it.
    const kept = readdirSync(state, { recursive: true, withFileTypes: true }).filter((entry) =>
      entry.isFile(),
    );
    expect(kept.length).toBeGreaterThan(0);
    for (const entry of kept) {
      expect(entry.name).not.toMatch(/rehears/);
      if (entry.name !== 'code-cache.bin')
        expect(readFileSync(path.join(entry.parentPath, entry.name), 'utf8')).not.toMatch(/rehears/);
    }
    // Said at debug level only: a user's log at the default level never shows it.
    const told = stderr.split('\n').filter((line) => /rehears/.test(line));
    expect(told.length).toBeGreaterThan(0);
    expect(told.filter((line) => !line.includes(' debug: '))).toEqual([]);
  });
});
