/**
 * The audit trail of a gateway served in-process (`startServing` on the config file, the real
 * fixture upstream): what a call record says, redaction, and an audit file that cannot be
 * written. Nothing lost however the gateway stops (raw sessions, SIGTERM), names nobody serves
 * (raw sessions), and tamper evidence (the `audit verify` and `summary` commands) stay with the
 * built binary in test/integration/audit.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FAST_GATEWAY, fixture, tempDir, writeConfig, readAudit } from '../integration/harness.js';
import { setup } from '../integration/auditScenario.js';
import { connectServed } from './served.js';

describe('what a call record says', () => {
  it('who, what, decision, outcome, duration, repairs and size', async () => {
    const { file, config, dir } = setup({}, { policies: ['policy.yaml'] });
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'rules:\n  - id: no-crash\n    match: { tool: crash }\n    action: deny\n    reason: No crashing.\n',
    );
    const host = await connectServed(config);
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'hello' } });
    await host.client.callTool({ name: 'up__crash', arguments: {} });
    await host.client.callTool({ name: 'up__fail', arguments: {} });
    await host.close();

    const calls = readAudit(file).filter((r) => r.type === 'call');
    expect(calls[0]).toMatchObject({
      client: { name: 'warden-test-host', version: '1.0.0' },
      tool: 'up__echo',
      server: 'up',
      upstreamTool: 'echo',
      args: { text: 'hello' },
      decision: { effect: 'allow', rule: null },
      outcome: 'ok',
      repairs: [],
      resultBytes: expect.any(Number),
      session: expect.any(String),
      ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(calls[0]!.ms).toBeGreaterThan(0);
    expect(calls[1]).toMatchObject({
      tool: 'up__crash',
      decision: { effect: 'deny', rule: 'no-crash' },
      outcome: 'denied',
    });
    expect(calls[2]).toMatchObject({ tool: 'up__fail', outcome: 'tool_error' });
    expect(readAudit(file).some((r) => r.type === 'policy_load' && r.rules === 1)).toBe(true);
  });
});

describe('redaction', () => {
  it('seeded secrets appear nowhere in the audit or the diagnostic log', async () => {
    const { file, config, diagnosticLog } = setup({ logResults: true });
    const secrets = {
      apiKey: 'sk-live-4f8Qw2LmZx9Vb7Nc3Rt6Yp1K',
      password: 'correct horse battery staple',
      jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ3YXJkZW4ifQ.c2lnbmF0dXJlLXdhcmRlbi10ZXN0',
      github: 'ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123',
    };
    const host = await connectServed(config);
    await host.client.callTool({
      name: 'up__echo',
      arguments: { text: `deploy with ${secrets.github}`, auth: { password: secrets.password } },
    });
    await host.client.callTool({
      name: 'up__echo_structured',
      arguments: { data: { user: 'ada', session: { token: secrets.jwt }, note: `key ${secrets.apiKey}` } },
    });
    // Servers log secrets too; their stderr goes to the diagnostic log.
    await host.client.callTool({
      name: 'up__say_stderr',
      arguments: { text: `Authorization: Bearer ${secrets.jwt}` },
    });
    await host.close();

    const audit = readFileSync(file, 'utf8');
    const diagnostic = readFileSync(diagnosticLog, 'utf8') + host.stderr();
    for (const secret of Object.values(secrets)) {
      expect(audit).not.toContain(secret);
      expect(diagnostic).not.toContain(secret);
    }
    // The records are still useful: what is not secret stays.
    expect(audit).toContain('deploy with');
    expect(audit).toContain('"user":"ada"');
    expect(diagnostic).toContain('[up]: stderr: Authorization: Bearer');
  });

  it('a secret in YAML text as a block scalar, on the next line, behind a tag or an anchor, under a complex key or with an escaped quote is redacted', async () => {
    const { file, config } = setup({ logResults: true });
    const secrets = [
      'Zq7wX9vK2mP4-block',
      'Zq7wX9vK2mP4-folded',
      'Zq7wX9vK2mP4-below',
      'Zq7wX9vK2mP4-tag',
      'Zq7wX9vK2mP4-anchor',
      'Zq7wX9vK2mP4-complex',
      'Zq7wX9vK2mP4-escaped',
    ];
    const yaml = [
      'db:',
      '  host: db.internal',
      '  password: |',
      `    ${secrets[0]}`,
      '  api_token: >-',
      `    ${secrets[1]}`,
      '  secret:',
      `    ${secrets[2]}`,
      `  passphrase: !!str ${secrets[3]}`,
      `  client_secret: &shared ${secrets[4]}`,
      '  ? password',
      `  : ${secrets[5]}`,
      `  token: "ab\\"${secrets[6]}"`,
      '  port: 5432',
      '',
    ].join('\n');
    const host = await connectServed(config);
    await host.client.callTool({ name: 'up__echo', arguments: { text: yaml } });
    await host.close();

    const audit = readFileSync(file, 'utf8');
    for (const secret of secrets) expect(audit).not.toContain(secret);
    expect(audit).toContain('host: db.internal');
    expect(audit).toContain('port: 5432');
  });
});

describe('an audit file that cannot be written', () => {
  it('block: calls are refused with a clear error, and never run', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'audit.jsonl')); // a directory where the file should be
    const recorded = path.join(dir, 'record.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl', onFailure: 'block' },
        servers: { up: fixture(['--record', recorded]) },
      },
      dir,
    );
    const host = await connectServed(config);
    await host.client.listTools(); // the upstream is up, so only the audit stage can stop the call
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toContain('Calls are refused: the audit log');
    expect(host.stderr()).toContain('AUDIT: Calls are refused');
    expect(readFileSync(recorded, 'utf8')).not.toContain('tools/call');
    await host.close();
  });

  it('continue: calls are served and the gateway warns loudly', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'audit.jsonl'));
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl', onFailure: 'continue' },
        servers: { up: fixture() },
      },
      dir,
    );
    const host = await connectServed(config);
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'served' } });
    expect((result.content as { text: string }[])[0]!.text).toBe('served');
    expect(host.stderr()).toMatch(
      /AUDIT: The audit log ".*audit\.jsonl" cannot be written .*calls continue unaudited/,
    );
    await host.close();
  });
});
