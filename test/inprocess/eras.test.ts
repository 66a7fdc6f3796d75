/**
 * The gateway between protocol eras, served in-process (test/inprocess/served.ts, the same
 * `startServing` as `mcp-warden --config FILE`, with real upstream processes): a host of the
 * stateless revision (2026-07-28, test/fixtures/modernHost.ts over servedModern.ts) or of the
 * handshake revisions (the SDK Client), in front of a legacy upstream
 * (test/fixtures/fixture-server.mjs) or a modern-only one (test/fixtures/modern-server.mjs).
 * Every modern message the gateway sends is checked against the official 2026-07-28 schemas
 * (modernWire.ts). What `mcp-warden tools` shows of each era stays with the binary, in
 * test/integration/eras.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  GetTaskResultSchema,
  TaskSchema,
  type CallToolResult,
  type Task,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  TaskStatusNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  envelope,
  MODERN,
  withRetries,
  type EnvelopeOptions,
  type Json,
  type ModernHost,
} from '../fixtures/modernHost.js';
import {
  STATE_ENV,
  FAST_GATEWAY,
  fixture,
  initialize,
  NODE,
  readAudit,
  ROOT,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { keepServedListings } from './servedListings.js';
import { startModernHttpFixture } from '../fixtures/modern-http-server.mjs';
import {
  modernAcknowledgment,
  modernCreatedTask,
  modernError,
  modernResult,
  modernTaskState,
} from '../integration/modernWire.js';
import { servedPerTest } from './perTest.js';

const MODERN_SERVER = path.join(ROOT, 'test/fixtures/modern-server.mjs');

function modernServer(args: string[] = []): Record<string, unknown> {
  return { command: NODE, args: [MODERN_SERVER, ...args] };
}

let modern: ModernHost | undefined;
let legacy: HostSession | undefined;
const each = servedPerTest();

async function modernHost(
  servers: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<ModernHost> {
  const config = writeConfig({ gateway: FAST_GATEWAY, servers, ...extra });
  modern = await each.modern(config);
  return modern;
}

/**
 * As `modernHost`, once a first run has kept the servers' listings: what server/discover
 * declares is then what they declared, however slow their start.
 */
async function modernHostAfterListing(servers: Record<string, unknown>): Promise<ModernHost> {
  const config = writeConfig({ gateway: FAST_GATEWAY, servers });
  await keepServedListings(config);
  modern = await each.modern(config, STATE_ENV);
  return modern;
}

describe('a modern host, a legacy upstream', () => {
  it('discovers, lists and calls statelessly, every answer valid 2026-07-28', async () => {
    const host = await modernHost({ up: fixture() });
    const discovered = modernResult('server/discover', await host.request('server/discover'));
    expect(discovered.supportedVersions).toEqual([MODERN]);
    expect(discovered.capabilities).toMatchObject({ tools: { listChanged: true } });

    const listed = modernResult('tools/list', await host.request('tools/list'));
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toContain('up__echo');
    // A legacy server gives no caching hint, which counts as "stale at once".
    expect(listed).toMatchObject({ ttlMs: 0, cacheScope: 'public' });

    const called = modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'up__echo', arguments: { text: 'hi' } }),
    );
    expect(called.content).toEqual([{ type: 'text', text: 'hi' }]);
    // A failure the model can act on is a result too, shaped the same way.
    const unknown = await host.request('tools/call', { name: 'up__nope', arguments: {} });
    modernError(unknown, -32602);
    // The gateway never sends a modern host a request.
    expect(host.received.filter((m) => 'method' in m && 'id' in m)).toEqual([]);
  });

  it('refuses an unsupported version with -32022 naming the versions it serves', async () => {
    const host = await modernHost({ up: fixture() });
    const error = modernError(
      await host.request('tools/list', {}, { protocolVersion: '2099-01-01' }),
      -32022,
    );
    // The versions a client may retry this request in, with its envelope: what server/discover
    // lists. The handshake revisions are named in the message, as served through initialize.
    expect(error.data).toEqual({ supported: [MODERN], requested: '2099-01-01' });
    expect(error.message).toMatch(/2025-11-25.* sends initialize/);
  });

  it('reads a repeated envelope once, and still serves each request exactly as it was sent', async () => {
    const host = await modernHost({ up: fixture(['--tools', 'basic,meta']) });
    const echoed = async (data: Json, options?: Parameters<ModernHost['request']>[2]) =>
      (await host.request('tools/call', { name: 'up__echo_structured', arguments: { data } }, options)).result
        ?.structuredContent;
    // The first request's envelope is learned; later ones carry the same text.
    expect(await echoed({ n: 1 })).toEqual({ n: 1 });
    expect(await echoed({ n: 2 })).toEqual({ n: 2 });
    // The envelope's text inside the arguments too: the arguments keep it.
    expect(await echoed({ _meta: envelope() })).toEqual({ _meta: envelope() });
    expect(await echoed({ s: '\u0000', _meta: envelope() })).toEqual({ s: '\u0000', _meta: envelope() });
    // The envelope first in the params, where no line before had it: found and read all the same.
    const reordered = host.send(
      'tools/call',
      { name: 'up__echo_structured', _meta: envelope(), arguments: { data: { n: 5, _meta: envelope() } } },
      { bare: true },
    );
    await expect.poll(() => host.received.find((m) => m.id === reordered)).toBeDefined();
    expect(
      modernResult('tools/call', host.received.find((m) => m.id === reordered) as never).structuredContent,
    ).toEqual({ n: 5, _meta: envelope() });
    expect(await echoed({ n: 6 })).toEqual({ n: 6 });
    // No envelope of its own, only the text of one in its arguments: still malformed.
    const sent = host.send(
      'tools/call',
      {
        name: 'up__echo_structured',
        arguments: { data: { _meta: envelope() } },
        _meta: '\u0000' as unknown as Json,
      },
      { bare: true },
    );
    await expect.poll(() => host.received.find((m) => m.id === sent)).toBeDefined();
    modernError(host.received.find((m) => m.id === sent) as never, -32602);
    // Another envelope (another log level) is read as sent, and the learned one still works.
    modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'up__echo', arguments: { text: 'a' } }, { logLevel: 'error' }),
    );
    expect(await echoed({ n: 3 })).toEqual({ n: 3 });
    // The legacy server sees none of the envelope, and the host's own keys as they were.
    const metaSeen = async (params: Json) =>
      JSON.parse(
        textOf(
          (await host.request('tools/call', { name: 'up__echo_meta', arguments: {}, ...params })).result!,
        ),
      ) as Json | null;
    const envelopeKeys = (meta: Json | null) =>
      Object.keys(meta ?? {}).filter((k) => k.startsWith('io.modelcontextprotocol/'));
    expect(envelopeKeys(await metaSeen({}))).toEqual([]);
    expect(envelopeKeys(await metaSeen({}))).toEqual([]);
    const own = await metaSeen({ _meta: { mine: 1 } });
    expect(own).toMatchObject({ mine: 1 });
    expect(envelopeKeys(own)).toEqual([]);
  });

  it('answers a malformed envelope with -32602, and stays up', async () => {
    const host = await modernHost({ up: fixture() });
    // The first request: an envelope without its required version is malformed, not legacy.
    const unversioned = await host.request(
      'tools/list',
      { _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } },
      { bare: true },
    );
    expect(modernError(unversioned, -32602).message).toContain('protocolVersion');
    const bad = await host.request(
      'tools/list',
      {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': 7,
        },
      },
      { bare: true },
    );
    expect(modernError(bad, -32602).message).toContain('clientCapabilities');
    modernResult('tools/list', await host.request('tools/list'));
    // Once modern, a request without an envelope is malformed too.
    modernError(await host.request('tools/list', {}, { bare: true }), -32602);
  });

  it('refuses initialize once the connection is modern, and methods the revision removed', async () => {
    const host = await modernHost({ up: fixture() });
    modernResult('server/discover', await host.request('server/discover'));
    const init = await host.request(
      'initialize',
      { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      { bare: true },
    );
    expect(modernError(init, -32022).data).toEqual({ supported: [MODERN], requested: '2025-11-25' });
    modernError(await host.request('ping'), -32601);
    modernError(await host.request('logging/setLevel', { level: 'debug' }), -32601);
  });

  it('delivers list changes on subscriptions/listen, tagged with the stream, and closes it at shutdown', async () => {
    const host = await modernHost({ up: fixture(['--list-changed-after', '300']) });
    modernResult('tools/list', await host.request('tools/list'));
    const id = await listen(
      host,
      { toolsListChanged: true, resourceSubscriptions: ['x:/y'] },
      { toolsListChanged: true },
    );
    const changed = await host.waitForNotification((n) => n.method === 'notifications/tools/list_changed');
    expect(changed.params).toEqual({ _meta: { 'io.modelcontextprotocol/subscriptionId': id } });
    const listed = modernResult('tools/list', await host.request('tools/list'));
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toContain('up__late_tool');
    await host.close();
    const closing = host.received.find((m) => m.id === id);
    expect(closing).toMatchObject({
      result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': id } },
    });
  });
});

