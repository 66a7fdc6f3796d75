/**
 * Profiles cut prompts, resources and resource templates as they cut tools, served in-process
 * (test/inprocess/served.ts, the same `startServing` as `mcp-warden --config FILE`, with real
 * upstream processes): by the profile's `servers`, `prompts` and `resources` globs, in the lists
 * and when one is asked for (prompts/get, resources/read, resources/subscribe), for a 2025-11-25
 * host chosen by its client name and for 2026-07-28 requests on the listener's `/mcp/<profile>`
 * path. What a profile leaves out is refused exactly as a prompt or resource nobody serves.
 */
import { describe, expect, it } from 'vitest';
import { envelope, MODERN, type ModernHost } from '../fixtures/modernHost.js';
import {
  FAST_GATEWAY,
  fixture,
  NODE,
  serverBin,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { postRpc } from '../integration/httpHarness.js';
import type { ServedHttp } from './served.js';
import { servedPerTest } from './perTest.js';

type Json = Record<string, unknown>;

let host: HostSession | undefined;
let http: ServedHttp | undefined;
let modern: ModernHost | undefined;
const each = servedPerTest();

/** `ops`: the fixture's two resources; `every`: server-everything's prompts, resources and templates. */
function config(): string {
  return writeConfig({
    gateway: FAST_GATEWAY,
    servers: {
      ops: fixture(['--tools', 'basic', '--resources', '--name', 'ops']),
      every: { command: NODE, args: [serverBin('everything')] },
    },
    profiles: {
      opsonly: { clients: ['ops-host'], servers: ['ops'] },
      narrow: {
        clients: ['narrow-host'],
        prompts: ['every__simple*'],
        resources: ['fixture://ops/a', 'demo://resource/dynamic/text/*'],
      },
    },
  });
}

const EVERY_PROMPT = 'every__simple-prompt';
const OTHER_PROMPT = 'every__args-prompt';
const OPS_A = 'fixture://ops/a';
const EVERY_TEXT = 'demo://resource/dynamic/text/1';
const EVERY_TEXT_TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';

/** What a rejected request says, with the name or URI it was about taken out: the rest must not differ. */
async function refusal(request: Promise<unknown>, subject: string): Promise<string> {
  const error = (await request.then(
    () => undefined,
    (e: unknown) => e,
  )) as { code?: number; message?: string } | undefined;
  expect(error, `${subject} was served`).toBeDefined();
  return `${error!.code} ${error!.message!.replaceAll(subject, '<subject>')}`;
}

const promptNames = async (h: HostSession) => (await h.client.listPrompts()).prompts.map((p) => p.name);
const resourceUris = async (h: HostSession) => (await h.client.listResources()).resources.map((r) => r.uri);
const templates = async (h: HostSession) =>
  (await h.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);

describe('a profile by client name (2025-11-25 host)', () => {
  it('a host without a profile sees every server', async () => {
    host = await each.connect(config());
    expect(await promptNames(host)).toContain(EVERY_PROMPT);
    expect(await resourceUris(host)).toEqual(expect.arrayContaining([OPS_A, 'fixture://ops/b']));
    expect(await templates(host)).toContain(EVERY_TEXT_TEMPLATE);
    expect((await host.client.getPrompt({ name: EVERY_PROMPT })).messages.length).toBeGreaterThan(0);
    expect((await host.client.readResource({ uri: EVERY_TEXT })).contents.length).toBeGreaterThan(0);
  });

  it('servers: what other servers serve is neither listed nor served, and refused as unknown', async () => {
    host = await each.connect(config(), { name: 'ops-host' });
    expect(await promptNames(host)).toEqual([]);
    expect((await resourceUris(host)).sort()).toEqual([OPS_A, 'fixture://ops/b']);
    expect(await templates(host)).toEqual([]);

    const unknownPrompt = await refusal(
      host.client.getPrompt({ name: 'every__no-such-prompt' }),
      'every__no-such-prompt',
    );
    expect(await refusal(host.client.getPrompt({ name: EVERY_PROMPT }), EVERY_PROMPT)).toBe(unknownPrompt);
    const unknownUri = 'demo://nothing/here';
    const unknownRead = await refusal(host.client.readResource({ uri: unknownUri }), unknownUri);
    expect(await refusal(host.client.readResource({ uri: EVERY_TEXT }), EVERY_TEXT)).toBe(unknownRead);
    const unknownSubscribe = await refusal(host.client.subscribeResource({ uri: unknownUri }), unknownUri);
    expect(await refusal(host.client.subscribeResource({ uri: EVERY_TEXT }), EVERY_TEXT)).toBe(
      unknownSubscribe,
    );
    expect(await refusal(host.client.unsubscribeResource({ uri: EVERY_TEXT }), EVERY_TEXT)).toBe(
      unknownSubscribe.replace('subscribe', 'unsubscribe'),
    );

    // What the profile keeps is served as before.
    const read = await host.client.readResource({ uri: OPS_A });
    expect(read.contents[0]).toMatchObject({ uri: OPS_A, text: 'a from ops' });
    await host.client.subscribeResource({ uri: OPS_A });
  });

  it('prompts and resources globs: only the names and URIs they match', async () => {
    host = await each.connect(config(), { name: 'narrow-host' });
    expect(await promptNames(host)).toEqual([EVERY_PROMPT]);
    expect(await resourceUris(host)).toEqual([OPS_A]);
    expect(await templates(host)).toEqual([EVERY_TEXT_TEMPLATE]);
    expect((await host.client.getPrompt({ name: EVERY_PROMPT })).messages.length).toBeGreaterThan(0);
    expect((await host.client.readResource({ uri: EVERY_TEXT })).contents.length).toBeGreaterThan(0);

    const unknownPrompt = await refusal(
      host.client.getPrompt({ name: 'every__no-such-prompt' }),
      'every__no-such-prompt',
    );
    expect(await refusal(host.client.getPrompt({ name: OTHER_PROMPT }), OTHER_PROMPT)).toBe(unknownPrompt);
    const unknownRead = await refusal(
      host.client.readResource({ uri: 'demo://nothing/here' }),
      'demo://nothing/here',
    );
    for (const uri of ['fixture://ops/b', 'demo://resource/dynamic/blob/1'])
      expect(await refusal(host.client.readResource({ uri }), uri)).toBe(unknownRead);
  });
});

describe('a profile by listener path (2026-07-28 stateless requests)', () => {
  const rpc = async (url: string, method: string, params: Json, name?: string) => {
    const answer = await postRpc(
      url,
      { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: envelope() } },
      {
        'Mcp-Protocol-Version': MODERN,
        'Mcp-Method': method,
        ...(name !== undefined && { 'Mcp-Name': name }),
      },
    );
    return JSON.parse(answer.text) as { result?: Json; error?: { code: number; message: string } };
  };
  const refused = (answer: { error?: { code: number; message: string } }, subject: string) => {
    expect(answer.error, `${subject} was served`).toBeDefined();
    return `${answer.error!.code} ${answer.error!.message.replaceAll(subject, '<subject>')}`;
  };

  it('lists and serves only the profile’s servers; the rest is refused as unknown', async () => {
    http = await each.http(config());
    const whole = await rpc(http.url, 'prompts/list', {});
    expect((whole.result!.prompts as { name: string }[]).map((p) => p.name)).toContain(EVERY_PROMPT);

    const url = `${http.url}/opsonly`;
    expect((await rpc(url, 'prompts/list', {})).result!.prompts).toEqual([]);
    const uris = ((await rpc(url, 'resources/list', {})).result!.resources as { uri: string }[]).map(
      (r) => r.uri,
    );
    expect(uris.sort()).toEqual([OPS_A, 'fixture://ops/b']);
    expect((await rpc(url, 'resources/templates/list', {})).result!.resourceTemplates).toEqual([]);

    const unknownPrompt = refused(
      await rpc(url, 'prompts/get', { name: 'every__no-such-prompt' }, 'every__no-such-prompt'),
      'every__no-such-prompt',
    );
    expect(refused(await rpc(url, 'prompts/get', { name: EVERY_PROMPT }, EVERY_PROMPT), EVERY_PROMPT)).toBe(
      unknownPrompt,
    );
    const unknownRead = refused(
      await rpc(url, 'resources/read', { uri: 'demo://nothing/here' }, 'demo://nothing/here'),
      'demo://nothing/here',
    );
    expect(refused(await rpc(url, 'resources/read', { uri: EVERY_TEXT }, EVERY_TEXT), EVERY_TEXT)).toBe(
      unknownRead,
    );
    const kept = await rpc(url, 'resources/read', { uri: OPS_A }, OPS_A);
    expect(kept.result!.contents).toMatchObject([{ uri: OPS_A, text: 'a from ops' }]);
  });
});

describe('a profile by client name (2026-07-28 host over stdio)', () => {
  it('a subscriptions/listen stream is not given resources outside the profile', async () => {
    // Two servers that both take subscriptions, so only the profile can tell their URIs apart.
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: {
        ops: fixture(['--tools', 'basic', '--resources', '--name', 'ops']),
        other: fixture(['--tools', 'basic', '--resources', '--name', 'other']),
      },
      profiles: { modern: { clients: ['modern-test-host'], servers: ['ops'] } },
    });
    modern = await each.modern(config);
    // A list waits for every server to be up.
    const listed = await modern.request('resources/list', {});
    expect((listed.result!.resources as { uri: string }[]).map((r) => r.uri).sort()).toEqual([
      OPS_A,
      'fixture://ops/b',
    ]);
    const id = modern.send('subscriptions/listen', {
      notifications: { resourceSubscriptions: [OPS_A, 'fixture://other/a'] },
    });
    const ack = await modern.waitForNotification(
      (n) => n.method === 'notifications/subscriptions/acknowledged',
    );
    expect(ack.params).toEqual({
      _meta: { 'io.modelcontextprotocol/subscriptionId': id },
      notifications: { resourceSubscriptions: [OPS_A] },
    });
  });
});
