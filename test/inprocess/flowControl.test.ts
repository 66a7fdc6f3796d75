/**
 * Flow control, served in-process (test/inprocess/served.ts, the same `startServing` as
 * `mcp-warden --config FILE`, with real upstream processes): fixture servers labelled untrusted,
 * private and egress, a host that reads from them in turn, and what the gateway does with the call
 * that would complete the lethal trifecta. What reached the egress server is read from its own
 * record file. What `mcp-warden policy explain` and `mcp-warden check` say stays with the binary,
 * in test/integration/flowControl.test.ts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { withRetries } from '../fixtures/modernHost.js';
import {
  auditRecords,
  call,
  callsReceived,
  confirmingHost,
  setup,
  text,
} from '../integration/flowControlSetup.js';
import { tempDir } from '../integration/harness.js';
import { suiteIssuer } from '../integration/httpHarness.js';
import { modernResult } from '../integration/modernWire.js';
import { servedPerTest } from './perTest.js';
import type { ServedHttp } from './served.js';

const served = servedPerTest();

/** A host served in this process that answers every confirmation question with `action`. */
function host(config: string, action: 'accept' | 'decline' = 'decline') {
  return confirmingHost(served.connect, config, action);
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

  it('a declined call is recorded as confirm, not confirmed, with its lineage', async () => {
    const s = setup();
    const h = await host(s.config, 'decline');
    await call(h, 'web__echo');
    await call(h, 'files__echo');
    await call(h, 'mail__echo');
    await h.close();
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
    const host = await served.modern(s.config);
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
  let gateway: ServedHttp | undefined;

  /** A host connected as `subject`, declining every confirmation and keeping the questions. */
  async function hostAs(subject: string) {
    const asked: string[] = [];
    const connected = await served.httpHost(gateway!.url, {
      token: await issuer.token(subject),
      capabilities: { elicitation: { form: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push((request.params as { message: string }).message);
          return { action: 'decline' } as never;
        }),
    });
    const callAs = async (name: string, text = name) =>
      (await connected.client.callTool({ name, arguments: { text } })) as CallToolResult;
    return { call: callAs, asked };
  }

  it('each principal has a session of their own, shared by all of their connections', async () => {
    const s = setup({ extra: { auth: { issuer: issuer.url(), audience: AUDIENCE } } });
    gateway = await served.http(s.config);
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
