/**
 * Policy edges served in-process (`startServing` on the config file), with the SDK Client as
 * host. A recording fixture upstream that serves any resource URI it is asked for: every
 * spelling of a denied file meets the rule, and a denial is answered with its own JSON-RPC
 * code, never as a gateway fault. The shipped locked-down-org.yaml in front of the real
 * filesystem server: a path that climbs out of the shared folder is never put to the user as a
 * shared-folder write. A rule that can never match (the `check` command's refusal of it) stays
 * with the built binary in test/integration/policyEdges.test.ts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { readRecord } from '../fixtures/fixtureProcess.js';
import {
  FAST_GATEWAY,
  fixture,
  NODE,
  ROOT,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

/** The code a policy denial of a request other than a tool call is answered with. */
const DENIED_CODE = -32030;

describe('resource rules through the binary', () => {
  let host: HostSession;
  let record: string;

  beforeAll(async () => {
    const dir = tempDir();
    record = path.join(dir, 'record.jsonl');
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      [
        'default: allow',
        'rules:',
        '  - id: no-etc',
        "    match: { resource: 'file:///etc/*' }",
        '    action: deny',
        '    reason: System files are not for the model.',
        '',
      ].join('\n'),
    );
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: ['policy.yaml'],
        servers: { up: fixture(['--resources', '--record', record]) },
      },
      dir,
    );
    host = await shared.connect(config);
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  const refusal = async (uri: string): Promise<McpError> => {
    const error: unknown = await host.client.readResource({ uri }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, uri).toBeInstanceOf(McpError);
    return error as McpError;
  };

  it.each([
    'file:///etc/passwd',
    'file:/etc/passwd',
    'file:etc/passwd',
    'file://localhost/etc/passwd',
    'FILE://LOCALHOST./etc/passwd',
    'file:////etc/passwd',
    'file:///tmp/../etc/passwd',
    'file:/srv/./../etc/%70asswd',
  ])(
    'denies %s by the rule, with the denial code and the rule named, never reaching the upstream',
    async (uri) => {
      const error = await refusal(uri);
      expect(error.code).toBe(DENIED_CODE);
      expect(error.message).toContain('System files are not for the model.');
      expect(error.message).toContain('policy rule "no-etc"');
      expect(error.data).toEqual({ 'mcp-warden/error': 'DENIED', rule: 'no-etc' });
      // Answered before anything reached the upstream.
      expect(readRecord(record).filter((m) => m.method === 'resources/read')).toEqual([]);
    },
  );

  it('lets another file through to the upstream, which answers for itself', async () => {
    const error = await refusal('file:///srv/notes.txt');
    expect(error.code).toBe(-32002);
    expect(readRecord(record).filter((m) => m.method === 'resources/read')).toHaveLength(1);
  });
});

describe('locked-down-org.yaml: writes to the shared folder, however the path is spelt', () => {
  let host: HostSession;
  const asked: string[] = [];

  beforeAll(async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: [path.join(ROOT, 'policies/locked-down-org.yaml')],
        servers: { fs: { command: NODE, args: [serverBin('filesystem'), dir] } },
      },
      dir,
    );
    host = await shared.connect(config, {
      capabilities: { elicitation: { form: {} } },
      beforeConnect: (client) => {
        // A user who says no: what matters is whether, and what, they were asked.
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params.message);
          return { action: 'decline' };
        });
      },
    });
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('asks the user about a write inside the folder', async () => {
    const result = await host.client.callTool({
      name: 'fs__write_file',
      arguments: { path: '/srv/shared//notes/./plan.md', content: 'plan' },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('Declined');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('Writing to the shared project folder needs your confirmation.');
    asked.length = 0;
  });

  it.each([
    '/srv/shared/../../etc/cron.d/evil',
    '/srv/shared/./../../etc/cron.d/evil',
    '/srv//shared/../shared/../../etc/cron.d/evil',
  ])('denies %s without asking anyone, by the catch-all rule', async (escape) => {
    const result = await host.client.callTool({
      name: 'fs__write_file',
      arguments: { path: escape, content: '* * * * * root evil\n' },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("This is not on the organisation's approved list.");
    expect(textOf(result)).toContain('policy rule "not-approved"');
    expect(asked).toEqual([]);
  });
});