describe('a legacy host, a modern-only upstream', () => {
  it('is initialized once refused, probed, and spoken to with the envelope on every request', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { m: modernServer(['--log', log]) } }, dir);
    legacy = await each.connect(config);
    const names = (await legacy.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('m__echo');
    const result = await legacy.client.callTool({ name: 'm__echo', arguments: { text: 'hi' } });
    expect(textOf(result)).toBe('echo: hi');
    const seen = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { method: string; meta: Record<string, unknown> | null });
    // initialize was refused, so the gateway probed; every later request carried the envelope.
    expect(seen[0]?.method).toBe('initialize');
    expect(seen[1]?.method).toBe('server/discover');
    for (const request of seen.slice(1))
      expect(request.meta?.['io.modelcontextprotocol/protocolVersion']).toBe(MODERN);
  });
});

describe('a modern host, a modern upstream', () => {
  it('probes with server/discover first and passes caching hints through, the least of them', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const host = await modernHost({ m: modernServer(['--log', log]) });
    const listed = modernResult('tools/list', await host.request('tools/list'));
    expect(listed).toMatchObject({ ttlMs: 60000, cacheScope: 'private' });
    const first = JSON.parse(readFileSync(log, 'utf8').split('\n')[0]!) as { method: string };
    expect(first.method).toBe('server/discover');
    const called = modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'm__numbers', arguments: {} }),
    );
    // The revision lets structured content be any JSON value: a modern host gets the array.
    expect(called.structuredContent).toEqual([1, 2, 3]);
  });

  it('passes log messages only for requests that asked for them, at their level', async () => {
    const host = await modernHost({ m: modernServer() });
    modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'm__log', arguments: {} }, { logLevel: 'error' }),
    );
    modernResult('tools/call', await host.request('tools/call', { name: 'm__log', arguments: {} }));
    expect(host.notifications.filter((n) => n.method === 'notifications/message')).toEqual([]);
    modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'm__log', arguments: {} }, { logLevel: 'debug' }),
    );
    const message = await host.waitForNotification((n) => n.method === 'notifications/message');
    expect(message.params).toMatchObject({ level: 'info', logger: 'm/tool', data: 'logged at info' });
  });
});

/** What a host answers each kind of question with, in either era. */
const ANSWERS: Record<string, Record<string, unknown>> = {
  'elicitation/create': { action: 'accept', content: { name: 'Ada' } },
  'sampling/createMessage': { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' },
  'roots/list': { roots: [{ uri: 'file:///work', name: 'work' }] },
};
const QUESTIONS: Record<string, Record<string, unknown>> = {
  'elicitation/create': {
    mode: 'form',
    message: 'Your name?',
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
  },
  'sampling/createMessage': {
    messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }],
    maxTokens: 5,
  },
  'roots/list': {},
};

