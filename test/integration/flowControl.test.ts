/**
 * Flow control through the built binary, where a command of its own reads what the gateway did:
 * `mcp-warden policy explain` replays a session from the audit trail and names where a flow label
 * came from, and `mcp-warden check` refuses labels written wrong with file:line. The scenarios
 * that need only the gateway run in-process, in test/inprocess/flowControl.test.ts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { auditRecords, call, callsReceived, confirmingHost, setup, text } from './flowControlSetup.js';
import { connectHost, fixture, runCli, tempDir, writeConfig, type HostSession } from './harness.js';

const hosts: HostSession[] = [];

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

/** A host that answers every confirmation question with `action`, keeping the questions. */
async function host(config: string, action: 'accept' | 'decline' = 'decline') {
  const session = await confirmingHost(connectHost, config, action);
  hosts.push(session);
  return session;
}

describe('the lethal trifecta', () => {
  it('audit mode lets it run and records the decision with its lineage; policy explain replays it', async () => {
    const s = setup({ flow: { trifecta: 'audit' } });
    const h = await host(s.config, 'decline');
    await call(h, 'web__echo');
    await call(h, 'files__echo');
    expect(text(await call(h, 'mail__echo', 'sent'))).toBe('sent');
    expect(h.asked).toEqual([]);
    await h.close();
    hosts.splice(0);

    const records = auditRecords(s.audit);
    const calls = records.filter((r) => r['type'] === 'call');
    const byTool = (tool: string) => calls.find((r) => r['tool'] === tool)!;
    const web = byTool('web__echo')['flow'] as { labels: string[]; source: number };
    const files = byTool('files__echo')['flow'] as { labels: string[]; source: number };
    expect(web).toMatchObject({ labels: ['untrusted'], source: 1 });
    expect(files).toMatchObject({ labels: ['private'], source: 2 });
    const mail = byTool('mail__echo')['flow'] as Record<string, unknown>;
    expect(mail).toMatchObject({ labels: ['egress'], trifecta: 'audit', source: 3 });
    expect(mail['lineage']).toEqual([
      expect.objectContaining({
        label: 'untrusted',
        source: 1,
        server: 'web',
        target: 'echo',
        method: 'tools/call',
      }),
      expect.objectContaining({ label: 'private', source: 2, server: 'files', target: 'echo' }),
    ]);

    const session = String(calls[0]!['session']);
    const replay = await runCli(['policy', 'explain', '--config', s.config, '--session', session]);
    expect(replay.stderr).toBe('');
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain('web__echo');
    expect(replay.stdout).toMatch(/mail__echo.*AUDIT/);
    expect(replay.stdout).toMatch(/untrusted from #1 web__echo \(seq \d+, /);
    expect(replay.stdout).toMatch(/private from #2 files__echo \(seq \d+, /);
    const json = await runCli(['policy', 'explain', '--config', s.config, '--session', session, '--json']);
    const steps = (JSON.parse(json.stdout) as { steps: { tool: string; trifecta?: string }[] }).steps;
    expect(steps.map((step) => [step.tool, step.trifecta ?? null])).toEqual([
      ['web__echo', null],
      ['files__echo', null],
      ['mail__echo', 'audit'],
    ]);
  });
});

describe('labels from policy files and annotations', () => {
  it('labels entries of a policy file label servers and tools; a session condition in a rule sees them', async () => {
    const policy = [
      'labels:',
      '  - id: web-is-untrusted',
      '    match: { server: web }',
      '    add: [untrusted]',
      '  - match: { server: files, tool: echo }',
      '    add: [private]',
      '  - match: { server: mail, tool: echo }',
      '    add: [egress]',
      'rules:',
      '  - id: no-add-after-both',
      '    match: { tool: add, session: { has: [untrusted, private] } }',
      '    action: deny',
      '    reason: No sums once the session has read both.',
      '',
    ].join('\n');
    const s = setup({ labels: {}, policy });
    const h = await host(s.config, 'decline');
    // Before the session has both, the rule does not match.
    expect((await h.client.callTool({ name: 'mail__add', arguments: { a: 1, b: 2 } })).isError).toBeFalsy();
    await call(h, 'web__echo');
    // `add` on files and mail carries no label (the entries name echo only).
    await h.client.callTool({ name: 'files__add', arguments: { a: 1, b: 2 } });
    expect((await h.client.callTool({ name: 'mail__add', arguments: { a: 1, b: 2 } })).isError).toBeFalsy();
    await call(h, 'files__echo');
    const denied = (await h.client.callTool({
      name: 'web__add',
      arguments: { a: 1, b: 2 },
    })) as CallToolResult;
    expect(denied.isError).toBe(true);
    expect(text(denied)).toContain('No sums once the session has read both.');
    const refused = await call(h, 'mail__echo', 'exfiltrate');
    expect(refused.isError).toBe(true);
    expect(h.asked).toHaveLength(1);
    expect(h.asked[0]).toContain('tool "echo" on server "files"');
    expect(callsReceived(s.record('mail'))).toEqual([]);
    const explained = await runCli(['policy', 'explain', '--config', s.config, 'files__echo']);
    expect(explained.stdout).toContain('flow labels: private (labels entries: policy.yaml#labels2)');
  });

  it('a policy labels entry or a session condition written wrong is refused with file:line', async () => {
    const dir = tempDir('warden-flow-bad-');
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      [
        'labels:',
        '  - match: { server: web, session: { has: [private] } }',
        '    add: [untrusted]',
        'rules:',
        '  - match: { session: { has: [secret] } }',
        '    action: deny',
        '',
      ].join('\n'),
    );
    const config = writeConfig({ policies: ['policy.yaml'], servers: { web: fixture() } }, dir);
    const result = await runCli(['check', '--config', config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/policy\.yaml:2:\d+.*session condition/);
    expect(result.stderr).toMatch(/policy\.yaml:5:\d+.*secret/);
  });

  it('server labels outside the three are refused with file:line', async () => {
    const config = writeConfig(
      'servers:\n  web:\n    command: node\n    labels: [untrusted, secret]\nflow:\n  trifecta: maybe\n',
    );
    const result = await runCli(['check', '--config', config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/proxy\.config\.yaml:4:\d+.*secret/);
    expect(result.stderr).toMatch(/proxy\.config\.yaml:6:\d+.*maybe/);
  });
});
