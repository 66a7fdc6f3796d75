/**
 * Flow control through the built binary: fixture servers labelled untrusted, private and egress,
 * a host that reads from them in turn, and what the gateway does with the call that would complete
 * the lethal trifecta. What reached the egress server is read from its own record file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { readRecord } from '../fixtures/fixtureProcess.js';
import { startModernHost, withRetries, type ModernHost } from '../fixtures/modernHost.js';
import {
  CLI,
  connectHost,
  FAST_GATEWAY,
  fixture,
  runCli,
  tempDir,
  writeConfig,
  type HostSession,
} from './harness.js';
import {
  connectHttpHost,
  startHttpGateway,
  suiteIssuer,
  type HttpGateway,
  type HttpHost,
} from './httpHarness.js';
import { modernResult } from './modernWire.js';

const hosts: HostSession[] = [];
let modern: ModernHost | undefined;

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await modern?.close();
  modern = undefined;
});

interface Setup {
  readonly dir: string;
  readonly config: string;
  readonly audit: string;
  /** The record file of each server: what reached it. */
  readonly record: (server: string) => string;
}

/**
 * Three fixture servers: `web`, `files` and `mail`, labelled by `labels` (server → labels in the
 * config), under the given `flow` section and policy text.
 */
function setup(
  options: {
    readonly labels?: Record<string, string[]>;
    readonly flow?: Record<string, unknown>;
    readonly policy?: string;
    readonly extraArgs?: Record<string, string[]>;
    readonly extra?: Record<string, unknown>;
  } = {},
): Setup {
  const dir = tempDir('warden-flow-');
  const record = (server: string) => path.join(dir, `${server}.jsonl`);
  const labels = options.labels ?? { web: ['untrusted'], files: ['private'], mail: ['egress'] };
  const servers = Object.fromEntries(
    ['web', 'files', 'mail'].map((name) => [
      name,
      fixture(['--name', name, '--record', record(name), ...(options.extraArgs?.[name] ?? [])], {
        ...(labels[name] && { labels: labels[name] }),
      }),
    ]),
  );
  if (options.policy !== undefined) writeFileSync(path.join(dir, 'policy.yaml'), options.policy);
  const audit = path.join(dir, 'audit.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: audit },
      ...(options.policy !== undefined && { policies: ['policy.yaml'] }),
      ...(options.flow && { flow: options.flow }),
      ...options.extra,
      servers,
    },
    dir,
  );
  return { dir, config, audit, record };
}

/** A host that answers every confirmation question with `action`, keeping the questions. */
async function host(config: string, action: 'accept' | 'decline' = 'decline') {
  const asked: string[] = [];
  const session = await connectHost(config, {
    capabilities: { elicitation: { form: {} } },
    beforeConnect: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push((request.params as { message: string }).message);
        return { action } as never;
      }),
  });
  hosts.push(session);
  return { ...session, asked };
}