describe('bridging a legacy upstream’s requests to a modern host (MRTR)', () => {
  it.each(Object.keys(ANSWERS))(
    '%s becomes an InputRequiredResult; the retry delivers the answer',
    async (method) => {
      const host = await modernHost({ up: fixture() });
      const params = { name: 'up__ask_client', arguments: { method, params: QUESTIONS[method] } };
      const first = modernResult('tools/call', await host.request('tools/call', params));
      expect(first.resultType).toBe('input_required');
      const [[key, asked]] = Object.entries(
        first.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>,
      ) as [[string, { method: string; params: Record<string, unknown> }]];
      expect(asked.method).toBe(method);
      if (method === 'elicitation/create') expect(asked.params.message).toBe('[up] Your name?');
      const final = modernResult(
        'tools/call',
        await host.request('tools/call', {
          ...params,
          inputResponses: { [key]: ANSWERS[method] },
          requestState: first.requestState,
        }),
      );
      expect(JSON.parse(textOf(final))).toEqual({ result: ANSWERS[method] });
      expect(host.received.filter((m) => 'method' in m && 'id' in m)).toEqual([]);
    },
  );

  it('refuses a server’s question that could belong to a call it cannot ask, rather than put it to another call', async () => {
    // A legacy server's request names no call. With one bridged call running there and another
    // whose host declared nothing it can be asked, the question may be the second one's: the
    // host must not see it as the first call's.
    const host = await modernHost({ up: fixture() });
    const ask = (text: string) => ({
      name: 'up__ask_client',
      arguments: {
        method: 'elicitation/create',
        params: { ...QUESTIONS['elicitation/create'], message: text },
      },
    });
    const first = modernResult('tools/call', await host.request('tools/call', ask('For the first call?')));
    expect(first.resultType).toBe('input_required');
    const key = Object.keys(first.inputRequests as object)[0]!;
    // The second call's envelope declares nothing, so it is not bridged; its question is refused.
    const second = modernResult(
      'tools/call',
      await host.request('tools/call', ask('For the second call?'), { capabilities: {} }),
    );
    const refused = JSON.parse(textOf(second)) as { error: { code: number; message: string } };
    expect(refused.error.code).toBe(-32601);
    expect(refused.error.message).toMatch(/server "up" has more than one call running/);
    // The first call was asked its own question only, and its retry completes it.
    const final = modernResult(
      'tools/call',
      await host.request('tools/call', {
        ...ask('For the first call?'),
        inputResponses: { [key]: ANSWERS['elicitation/create'] },
        requestState: first.requestState,
      }),
    );
    expect(final.resultType).toBe('complete');
    expect(JSON.parse(textOf(final))).toEqual({ result: ANSWERS['elicitation/create'] });
  });

  it('refuses a forged, a replayed and a misdirected requestState', async () => {
    const host = await modernHost({ up: fixture() });
    const params = { name: 'up__ask_client', arguments: { method: 'roots/list', params: {} } };
    const first = modernResult('tools/call', await host.request('tools/call', params));
    const state = first.requestState as string;
    const key = Object.keys(first.inputRequests as object)[0]!;
    const answer = { inputResponses: { [key]: ANSWERS['roots/list'] } };
    const forged = `${state.slice(0, -4)}${state.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect(
      modernError(await host.request('tools/call', { ...params, ...answer, requestState: forged }), -32602)
        .message,
    ).toMatch(/requestState refused: it failed verification/);
    // Valid state, other arguments: not the call it was issued for.
    const other = { name: 'up__ask_client', arguments: { method: 'roots/list', params: { x: 1 } } };
    expect(
      modernError(await host.request('tools/call', { ...other, ...answer, requestState: state }), -32602)
        .message,
    ).toMatch(/issued for another request/);
    modernResult(
      'tools/call',
      await host.request('tools/call', { ...params, ...answer, requestState: state }),
    );
    expect(
      modernError(await host.request('tools/call', { ...params, ...answer, requestState: state }), -32602)
        .message,
    ).toMatch(/already used/);
  });
});

describe('bridging a modern upstream’s InputRequiredResult to a legacy host', () => {
  it('asks the host with real requests and retries upstream with the answers', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { m: modernServer() } });
    const asked: string[] = [];
    legacy = await each.connect(config, {
      capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} },
      beforeConnect: (client) => {
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params.message);
          return ANSWERS['elicitation/create'] as never;
        });
        client.setRequestHandler(CreateMessageRequestSchema, () => {
          asked.push('sampling');
          return ANSWERS['sampling/createMessage'] as never;
        });
        client.setRequestHandler(ListRootsRequestSchema, () => {
          asked.push('roots');
          return ANSWERS['roots/list'] as never;
        });
      },
    });
    for (const [tool, method] of [
      ['ask_name', 'elicitation/create'],
      ['sample', 'sampling/createMessage'],
      ['list_roots', 'roots/list'],
    ] as const) {
      const result = await legacy.client.callTool({ name: `m__${tool}`, arguments: {} });
      const text = textOf(result);
      expect(text.startsWith(`${tool} got `)).toBe(true);
      expect(JSON.parse(text.slice(`${tool} got `.length))).toEqual(ANSWERS[method]);
    }
    expect(asked).toEqual(['[m] Your name?', 'sampling', 'roots']);
  });
});

describe('a modern server slow to answer the probe', () => {
  it('is probed again when it refuses the fallback initialize, and connects as modern', async () => {
    // The first server/discover is answered after the probe's 2 s bound, as by a server still
    // starting (an interpreter, a package download): the gateway has fallen back to initialize
    // by then, which a modern server refuses.
    const host = await modernHost({ m: modernServer(['--slow-discover', '2500']) });
    const listed = modernResult('tools/list', await host.request('tools/list'));
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toContain('m__echo');
    const called = modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'm__echo', arguments: { text: 'late' } }),
    );
    expect(textOf(called)).toContain('late');
    expect(host.stderr()).toMatch(/refused initialize after the probe .*probing it again/);
  });
});

describe('a modern host and a modern upstream asking for input', () => {
  it('asks the host the upstream’s question itself, labelled and audited, then retries upstream with the answer', async () => {
    const dir = tempDir();
    const audit = path.join(dir, 'audit.jsonl');
    const host = await modernHost({ m: modernServer() }, { audit: { file: audit } });
    const params = { name: 'm__ask_name', arguments: {} };
    const answers = await withRetries(host, 'tools/call', params, (requests) => {
      const [key, request] = Object.entries(requests)[0]!;
      expect(request.method).toBe('elicitation/create');
      // The host sees which server asks, as it does for every other question through the gateway.
      expect(request.params.message).toBe('[m] Your name?');
      return { [key]: ANSWERS['elicitation/create'] };
    });
    expect(answers).toHaveLength(2);
    // The gateway's own state, not the upstream's: the upstream's stays with the gateway.
    expect(modernResult('tools/call', answers[0]!).requestState).not.toBe('asked:ask_name');
    expect(textOf(modernResult('tools/call', answers[1]!))).toBe(
      `ask_name got ${JSON.stringify(ANSWERS['elicitation/create'])}`,
    );
    const question = readAudit(audit).find((r) => r.method === 'elicitation/create' && r.type === 'request');
    expect(question).toMatchObject({
      direction: 'to_host',
      server: 'm',
      hostEra: 'modern',
      upstreamEra: 'modern',
    });
  });

  it('passes none of a host’s own inputResponses or requestState upstream: the server’s question is still asked', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const audit = path.join(dir, 'audit.jsonl');
    const host = await modernHost({ m: modernServer(['--log', log]) }, { audit: { file: audit } });
    // The fixture would take this answer under its own state, which the gateway never hands out:
    // passed on, the host would answer a question no policy saw and no audit record holds.
    const params = { name: 'm__ask_name', arguments: {} };
    const answers = await withRetries(
      host,
      'tools/call',
      { ...params, requestState: 'asked:ask_name', inputResponses: { input: { action: 'decline' } } },
      (requests) => ({ [Object.keys(requests)[0]!]: ANSWERS['elicitation/create'] }),
    );
    expect(answers).toHaveLength(2);
    expect(modernResult('tools/call', answers[0]!).resultType).toBe('input_required');
    expect(textOf(modernResult('tools/call', answers[1]!))).toBe(
      `ask_name got ${JSON.stringify(ANSWERS['elicitation/create'])}`,
    );
    const calls = readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { method: string; params: Json })
      .filter((r) => r.method === 'tools/call');
    expect(calls[0]!.params).toEqual({ name: 'ask_name', arguments: {} });
    const asked = readAudit(audit).filter((r) => r.method === 'elicitation/create' && r.type === 'request');
    expect(asked).toHaveLength(1);
  });
});

describe('confirmation for a modern host', () => {
  const ASK_ECHO =
    'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n';

  /** A modern host over one fixture server `up` (started with `fixtureArgs`), under `policy`. */
  async function confirmHost(policy = ASK_ECHO, fixtureArgs: string[] = []): Promise<ModernHost> {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'policy.yaml'), policy);
    const config = writeConfig(
      { gateway: FAST_GATEWAY, policies: ['policy.yaml'], servers: { up: fixture(fixtureArgs) } },
      dir,
    );
    modern = await each.modern(config);
    return modern;
  }

  it('asks through MRTR; an approval runs the call, once', async () => {
    const host = await confirmHost();
    const params = { name: 'up__echo', arguments: { text: 'approved' } };
    const answers = await withRetries(host, 'tools/call', params, (requests) => {
      const [key, request] = Object.entries(requests)[0]!;
      expect(request.method).toBe('elicitation/create');
      expect(String(request.params.message)).toContain('Echo needs a human.');
      return { [key]: { action: 'accept', content: {} } };
    });
    expect(answers).toHaveLength(2);
    modernResult('tools/call', answers[0]!);
    expect(textOf(modernResult('tools/call', answers[1]!))).toBe('approved');
  });

  it('a declined approval does not run it; a host without elicitation gets -32021 naming it, and nothing runs', async () => {
    const host = await confirmHost();
    const params = { name: 'up__echo', arguments: { text: 'x' } };
    const answers = await withRetries(host, 'tools/call', params, (requests) => ({
      [Object.keys(requests)[0]!]: { action: 'decline' },
    }));
    const final = modernResult('tools/call', answers.at(-1)!);
    expect(final.isError).toBe(true);
    expect(textOf(final)).toContain('Declined by the user');
    // The revision's answer to a request that needs a capability the host did not declare on it.
    const none = modernError(await host.request('tools/call', params, { capabilities: {} }), -32021);
    expect(none.message).toContain('needs confirmation');
    expect(none.data).toEqual({ requiredCapabilities: { elicitation: { form: {} } } });
    // Declared on the retry, the question is asked.
    const retried = await withRetries(host, 'tools/call', params, (requests) => ({
      [Object.keys(requests)[0]!]: { action: 'accept', content: {} },
    }));
    expect(textOf(modernResult('tools/call', retried.at(-1)!))).toBe('x');
  });
  it('a call still waiting for its confirmation does not take an upstream’s question asked in another call', async () => {
    // The call being confirmed has not reached the server, so it cannot be the one asking: the
    // question belongs to the only call that is running there.
    const host = await confirmHost();
    const waiting = modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'up__echo', arguments: { text: 'later' } }),
    );
    expect(waiting.resultType).toBe('input_required');
    const params = {
      name: 'up__ask_client',
      arguments: { method: 'elicitation/create', params: QUESTIONS['elicitation/create'] },
    };
    const first = modernResult('tools/call', await host.request('tools/call', params));
    expect(first.resultType, textOf(first)).toBe('input_required');
    const [[key, asked]] = Object.entries(first.inputRequests as Record<string, { params: Json }>) as [
      [string, { params: Json }],
    ];
    expect(asked.params.message).toBe('[up] Your name?');
    const final = modernResult(
      'tools/call',
      await host.request('tools/call', {
        ...params,
        inputResponses: { [key]: ANSWERS['elicitation/create'] },
        requestState: first.requestState,
      }),
    );
    expect(JSON.parse(textOf(final))).toEqual({ result: ANSWERS['elicitation/create'] });
  });

  it('asks at most 64 questions at once; the next call is refused, saying why, not as the user’s no', async () => {
    const host = await confirmHost();
    const sent = Array.from({ length: 65 }, (_, i) =>
      host.request('tools/call', { name: 'up__echo', arguments: { text: `n${i}` } }),
    );
    const answers = (await Promise.all(sent)).map((a) => modernResult('tools/call', a));
    expect(answers.filter((a) => a.resultType === 'input_required')).toHaveLength(64);
    const refused = answers.filter((a) => a.isError === true);
    expect(refused).toHaveLength(1);
    expect(textOf(refused[0]!)).toMatch(/got no answer from the user .*64 questions/);
    expect(textOf(refused[0]!)).not.toContain('Declined');
  });

  it('asks about a resource read through MRTR too; the retry with the approval reads it', async () => {
    const host = await confirmHost(
      'rules:\n  - id: ask-read\n    match: { kind: resource }\n    action: confirm\n    reason: Reads need a human.\n',
      ['--resources'],
    );
    const answers = await withRetries(host, 'resources/read', { uri: 'fixture://fixture/a' }, (requests) => {
      const [key, request] = Object.entries(requests)[0]!;
      expect(String(request.params.message)).toContain('Reads need a human.');
      return { [key]: { action: 'accept', content: {} } };
    });
    expect(answers).toHaveLength(2);
    const read = modernResult('resources/read', answers[1]!);
    expect(read.contents).toEqual([expect.objectContaining({ uri: 'fixture://fixture/a' })]);
  });
});

describe('policy, audit and repair across eras', () => {
  function audited(servers: Record<string, unknown>): { config: string; auditFile: string } {
    const dir = tempDir();
    const config = writeConfig({ gateway: FAST_GATEWAY, audit: { file: './audit.jsonl' }, servers }, dir);
    return { config, auditFile: path.join(dir, 'audit.jsonl') };
  }

  it('audit records name both eras when either side is modern, and neither when both are legacy', async () => {
    const both = audited({ up: fixture(), m: modernServer() });
    modern = await each.modern(both.config);
    modernResult(
      'tools/call',
      await modern.request('tools/call', { name: 'up__echo', arguments: { text: 'a' } }),
    );
    modernResult(
      'tools/call',
      await modern.request('tools/call', { name: 'm__echo', arguments: { text: 'b' } }),
    );
    await modern.close();
    const calls = readAudit(both.auditFile).filter((r) => r.type === 'call');
    expect(calls.map((c) => [c.tool, c.hostEra, c.upstreamEra])).toEqual([
      ['up__echo', 'modern', 'legacy'],
      ['m__echo', 'modern', 'modern'],
    ]);

    const old = audited({ up: fixture(), m: modernServer() });
    legacy = await each.connect(old.config);
    await legacy.client.callTool({ name: 'up__echo', arguments: { text: 'a' } });
    await legacy.client.callTool({ name: 'm__echo', arguments: { text: 'b' } });
    await legacy.close();
    const legacyCalls = readAudit(old.auditFile).filter((r) => r.type === 'call');
    expect(legacyCalls.map((c) => [c.tool, c.hostEra, c.upstreamEra])).toEqual([
      ['up__echo', undefined, undefined],
      ['m__echo', 'legacy', 'modern'],
    ]);
  });

  it('a 2025 host gets structuredContent only as an object: an array from a modern server is repaired', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { m: modernServer() } });
    legacy = await each.connect(config);
    const result = await legacy.client.callTool({ name: 'm__numbers', arguments: {} });
    expect(result.structuredContent).toBeUndefined();
    expect(textOf(result)).toBe('[1,2,3]');
  });
});

describe('result types across eras', () => {
  it('a legacy server’s answer is final for a modern host, whatever resultType it writes', async () => {
    // An InputRequiredResult from a server whose revision has none would put its question to
    // the host unlabelled, answered past the policy and audit trail its real requests go through.
    const host = await modernHost({ up: fixture(['--tools', 'basic,odd']) });
    const answer = modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'up__modern_fields', arguments: {} }),
    );
    expect(answer.resultType).toBe('complete');
    expect(answer.inputRequests).toBeUndefined();
    expect(answer.requestState).toBeUndefined();
    expect(textOf(answer)).toBe('final');
    // The questions and state without a resultType are dropped all the same.
    const partial = modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'up__modern_fields', arguments: { withoutResultType: true } }),
    );
    expect(partial.resultType).toBe('complete');
    expect(partial.inputRequests).toBeUndefined();
    expect(partial.requestState).toBeUndefined();
    expect(textOf(partial)).toBe('final');
  });

  it('a modern server’s unknown resultType fails that call only, naming the server', async () => {
    const host = await modernHost({ m: modernServer() });
    const failed = modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'm__unknown_result_type', arguments: {} }),
    );
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toMatch(/"m" failed: .*resultType "deferred"/);
    modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'm__echo', arguments: { text: 'x' } }),
    );
  });
});

describe('a legacy connection', () => {
  it('refuses an enveloped request with -32600, and server/discover as before; it keeps serving', async () => {
    const s = await each.raw(writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }));
    await initialize(s);
    const mixed = s.next((m) => m.id === 1);
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } }));
    expect(((await mixed) as { error: { code: number; message: string } }).error).toMatchObject({
      code: -32600,
      message: expect.stringContaining('this connection was initialized') as unknown,
    });
    const probe = s.next((m) => m.id === 2);
    s.send('{"jsonrpc":"2.0","id":2,"method":"server/discover"}');
    expect(((await probe) as { error: { code: number } }).error.code).toBe(-32601);
    const listed = s.next((m) => m.id === 3);
    s.send('{"jsonrpc":"2.0","id":3,"method":"tools/list"}');
    const result = ((await listed) as { result: Record<string, unknown> }).result;
    expect(result.resultType).toBeUndefined();
    expect((result.tools as { name: string }[]).map((t) => t.name)).toContain('up__echo');
  });

  it('refuses a _meta that is not an object with -32602, not an internal error; it keeps serving', async () => {
    const s = await each.raw(writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }));
    await initialize(s);
    for (const [id, meta] of [
      [1, 'null'],
      [2, '"x"'],
      [3, '[]'],
    ] as const) {
      const answer = s.next((m) => m.id === id);
      s.send(
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"a"},"_meta":${meta}}}`,
      );
      expect(((await answer) as { error: { code: number; message: string } }).error).toMatchObject({
        code: -32602,
        message: expect.stringContaining('_meta must be an object') as unknown,
      });
    }
    const called = s.next((m) => m.id === 4);
    s.send(
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"b"}}}',
    );
    expect(textOf(((await called) as { result: object }).result)).toBe('b');
  });
});

