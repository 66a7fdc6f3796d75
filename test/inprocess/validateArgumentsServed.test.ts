/**
 * Input validation served in-process (test/inprocess/served.ts: the same `startServing` as
 * `mcp-warden --config FILE`), with the SDK Client as host and the real server-everything as
 * upstream: a call whose arguments do not match the tool's own inputSchema is refused by the
 * gateway, names the property, never reaches the upstream, and is recorded. With
 * validateArguments: false: test/inprocess/validateArguments.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, serverBin, tempDir, textOf, writeConfig } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

type AuditRecord = Record<string, unknown> & { type: string };

function readCalls(file: string): AuditRecord[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditRecord)
    .filter((r) => r.type === 'call');
}

const served = servedPerTest();

async function start(server: Record<string, unknown> = {}, gateway: Record<string, unknown> = {}) {
  const dir = tempDir();
  const config = writeConfig(
    {
      gateway,
      audit: { file: './audit.jsonl' },
      servers: { everything: { command: NODE, args: [serverBin('everything')], ...server } },
    },
    dir,
  );
  const host = await served.connect(config);
  return { host, audit: path.join(dir, 'audit.jsonl') };
}

describe('arguments validated against the tool’s inputSchema', () => {
  it('gets the listed tools’ schemas ready once the host is quiet, ahead of their first call, and checks with them', async () => {
    const { host } = await start({}, { log: { level: 'debug' } });
    const { tools } = await host.client.listTools();
    await host.waitForStderr(
      `the schemas of server "everything"'s ${tools.length} tools are ready, ahead of their first call`,
    );
    const refused = await host.client.callTool({ name: 'everything__get-sum', arguments: { a: 1, b: 'x' } });
    expect(textOf(refused)).toContain('/b must be number (got string "x")');
    const summed = await host.client.callTool({ name: 'everything__get-sum', arguments: { a: 1, b: 2 } });
    expect(textOf(summed)).toBe('The sum of 1 and 2 is 3.');
  });

  it('refuses a string for a number, naming the property; the upstream never runs it; a valid call works', async () => {
    const { host, audit } = await start();
    const refused = await host.client.callTool({
      name: 'everything__get-sum',
      arguments: { a: '1000', b: 1 },
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe(
      '[mcp-warden] Invalid arguments for tool "get-sum" on server "everything": /a must be number ' +
        '(got string "1000"). The call was not run.',
    );
    expect(refused._meta).toEqual({ 'mcp-warden/error': 'INVALID_ARGUMENTS' });

    const summed = await host.client.callTool({ name: 'everything__get-sum', arguments: { a: 1000, b: 1 } });
    expect(summed.isError).toBeFalsy();
    expect(textOf(summed)).toBe('The sum of 1000 and 1 is 1001.');

    const calls = readCalls(audit);
    expect(calls.map((c) => [c.upstreamTool, c.outcome, c.decision])).toEqual([
      ['get-sum', 'invalid_arguments', { effect: 'deny', rule: null }],
      ['get-sum', 'ok', { effect: 'allow', rule: null }],
    ]);
    expect(calls[0]!.args).toEqual({ a: '1000', b: 1 });
    expect(calls[0]!.error).toContain('/a must be number (got string "1000")');
    // Nothing came back from the upstream for the refused call.
    expect(calls[0]).not.toHaveProperty('resultBytes');
  });
});