async function call(session: HostSession, name: string, text = name): Promise<CallToolResult> {
  return (await session.client.callTool({ name, arguments: { text } })) as CallToolResult;
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** The texts of the `echo` calls a fixture server received, by its record file. */
function callsReceived(file: string): string[] {
  return readRecord(file).flatMap((m) => {
    if (!('method' in m) || m.method !== 'tools/call') return [];
    const params = m.params as { name: string; arguments: { text?: string } };
    return params.name === 'echo' ? [String(params.arguments.text)] : [];
  });
}

function auditRecords(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('the lethal trifecta', () => {
  it('untrusted, then private, then egress: the user is asked, naming the sources; declined, the egress server never gets the call', async () => {
    const s = setup();
    const h = await host(s.config, 'decline');
    expect(text(await call(h, 'web__echo', 'page'))).toBe('page');
    expect(text(await call(h, 'files__echo', 'secret'))).toBe('secret');
    const refused = await call(h, 'mail__echo', 'exfiltrate');
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('Declined by the user');
    expect(h.asked).toHaveLength(1);
    const question = h.asked[0]!;
    expect(question).toContain('lethal trifecta');
    expect(question).toContain('untrusted content');
    expect(question).toContain('tool "echo" on server "web"');
    expect(question).toContain('tool "echo" on server "files"');
    expect(question).toContain('flow.trifecta in proxy.config.json');
    // A forwarded call would be in the fixture's record before any answer came back from it.
    expect(callsReceived(s.record('mail'))).toEqual([]);
    expect(callsReceived(s.record('web'))).toEqual(['page']);
  });

  it('approved, the egress call runs once', async () => {
    const s = setup();
    const h = await host(s.config, 'accept');
    await call(h, 'web__echo');
    await call(h, 'files__echo');
    expect(text(await call(h, 'mail__echo', 'sent'))).toBe('sent');
    expect(h.asked).toHaveLength(1);
    expect(callsReceived(s.record('mail'))).toEqual(['sent']);
  });

  it('private then egress, with nothing untrusted read, passes without a question', async () => {
    const s = setup();
    const h = await host(s.config, 'decline');
    await call(h, 'files__echo');
    expect(text(await call(h, 'mail__echo', 'report'))).toBe('report');
    expect(h.asked).toEqual([]);
    expect(callsReceived(s.record('mail'))).toEqual(['report']);
  });

  it('any order completes it: egress and untrusted read, then private data asked for', async () => {
    const s = setup();
    const h = await host(s.config, 'decline');
    await call(h, 'mail__echo', 'hello');
    await call(h, 'web__echo');
    const refused = await call(h, 'files__echo', 'secret');
    expect(refused.isError).toBe(true);
    expect(callsReceived(s.record('files'))).toEqual([]);
  });

  it('a failed result brings nothing into the session', async () => {
    const s = setup();
    const h = await host(s.config, 'decline');
    expect((await h.client.callTool({ name: 'web__fail', arguments: {} })).isError).toBe(true);
    await call(h, 'files__echo');
    expect(text(await call(h, 'mail__echo', 'ok'))).toBe('ok');
    expect(h.asked).toEqual([]);
  });

  it('two host sessions are independent: what one read does not count in the other', async () => {
    const s = setup();
    const first = await host(s.config, 'decline');
    const second = await host(s.config, 'decline');
    await call(first, 'web__echo');
    await call(first, 'files__echo');
    await call(second, 'files__echo');
    expect(text(await call(second, 'mail__echo', 'from second'))).toBe('from second');
    expect((await call(first, 'mail__echo', 'from first')).isError).toBe(true);
    expect(second.asked).toEqual([]);
    expect(first.asked).toHaveLength(1);
    expect(callsReceived(s.record('mail'))).toEqual(['from second']);
  });

  it('deny mode refuses it, saying why, without asking', async () => {
    const s = setup({ flow: { trifecta: 'deny' } });
    const h = await host(s.config, 'accept');
    await call(h, 'web__echo');
    await call(h, 'files__echo');
    const refused = await call(h, 'mail__echo', 'exfiltrate');
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/lethal trifecta.*Refused by flow\.trifecta in proxy\.config\.json/s);
    expect(h.asked).toEqual([]);
    expect(callsReceived(s.record('mail'))).toEqual([]);
  });

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

  it('a declined call is recorded as confirm, not confirmed, with its lineage', async () => {
    const s = setup();
    const h = await host(s.config, 'decline');
    await call(h, 'web__echo');
    await call(h, 'files__echo');
    await call(h, 'mail__echo');
    await h.close();
    hosts.splice(0);
    const mail = auditRecords(s.audit).find((r) => r['type'] === 'call' && r['tool'] === 'mail__echo')!;
    expect(mail['outcome']).toBe('denied');
    expect(mail['decision']).toMatchObject({ effect: 'confirm', confirmed: false, how: 'elicitation' });
    expect(mail['flow']).toMatchObject({
      trifecta: 'confirm',
      lineage: [{ label: 'untrusted' }, { label: 'private' }],
    });
    expect((mail['flow'] as Record<string, unknown>)['source']).toBeUndefined();
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

  it('a tool that declares openWorldHint: true is untrusted and egress; its absence takes no configured label away', async () => {
    const dir = tempDir('warden-flow-hints-');
    const hints = path.join(dir, 'hints.json');
    writeFileSync(hints, JSON.stringify({ echo: { annotations: { openWorldHint: true } } }));
    const mailHints = path.join(dir, 'mail-hints.json');
    writeFileSync(mailHints, JSON.stringify({ echo: { annotations: { openWorldHint: false } } }));
    // web: no labels in the config, only the hint; mail: egress in the config, and a hint that says false.
    const s = setup({
      labels: { files: ['private'], mail: ['egress'] },
      extraArgs: { web: ['--describe-from', hints], mail: ['--describe-from', mailHints] },
    });
    const h = await host(s.config, 'decline');
    await call(h, 'files__echo');
    // The web tool brings untrusted content into a session with private data, and can send it
    // out: it completes the trifecta on its own.
    const refused = await call(h, 'web__echo', 'fetch with secret');
    expect(refused.isError).toBe(true);
    expect(h.asked[0]).toContain('through this call');
    expect(callsReceived(s.record('web'))).toEqual([]);
    // Labels are not lowered by a hint: mail stays egress.
    const other = await host(s.config, 'decline');
    await call(other, 'files__echo');
    await other.client.callTool({ name: 'web__add', arguments: { a: 1, b: 1 } });
    expect(other.asked).toEqual([]);
  });
});

describe('a 2026-07-28 host', () => {
  it('is asked through MRTR, naming the sources; declined, the egress server never gets the call', async () => {
    const s = setup();
    modern = startModernHost(CLI, s.config);
    const host = modern;
    for (const name of ['web__echo', 'files__echo'])
      modernResult('tools/call', await host.request('tools/call', { name, arguments: { text: name } }));
    const questions: string[] = [];
    const answers = await withRetries(
      host,
      'tools/call',
      { name: 'mail__echo', arguments: { text: 'exfiltrate' } },
      (requests) => {
        const [key, request] = Object.entries(requests)[0]!;
        expect(request.method).toBe('elicitation/create');
        questions.push(String(request.params['message']));
        return { [key]: { action: 'decline' } };
      },
    );
    expect(questions).toHaveLength(1);
    expect(questions[0]).toContain('lethal trifecta');
    expect(questions[0]).toContain('tool "echo" on server "web"');
    const final = modernResult('tools/call', answers.at(-1)!);
    expect(final['isError']).toBe(true);
    expect(callsReceived(s.record('mail'))).toEqual([]);
  });
});

describe('on the HTTP listener', () => {
  const AUDIENCE = 'https://warden.test/mcp';
  const issuer = suiteIssuer(AUDIENCE);
  let gateway: HttpGateway | undefined;
  const httpHosts: HttpHost[] = [];
  afterEach(async () => {
    await Promise.all(httpHosts.splice(0).map((h) => h.close().catch(() => {})));
    await gateway?.stop();
    gateway = undefined;
  });

  /** A host connected as `subject`, declining every confirmation and keeping the questions. */
  async function hostAs(subject: string) {
    const asked: string[] = [];
    const connected = await connectHttpHost(gateway!.url, {
      token: await issuer.token(subject),
      capabilities: { elicitation: { form: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push((request.params as { message: string }).message);
          return { action: 'decline' } as never;
        }),
    });
    httpHosts.push(connected);
    const callAs = async (name: string, text = name) =>
      (await connected.client.callTool({ name, arguments: { text } })) as CallToolResult;
    return { call: callAs, asked };
  }

  it('each principal has a session of their own, shared by all of their connections', async () => {
    const s = setup({ extra: { auth: { issuer: issuer.url(), audience: AUDIENCE } } });
    gateway = await startHttpGateway(s.config);
    const alice = await hostAs('alice');
    const bob = await hostAs('bob');
    await alice.call('web__echo');
    await alice.call('files__echo');
    // Bob read private data only: his egress call passes.
    await bob.call('files__echo');
    expect(text(await bob.call('mail__echo', 'from bob'))).toBe('from bob');
    expect(bob.asked).toEqual([]);
    // A second connection of Alice's starts no fresh session: what she read still counts.
    const aliceAgain = await hostAs('alice');
    expect((await aliceAgain.call('mail__echo', 'from alice')).isError).toBe(true);
    expect(aliceAgain.asked).toHaveLength(1);
    expect(aliceAgain.asked[0]).toContain('tool "echo" on server "web"');
    expect(callsReceived(s.record('mail'))).toEqual(['from bob']);
  });
});