describe('a modern host’s capabilities, per request', () => {
  it('reach a modern upstream as the request declared them, not the connection’s', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const host = await modernHost({ m: modernServer(['--log', log]) });
    modernResult(
      'tools/call',
      await host.request('tools/call', { name: 'm__echo', arguments: { text: 'a' } }, { capabilities: {} }),
    );
    modernResult(
      'tools/call',
      await host.request(
        'tools/call',
        { name: 'm__echo', arguments: { text: 'b' } },
        { capabilities: { elicitation: {} } },
      ),
    );
    const calls = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { method: string; meta: Record<string, unknown> })
      .filter((r) => r.method === 'tools/call');
    expect(calls.map((c) => c.meta['io.modelcontextprotocol/clientCapabilities'])).toEqual([
      {},
      { elicitation: {} },
    ]);
    expect(calls[0]?.meta['io.modelcontextprotocol/clientInfo']).toMatchObject({ name: 'mcp-warden' });
  });
});

describe('resource updates for a modern host', () => {
  it.each([
    ['a legacy', 'up', fixture(['--resources']), 'fixture://fixture/a'],
    ['a modern', 'm', modernServer(['--resources']), 'modern://modern-fixture/b'],
  ])(
    'from %s upstream come on the subscriptions/listen stream that asked for the URI, tagged with it',
    async (_era, server, entry, uri) => {
      const host = await modernHostAfterListing({ [server]: entry });
      // Declared as the revision says: `resources.subscribe` means resourceSubscriptions work.
      const discovered = modernResult('server/discover', await host.request('server/discover'));
      expect(discovered.capabilities).toMatchObject({ resources: { subscribe: true, listChanged: true } });
      const id = await listen(
        host,
        { resourceSubscriptions: [uri, 'fixture://nowhere/x'] },
        { resourceSubscriptions: [uri] },
      );
      const told = modernResult(
        'tools/call',
        await host.request('tools/call', { name: `${server}__update_resource`, arguments: { uri } }),
      );
      expect(textOf(told)).toBe('notified');
      const updated = await host.waitForNotification((n) => n.method === 'notifications/resources/updated');
      expect(updated.params).toEqual({ uri, _meta: { 'io.modelcontextprotocol/subscriptionId': id } });
    },
  );
});

describe('resource updates and list changes from a modern upstream', () => {
  it('reach a legacy host that subscribed: the gateway opens a subscriptions/listen stream per URI', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { m: modernServer(['--resources', '--log', log]) } },
      dir,
    );
    legacy = await each.connect(config);
    const uri = 'modern://modern-fixture/a';
    const updates: unknown[] = [];
    let told: (() => void) | undefined;
    legacy.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params);
      told?.();
    });
    const { resources } = await legacy.client.listResources();
    expect(resources.map((r) => r.uri)).toContain(uri);
    await legacy.client.subscribeResource({ uri });
    const arrived = new Promise<void>((resolve) => (told = resolve));
    const call = await legacy.client.callTool({ name: 'm__update_resource', arguments: { uri } });
    expect(textOf(call)).toBe('notified');
    await arrived;
    // The upstream's stream id is the gateway's business: the host gets the plain notification.
    expect(updates).toEqual([{ uri }]);
    const streams = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { method: string })
      .filter((r) => r.method === 'subscriptions/listen');
    expect(streams.length).toBeGreaterThanOrEqual(2);
    // Unsubscribing cancels the URI's stream: the server has no one to tell any more.
    await legacy.client.unsubscribeResource({ uri });
    const after = await legacy.client.callTool({ name: 'm__update_resource', arguments: { uri } });
    expect(textOf(after)).toBe('not subscribed');
    expect(updates).toHaveLength(1);
  });

  it('tell a legacy host of tool and resource list changes', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { m: modernServer(['--resources']) } });
    const changed: string[] = [];
    const waiters = new Map<string, () => void>();
    legacy = await each.connect(config, {
      beforeConnect: (client) => {
        for (const schema of [ToolListChangedNotificationSchema, ResourceListChangedNotificationSchema])
          client.setNotificationHandler(schema, (n) => {
            changed.push(n.method);
            waiters.get(n.method)?.();
          });
      },
    });
    const when = (method: string) => new Promise<void>((resolve) => waiters.set(method, resolve));
    await legacy.client.listTools();
    await legacy.client.listResources();
    const tools = when('notifications/tools/list_changed');
    await legacy.client.callTool({ name: 'm__add_tool', arguments: {} });
    await tools;
    expect((await legacy.client.listTools()).tools.map((t) => t.name)).toContain('m__added');
    const listed = when('notifications/resources/list_changed');
    await legacy.client.callTool({ name: 'm__add_resource', arguments: {} });
    await listed;
    expect((await legacy.client.listResources()).resources.map((r) => r.uri)).toContain(
      'modern://modern-fixture/c',
    );
  });
});

const TASK_FIXTURE = path.join(ROOT, 'test/fixtures/task-server.mjs');
const TASKS_EXTENSION = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
/** What a modern host declares to be asked a task's questions: form elicitation and the tasks extension. */
const ASKABLE = { capabilities: { elicitation: { form: {} }, ...TASKS_EXTENSION } };

/**
 * Opens a `subscriptions/listen` stream asking for `notifications`; checks that the gateway
 * acknowledged it (valid 2026-07-28, tagged with the stream) honouring exactly `honoured`.
 */
async function listen(
  host: ModernHost,
  notifications: Json,
  honoured: Json,
  options?: EnvelopeOptions,
): Promise<number> {
  const id = host.send('subscriptions/listen', { notifications }, options);
  const ack = await host.waitForNotification((n) => n.method === 'notifications/subscriptions/acknowledged');
  modernAcknowledgment(ack);
  expect(ack.params).toEqual({
    _meta: { 'io.modelcontextprotocol/subscriptionId': id },
    notifications: honoured,
  });
  return id;
}

/** A modern host's `tasks/update` of the task `handle`, with these answers. */
function taskUpdate(host: ModernHost, handle: unknown, inputResponses: Json) {
  return host.request('tasks/update', { taskId: handle, inputResponses }, ASKABLE);
}

/** The requests modern-server.mjs logged (--log): each one's method, `_meta` and other params. */
function modernLog(log: string) {
  return readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as {
          method: string;
          meta: Record<string, Record<string, unknown>>;
          params: Record<string, unknown>;
        },
    );
}

/** A legacy host's task-augmented call, the SDK's way: what it yields, in order. */
async function legacyTaskCall(client: Client, name: string) {
  const seen: { type: string; task?: Task; result?: CallToolResult; error?: Error }[] = [];
  for await (const message of client.experimental.tasks.callToolStream(
    { name, arguments: { n: 4 } },
    CallToolResultSchema,
    { task: { ttl: 60_000 } },
  ))
    seen.push(message as (typeof seen)[number]);
  return seen;
}

describe('tasks across eras: a 2025-11-25 host, a modern upstream’s tasks extension', () => {
  it('gets a task under a handle, polls it with tasks/get and fetches its result with tasks/result', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { m: modernServer(['--tasks', '--log', log]) } },
      dir,
    );
    // What initialize declares is what the server declared, however slow its start.
    await keepServedListings(config);
    legacy = await each.connect(config, { capabilities: { tasks: { list: {}, cancel: {} } } });
    expect(legacy.client.getServerCapabilities()?.tasks).toMatchObject({
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const seen = await legacyTaskCall(legacy.client, 'm__task_report');
    const created = seen.find((m) => m.type === 'taskCreated')!.task!;
    expect(TaskSchema.safeParse(created).success).toBe(true);
    expect(created.taskId).toMatch(/^[A-Za-z0-9_-]{64,}$/);
    expect(created.ttl).toBe(60000);
    const result = seen.find((m) => m.type === 'result')!.result!;
    expect(textOf(result)).toBe('report 4');
    expect(result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId: created.taskId });
    const polled = await legacy.client.experimental.tasks.getTask(created.taskId);
    expect(GetTaskResultSchema.safeParse(polled).success).toBe(true);
    expect(polled).toMatchObject({ taskId: created.taskId, status: 'completed', pollInterval: 20 });
    // Upstream, the call declared the extension instead of carrying `task`.
    const call = modernLog(log).find((r) => r.method === 'tools/call')!;
    expect(call.meta['io.modelcontextprotocol/clientCapabilities']).toMatchObject(TASKS_EXTENSION);
  });

  it('asks the host what the task needs, answers it with tasks/update, and reports a failure as its error', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { m: modernServer(['--tasks']) } });
    const asked: string[] = [];
    legacy = await each.connect(config, {
      capabilities: { tasks: { list: {}, cancel: {} }, elicitation: { form: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params.message);
          return ANSWERS['elicitation/create'] as never;
        }),
    });
    const seen = await legacyTaskCall(legacy.client, 'm__task_ask');
    expect(textOf(seen.find((m) => m.type === 'result')!.result!)).toBe(
      `task_ask got ${JSON.stringify(ANSWERS['elicitation/create'])}`,
    );
    expect(asked).toEqual(['[m] Your name?']);
    const failed = await legacyTaskCall(legacy.client, 'm__task_fail');
    const handle = failed.find((m) => m.type === 'taskCreated')!.task!.taskId;
    expect(await legacy.client.experimental.tasks.getTask(handle)).toMatchObject({
      status: 'failed',
      statusMessage: 'broke',
    });
    // tasks/result answers a failed task with the error it failed with, as a 2025-11-25 server does.
    const error = await legacy.client.experimental.tasks.getTaskResult(handle, CallToolResultSchema).then(
      () => undefined,
      (e: unknown) => e as { code: number; message: string },
    );
    expect(error).toMatchObject({
      code: -32000,
      message: expect.stringContaining('the task broke') as unknown,
    });
  });
});

describe('tasks across eras: a 2025-11-25 host hears a modern server’s task statuses', () => {
  it('as notifications/tasks/status under the handle, from a stream the gateway opens per task', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { m: modernServer(['--tasks', '--log', log]) } },
      dir,
    );
    const statuses: Task[] = [];
    let done!: () => void;
    const completed = new Promise<void>((resolve) => (done = resolve));
    legacy = await each.connect(config, {
      capabilities: { tasks: { list: {}, cancel: {} }, elicitation: { form: {} } },
      beforeConnect: (client) => {
        client.setRequestHandler(ElicitRequestSchema, () => ANSWERS['elicitation/create'] as never);
        client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
          statuses.push(n.params as Task);
          if (n.params.status === 'completed') done();
        });
      },
    });
    const seen = await legacyTaskCall(legacy.client, 'm__task_ask');
    const handle = seen.find((m) => m.type === 'taskCreated')!.task!.taskId;
    await completed;
    const last = statuses.at(-1)!;
    expect(TaskSchema.safeParse(last).success).toBe(true);
    expect(last).toMatchObject({ taskId: handle, status: 'completed', ttl: 60000 });
    expect(last).not.toHaveProperty('ttlMs');
    expect(last).not.toHaveProperty('result');
    // Upstream: one stream for the task, declaring the extension (besides the list-change one).
    const listens = modernLog(log)
      .filter((r) => r.method === 'subscriptions/listen')
      .map((r) => r.meta['io.modelcontextprotocol/clientCapabilities']!.extensions);
    expect(listens).toEqual([undefined, TASKS_EXTENSION.extensions]);
  });
});

describe('tasks across eras: a 2025-11-25 host reads which tools of a modern tasks server run as tasks', () => {
  it('lists them with execution.taskSupport "optional", so the SDK runs them as tasks unasked', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { m: modernServer(['--tasks']), plain: modernServer(['--name', 'plain']) },
    });
    await keepServedListings(config);
    legacy = await each.connect(config, { capabilities: { tasks: { list: {}, cancel: {} } } });
    const tools = (await legacy.client.listTools()).tools;
    const tool = (name: string) => tools.find((t) => t.name === name);
    // The tasks extension has no per-tool flag: every tool of the server may become a task.
    expect(tool('m__task_report')?.execution).toEqual({ taskSupport: 'optional' });
    expect(tool('m__echo')?.execution).toEqual({ taskSupport: 'optional' });
    // A modern server without the extension runs nothing as a task.
    expect(tool('plain__echo')).not.toHaveProperty('execution');
    expect(legacy.client.getServerCapabilities()?.tasks).toMatchObject({ requests: { tools: { call: {} } } });

    // No `task` option: the SDK adds one because the tool says it may run as a task.
    const seen: { type: string; task?: Task; result?: CallToolResult }[] = [];
    for await (const message of legacy.client.experimental.tasks.callToolStream(
      { name: 'm__task_report', arguments: { n: 5 } },
      CallToolResultSchema,
    ))
      seen.push(message as (typeof seen)[number]);
    const created = seen.find((m) => m.type === 'taskCreated')?.task;
    expect(created?.taskId).toMatch(/^[A-Za-z0-9_-]{64,}$/);
    expect(textOf(seen.find((m) => m.type === 'result')!.result!)).toBe('report 5');
    // A plain call is still answered at once.
    expect(textOf(await legacy.client.callTool({ name: 'm__task_report', arguments: {} }))).toBe(
      'task_report ran at once',
    );
  });

  it('are listed without execution to a host that runs no tasks', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { m: modernServer(['--tasks']) } });
    legacy = await each.connect(config);
    const tool = (await legacy.client.listTools()).tools.find((t) => t.name === 'm__task_report');
    expect(tool).toBeDefined();
    expect(tool).not.toHaveProperty('execution');
  });
});

describe('tasks across eras: a modern host with the tasks extension, a 2025-11-25 upstream’s tasks', () => {
  it('gets a task (resultType "task") under a handle, and polls it with tasks/get until the result is in it', async () => {
    // What server/discover declares is what the server declared, however slow its start.
    const host = await modernHostAfterListing({ t: { command: NODE, args: [TASK_FIXTURE] } });
    const discovered = modernResult('server/discover', await host.request('server/discover'));
    expect(discovered.capabilities).toMatchObject(TASKS_EXTENSION);
    const params = { name: 't__report', arguments: { n: 3 } };
    const created = modernCreatedTask(
      await host.request('tools/call', params, { capabilities: TASKS_EXTENSION }),
    );
    expect(created).toMatchObject({
      resultType: 'task',
      status: 'working',
      ttlMs: 60000,
      pollIntervalMs: 20,
    });
    const handle = created.taskId as string;
    expect(handle).toMatch(/^[A-Za-z0-9_-]{64,}$/);
    let polled: Json;
    do polled = modernTaskState(await host.request('tasks/get', { taskId: handle }));
    while (polled.status === 'working');
    expect(polled).toMatchObject({ taskId: handle, status: 'completed', resultType: 'complete' });
    expect(textOf(polled.result as object)).toBe(JSON.stringify({ total: 6, tool: 'report' }));
    // This revision has no tasks/result or tasks/list; cancelling is acknowledged with nothing.
    modernError(await host.request('tasks/result', { taskId: handle }), -32601);
    expect(
      modernResult('tasks/cancel', await host.request('tasks/cancel', { taskId: handle })),
    ).toMatchObject({
      resultType: 'complete',
    });
    // Without the extension, the same call is answered with its result.
    const plain = modernResult('tools/call', await host.request('tools/call', params));
    expect(plain.resultType).toBe('complete');
  });
});

describe('tasks across eras: a modern host answers the questions of a 2025-11-25 server’s task', () => {
  /** Polls tasks/get until `done` accepts the task (no pause: each poll is one round trip). */
  async function pollUntil(host: ModernHost, handle: string, done: (task: Json) => boolean) {
    for (;;) {
      const task = modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE));
      if (done(task)) return task;
      expect(['working', 'input_required']).toContain(task.status);
    }
  }

  it('shows them in tasks/get, takes the answers with tasks/update, and inlines the result', async () => {
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        servers: { t: { command: NODE, args: [TASK_FIXTURE] } },
      },
      dir,
    );
    const host = (modern = await each.modern(config));
    const created = modernCreatedTask(
      await host.request('tools/call', { name: 't__ask-task', arguments: { questions: 2 } }, ASKABLE),
    );
    const handle = created.taskId as string;

    const asking = await pollUntil(
      host,
      handle,
      (t) => Object.keys((t.inputRequests ?? {}) as Json).length === 2,
    );
    expect(asking.status).toBe('input_required');
    const requests = asking.inputRequests as Record<string, { method: string; params: Json }>;
    const keys = Object.keys(requests);
    expect(Object.values(requests).map((r) => [r.method, r.params.message])).toEqual([
      ['elicitation/create', '[t] Question 1?'],
      ['elicitation/create', '[t] Question 2?'],
    ]);
    // The questions name the task by the handle the host knows, never the server's own id.
    for (const request of Object.values(requests))
      expect((request.params._meta as Json)['io.modelcontextprotocol/related-task']).toEqual({
        taskId: handle,
      });

    // A key no question was asked under is refused, and nothing is answered.
    const wrong = modernError(await taskUpdate(host, handle, { nope: { action: 'decline' } }), -32602);
    expect(wrong.message).toContain('no question of this task was asked under "nope"');
    expect(
      modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE)).inputRequests,
    ).toEqual(requests);

    const answers = keys.map((_, i) => ({ action: 'accept', content: { answer: `answer ${i + 1}` } }));
    modernResult(
      'tasks/update',
      await taskUpdate(host, handle, Object.fromEntries(keys.map((k, i) => [k, answers[i]]))),
    );
    // The same answers again are ignored, as the extension says a repeated update is.
    modernResult('tasks/update', await taskUpdate(host, handle, { [keys[0]!]: answers[0] }));
    const done = await pollUntil(host, handle, (t) => t.status === 'completed');
    expect(JSON.parse(textOf(done.result as CallToolResult))).toEqual(answers);
    // The gateway never sent the modern host a request of its own.
    expect(host.received.filter((m) => 'method' in m && 'id' in m)).toEqual([]);

    // Each question passed the pipeline: the audit trail has it, answered.
    const asked = readAudit(path.join(dir, 'audit.jsonl')).filter(
      (r) => r.type === 'request' && r.method === 'elicitation/create',
    );
    expect(asked.map((r) => [r.direction, r.outcome])).toEqual([
      ['to_host', 'ok'],
      ['to_host', 'ok'],
    ]);
    // The host's updates, which the gateway answers itself, have records of their own: the
    // refused key, the answers, the repeat.
    const updates = readAudit(path.join(dir, 'audit.jsonl')).filter(
      (r) => r.type === 'request' && r.method === 'tasks/update',
    );
    expect(updates.map((r) => [r.direction, r.server, r.outcome, r.hostEra, r.upstreamEra])).toEqual([
      ['to_upstream', 't', 'protocol_error', 'modern', 'legacy'],
      ['to_upstream', 't', 'ok', 'modern', 'legacy'],
      ['to_upstream', 't', 'ok', 'modern', 'legacy'],
    ]);
  });

  it('pushes the task, result inlined, to a subscriptions/listen stream that names it', async () => {
    const host = await modernHost({ t: { command: NODE, args: [TASK_FIXTURE] } });
    const created = modernCreatedTask(
      await host.request('tools/call', { name: 't__ask-task', arguments: { questions: 1 } }, ASKABLE),
    );
    const handle = created.taskId as string;
    // Without the tasks extension, asking for task statuses is refused as the extension says.
    const refused = modernError(
      await host.request('subscriptions/listen', { notifications: { taskIds: [handle] } }),
      -32021,
    );
    expect(refused.data).toEqual({
      requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    });
    const id = await listen(host, { taskIds: [handle, 'not-a-handle'] }, { taskIds: [handle] }, ASKABLE);
    const asking = await pollUntil(
      host,
      handle,
      (t) => Object.keys((t.inputRequests ?? {}) as Json).length > 0,
    );
    const [key] = Object.keys(asking.inputRequests as Json);
    const answer = { action: 'accept', content: { answer: 'pushed' } };
    modernResult('tasks/update', await taskUpdate(host, handle, { [key!]: answer }));
    const pushed = await host.waitForNotification(
      (n) => n.method === 'notifications/tasks' && (n.params as Json).status === 'completed',
    );
    const task = pushed.params as Json;
    expect(task).toMatchObject({
      taskId: handle,
      ttlMs: 60000,
      _meta: { 'io.modelcontextprotocol/subscriptionId': id },
    });
    expect(task).not.toHaveProperty('ttl');
    expect(task).not.toHaveProperty('resultType');
    expect(JSON.parse(textOf(task.result as CallToolResult))).toEqual([answer]);
  });

  it('works with a real 2025-11-25 server: server-everything’s research task asks, and is answered', async () => {
    const host = await modernHost({ everything: { command: NODE, args: [serverBin('everything')] } });
    const created = modernCreatedTask(
      await host.request(
        'tools/call',
        { name: 'everything__simulate-research-query', arguments: { topic: 'tides', ambiguous: true } },
        ASKABLE,
      ),
    );
    const handle = created.taskId as string;
    // The server pushes its statuses: the host listens instead of polling.
    host.send('subscriptions/listen', { notifications: { taskIds: [handle] } }, ASKABLE);
    const pushed = (status: string, also: (task: Json) => boolean = () => true) =>
      host.waitForNotification((n) => {
        const task = n.params as Json;
        return n.method === 'notifications/tasks' && task.status === status && also(task);
      });
    const asking = (await pushed('input_required', (t) => Object.keys(t.inputRequests as Json).length > 0))
      .params as Json;
    const [key, request] = Object.entries(asking.inputRequests as Record<string, { params: Json }>)[0]!;
    expect(request.params.message).toContain('[everything] The research query "tides"');
    modernResult(
      'tasks/update',
      await taskUpdate(host, handle, {
        [key]: { action: 'accept', content: { interpretation: 'historical' } },
      }),
    );
    const done = (await pushed('completed')).params as Json;
    expect(textOf(done.result as CallToolResult)).toContain('# Research Report: tides (historical)');
  });

  it('refuses tasks/update for a task with no open question', async () => {
    const host = await modernHost({ t: { command: NODE, args: [TASK_FIXTURE] } });
    const created = modernCreatedTask(
      await host.request('tools/call', { name: 't__report', arguments: {} }, ASKABLE),
    );
    const error = modernError(
      await taskUpdate(host, created.taskId, { t1: { action: 'accept', content: {} } }),
      -32602,
    );
    expect(error.message).toContain('it has no open question');
  });
});

describe('tasks of a modern upstream for a modern host', () => {
  /** Calls `tool` as a task; its handle. */
  async function createTask(host: ModernHost, tool: string, args: Json = {}): Promise<string> {
    const created = modernCreatedTask(
      await host.request('tools/call', { name: tool, arguments: args }, ASKABLE),
    );
    expect(created.taskId).not.toBe('mtask-1');
    return created.taskId as string;
  }

  /** Polls tasks/get while the task is working. */
  async function pollPastWorking(host: ModernHost, handle: string): Promise<Json> {
    let polled: Json;
    do polled = modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE));
    while (polled.status === 'working');
    return polled;
  }

  type Asked = Record<string, { method: string; params: Json }>;

  it('asks the task’s questions itself: labelled, audited, under its own keys, relayed under the server’s', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const audit = path.join(dir, 'audit.jsonl');
    const host = await modernHost({ m: modernServer(['--tasks', '--log', log]) }, { audit: { file: audit } });
    const handle = await createTask(host, 'm__task_ask');
    const asking = await pollPastWorking(host, handle);
    expect(asking).toMatchObject({ taskId: handle, status: 'input_required' });
    const requests = asking.inputRequests as Asked;
    const [key, request] = Object.entries(requests)[0]!;
    expect(Object.keys(requests)).toHaveLength(1);
    // The gateway's own key, not the server's; the question names its server and the handle.
    expect(key).not.toBe('who');
    expect(request.method).toBe('elicitation/create');
    expect(request.params.message).toBe('[m] Your name?');
    expect((request.params._meta as Json)['io.modelcontextprotocol/related-task']).toEqual({
      taskId: handle,
    });
    // Polling again shows the same question under the same key: it is asked once.
    expect((await pollPastWorking(host, handle)).inputRequests).toEqual(requests);

    // The server's own key was never shown to the host: presenting it is refused, nothing is sent.
    const forged = modernError(await taskUpdate(host, handle, { who: { action: 'decline' } }), -32602);
    expect(forged.message).toContain('no question of this task was asked under "who"');
    expect(modernLog(log).filter((r) => r.method === 'tasks/update')).toEqual([]);

    const answer = ANSWERS['elicitation/create']!;
    modernResult('tasks/update', await taskUpdate(host, handle, { [key]: answer }));
    // Upstream, the answer went under the server's key.
    expect(
      modernLog(log)
        .filter((r) => r.method === 'tasks/update')
        .map((r) => r.params),
    ).toEqual([{ taskId: 'mtask-1', inputResponses: { who: answer } }]);
    const done = modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE));
    expect(done.status).toBe('completed');
    expect(textOf(done.result as CallToolResult)).toBe(`task_ask got ${JSON.stringify(answer)}`);
    // The gateway never sent the modern host a request of its own.
    expect(host.received.filter((m) => 'method' in m && 'id' in m)).toEqual([]);

    const records = readAudit(audit);
    expect(records.filter((r) => r.type === 'request' && r.method === 'elicitation/create')).toEqual([
      expect.objectContaining({
        type: 'request',
        direction: 'to_host',
        server: 'm',
        outcome: 'ok',
        hostEra: 'modern',
        upstreamEra: 'modern',
      }),
    ]);
    // Each of the host's updates has its record: the refused one, and the one sent on.
    expect(
      records
        .filter((r) => r.type === 'request' && r.method === 'tasks/update')
        .map((r) => [r.direction, r.server, r.outcome, r.args]),
    ).toEqual([
      [
        'to_upstream',
        'm',
        'protocol_error',
        { taskId: 'mtask-1', inputResponses: { who: { action: 'decline' } } },
      ],
      ['to_upstream', 'm', 'ok', { taskId: 'mtask-1', inputResponses: { who: answer } }],
    ]);
  });

  it('a question policy denies never reaches the host: the task is cancelled upstream and fails with the denial', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'default: allow\nrules:\n  - id: no-questions\n    match: { kind: elicitation }\n    action: deny\n    reason: Servers do not question users here.\n',
    );
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: ['./policy.yaml'],
        audit: { file: './audit.jsonl' },
        servers: { m: modernServer(['--tasks', '--log', log]) },
      },
      dir,
    );
    const host = (modern = await each.modern(config));
    const handle = await createTask(host, 'm__task_ask');
    const failed = await pollPastWorking(host, handle);
    expect(failed).toMatchObject({ taskId: handle, status: 'failed' });
    expect(failed).not.toHaveProperty('inputRequests');
    expect((failed.error as Json).message).toContain('Servers do not question users here.');
    // The server's task was cancelled; later polls still say why it ended.
    expect(modernLog(log).map((r) => r.method)).toContain('tasks/cancel');
    expect(modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE))).toMatchObject({
      status: 'failed',
      error: failed.error,
    });
    const asked = readAudit(path.join(dir, 'audit.jsonl')).filter(
      (r) => r.type === 'request' && r.method === 'elicitation/create',
    );
    expect(asked).toEqual([
      expect.objectContaining({
        direction: 'to_host',
        server: 'm',
        outcome: 'denied',
        decision: { effect: 'deny', rule: 'no-questions' },
      }),
    ]);
  });

  it('relays the task’s statuses to a subscriptions/listen stream that names it, questions the gateway’s', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const host = await modernHost({ m: modernServer(['--tasks', '--log', log]) });
    // The server's task asks once a stream names it, so the stream sees the question.
    const handle = await createTask(host, 'm__task_ask', { whenWatched: true });
    const id = await listen(host, { taskIds: [handle] }, { taskIds: [handle] }, ASKABLE);
    // Upstream, one stream names the server's own id.
    const listened = modernLog(log).filter(
      (r) => r.method === 'subscriptions/listen' && 'taskIds' in (r.params.notifications as Json),
    );
    expect(listened.map((r) => r.params)).toEqual([{ notifications: { taskIds: ['mtask-1'] } }]);
    const pushed = (status: string) =>
      host.waitForNotification(
        (n) => n.method === 'notifications/tasks' && (n.params as Json).status === status,
      );
    const asking = (await pushed('input_required')).params as Json;
    expect(asking).toMatchObject({ taskId: handle, _meta: { 'io.modelcontextprotocol/subscriptionId': id } });
    const [key, request] = Object.entries(asking.inputRequests as Asked)[0]!;
    expect(key).not.toBe('who');
    expect(request.params.message).toBe('[m] Your name?');
    const answer = { action: 'accept', content: { name: 'pushed' } };
    modernResult('tasks/update', await taskUpdate(host, handle, { [key]: answer }));
    const done = (await pushed('completed')).params as Json;
    expect(done.taskId).toBe(handle);
    expect(textOf(done.result as CallToolResult)).toBe(`task_ask got ${JSON.stringify(answer)}`);
  });
});

describe('a question a modern server’s task no longer lists', () => {
  const WHO = ANSWERS['elicitation/create']!;

  /**
   * A modern host in front of the modern fixture (its requests logged to `log`, audited to
   * `audit`), with a task of `tool` polled until it asks: the host, the task's handle, its questions.
   */
  async function askingTask(tool: string) {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const audit = path.join(dir, 'audit.jsonl');
    const host = await modernHost({ m: modernServer(['--tasks', '--log', log]) }, { audit: { file: audit } });
    const handle = modernCreatedTask(await host.request('tools/call', { name: tool, arguments: {} }, ASKABLE))
      .taskId as string;
    let asking: Json;
    do asking = modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE));
    while (asking.status === 'working');
    return { host, handle, log, audit, shown: asking.inputRequests as Record<string, { params: Json }> };
  }

  it('is withdrawn from a modern host: gone from tasks/get, cancelled in the audit, its late answer ignored', async () => {
    const { host, handle, log, audit, shown } = await askingTask('m__task_ask_two');
    const keyOf = (message: string) => Object.keys(shown).find((k) => shown[k]!.params.message === message)!;
    const [who, where] = [keyOf('[m] Your name?'), keyOf('[m] Where?')];
    expect(who).toBeDefined();
    expect(where).toBeDefined();

    // The server gets its place some other way and stops listing the question.
    await host.request('tools/call', { name: 'm__withdraw_question', arguments: { key: 'where' } }, ASKABLE);
    const after = modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE));
    expect(after.status).toBe('input_required');
    expect(Object.keys(after.inputRequests as Json)).toEqual([who]);

    // A host that answers it anyway is acknowledged, and nothing goes upstream.
    modernResult('tasks/update', await taskUpdate(host, handle, { [where]: { action: 'decline' } }));
    expect(modernLog(log).filter((r) => r.method === 'tasks/update')).toEqual([]);
    modernResult('tasks/update', await taskUpdate(host, handle, { [who]: WHO }));
    const done = modernTaskState(await host.request('tasks/get', { taskId: handle }, ASKABLE));
    expect(done.status).toBe('completed');
    expect(textOf(done.result as CallToolResult)).toBe(`task_ask_two got ${JSON.stringify({ who: WHO })}`);
    expect(
      modernLog(log)
        .filter((r) => r.method === 'tasks/update')
        .map((r) => r.params.inputResponses),
    ).toEqual([{ who: WHO }]);

    const asked = readAudit(audit).filter((r) => r.type === 'request' && r.method === 'elicitation/create');
    expect(asked.map((r) => [r.args && (r.args as Json).message, r.outcome])).toEqual(
      expect.arrayContaining([
        ['Your name?', 'ok'],
        ['Where?', 'cancelled'],
      ]),
    );
    expect(asked.find((r) => r.outcome === 'cancelled')!.error).toContain('no longer asks this question');
  });

  it('is withdrawn from a modern host when the server no longer knows the task (it restarted)', async () => {
    const { host, handle, log, audit, shown } = await askingTask('m__task_ask');
    const [key] = Object.keys(shown);
    await host.request('tools/call', { name: 'm__forget_tasks', arguments: {} }, ASKABLE);
    const gone = modernError(await host.request('tasks/get', { taskId: handle }, ASKABLE), -32602);
    expect(gone.message).toContain('Unknown task');
    // The question went with the task: a late answer is acknowledged and goes nowhere.
    modernResult('tasks/update', await taskUpdate(host, handle, { [key!]: WHO }));
    expect(modernLog(log).filter((r) => r.method === 'tasks/update')).toEqual([]);
    const asked = readAudit(audit).filter((r) => r.type === 'request' && r.method === 'elicitation/create');
    expect(asked.map((r) => r.outcome)).toEqual(['cancelled']);
  });

  it('is withdrawn from a 2025-11-25 host with notifications/cancelled, and its answer is not sent', async () => {
    const dir = tempDir();
    const log = path.join(dir, 'modern.jsonl');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { m: modernServer(['--tasks', '--log', log]) } },
      dir,
    );
    const asked: string[] = [];
    let withdrawn: string | undefined;
    legacy = await each.connect(config, {
      capabilities: { tasks: { list: {}, cancel: {} }, elicitation: { form: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
          asked.push(request.params.message);
          if (request.params.message !== '[m] Where?') return WHO as never;
          // While the host is asked, the server gets its answer another way.
          const aborted = new Promise<void>((resolve) =>
            extra.signal.addEventListener('abort', () => resolve()),
          );
          await client.callTool({ name: 'm__withdraw_question', arguments: { key: 'where' } });
          await aborted;
          withdrawn = String(extra.signal.reason);
          return { action: 'accept', content: { place: 'too late' } } as never;
        }),
    });
    const seen = await legacyTaskCall(legacy.client, 'm__task_ask_two');
    expect(asked).toEqual(['[m] Your name?', '[m] Where?']);
    expect(withdrawn).toBeDefined();
    expect(textOf(seen.find((m) => m.type === 'result')!.result!)).toBe(
      `task_ask_two got ${JSON.stringify({ who: WHO })}`,
    );
    expect(
      modernLog(log)
        .filter((r) => r.method === 'tasks/update')
        .map((r) => r.params.inputResponses),
    ).toEqual([{ who: WHO }]);
  });
});

describe('a modern-only Streamable HTTP upstream', () => {
  /** Runs `test` with a legacy host connected to the gateway in front of the modern HTTP fixture. */
  async function withHttpUpstream(
    test: (
      server: Awaited<ReturnType<typeof startModernHttpFixture>>,
      host: HostSession,
      config: string,
    ) => Promise<void>,
  ): Promise<void> {
    const server = await startModernHttpFixture();
    try {
      const config = writeConfig({
        gateway: FAST_GATEWAY,
        servers: { h: { url: `http://127.0.0.1:${server.port}/mcp` } },
      });
      legacy = await each.connect(config);
      await test(server, legacy, config);
    } finally {
      await legacy?.close();
      await server.close();
    }
  }

  it('mirrors x-mcp-header arguments into Mcp-Param-* headers, and leaves out a tool that breaks the rules', () =>
    withHttpUpstream(async (server, host) => {
      const names = (await host.client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['h__echo', 'h__query']));
      // A number property may not be mirrored: over HTTP the tool is left out, and the log says why.
      expect(names).not.toContain('h__broken');
      await host.waitForStderr(/left out tool "broken": .*only string, integer and boolean/);

      // The fixture refuses a call whose headers are missing or disagree with the arguments.
      const call = (args: Record<string, unknown>) =>
        host.client.callTool({ name: 'h__query', arguments: args });
      const plain = await call({ region: 'us-west1', options: { limit: 5 }, sql: 'select 1' });
      expect(textOf(plain)).toBe('query in us-west1 (limit 5): select 1');
      expect(server.seen.at(-1)?.mcpParams).toEqual({
        'mcp-param-region': 'us-west1',
        'mcp-param-limit': '5',
      });
      // A value that is not plain ASCII travels Base64-encoded; an absent one sends no header.
      const encoded = await call({ region: 'Zürich', sql: 'select 2' });
      expect(textOf(encoded)).toBe('query in Zürich (limit undefined): select 2');
      expect(server.seen.at(-1)?.mcpParams).toEqual({
        'mcp-param-region': `=?base64?${Buffer.from('Zürich').toString('base64')}?=`,
      });
    }));
});
