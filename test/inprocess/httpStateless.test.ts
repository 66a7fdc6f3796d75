/**
 * The stateless revision (2026-07-28) on the HTTP listener, served in-process
 * (test/inprocess/served.ts: the same `startServing` as `mcp-warden --config FILE --http`): a
 * POST with the per-request envelope and no session is answered at once, as stdio answers a
 * modern host, and the `Mcp-Method` / `Mcp-Name` headers must agree with the body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, MODERN, type RpcAnswer } from '../fixtures/modernHost.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  FAST_GATEWAY,
  fixture,
  NODE,
  readAudit,
  ROOT,
  tempDir,
  writeConfig,
} from '../integration/harness.js';
import { postRpc } from '../integration/httpHarness.js';
import { type ServedHttp } from './served.js';
import { modernAcknowledgment, modernResult } from '../integration/modernWire.js';
import { startModernHttpFixture } from '../fixtures/modern-http-server.mjs';
import { servedPerTest } from './perTest.js';

type Json = Record<string, unknown>;

const messageOf = (text: string) => (JSON.parse(text) as { error: { message: string } }).error.message;

/** The JSON-RPC messages of a complete SSE body, in order. */
function sseMessages(text: string): Json[] {
  return text
    .split('\n\n')
    .map((event) =>
      event
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n'),
    )
    .filter((data) => data !== '')
    .map((data) => JSON.parse(data) as Json);
}

/** Reads an open SSE body message by message. */
function sseReader(body: ReadableStream<Uint8Array>): { next(): Promise<Json> } {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  const ready: Json[] = [];
  return {
    async next() {
      while (ready.length === 0) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended; unread: ${buffered}`);
        buffered += decoder.decode(value, { stream: true });
        const cut = buffered.lastIndexOf('\n\n');
        if (cut === -1) continue;
        ready.push(...sseMessages(buffered.slice(0, cut + 2)));
        buffered = buffered.slice(cut + 2);
      }
      return ready.shift()!;
    },
  };
}

const textOf = (result: Json) => (result.content as { text: string }[])[0]!.text;

describe('stateless requests on the HTTP listener', () => {
  let gateway: ServedHttp;
  const audit = path.join(tempDir(), 'audit.jsonl');
  const headers = (method: string, name?: string): Record<string, string> => ({
    'Mcp-Protocol-Version': MODERN,
    'Mcp-Method': method,
    ...(name !== undefined && { 'Mcp-Name': name }),
  });

  beforeAll(async () => {
    gateway = await shared.http(
      writeConfig({
        gateway: FAST_GATEWAY,
        audit: { file: audit },
        servers: { up: fixture(['--resources']) },
      }),
    );
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('answers tools/list, tools/call and server/discover without a session', async () => {
    const list = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } },
      headers('tools/list'),
    );
    expect(list.status).toBe(200);
    expect(list.headers.get('mcp-session-id')).toBeNull();
    const tools = (JSON.parse(list.text) as { result: { tools: { name: string }[] } }).result.tools;
    expect(tools.map((t) => t.name)).toContain('up__echo');

    const call = await postRpc(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'up__echo', arguments: { text: 'hi' }, _meta: envelope() },
      },
      headers('tools/call', 'up__echo'),
    );
    expect(call.status).toBe(200);
    const result = (JSON.parse(call.text) as { id: number; result: { content: { text: string }[] } }).result;
    expect(result.content[0]!.text).toBe('hi');

    const discover = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: envelope() } },
      headers('server/discover'),
    );
    expect(discover.status).toBe(200);
    expect((JSON.parse(discover.text) as { result: Json }).result).toMatchObject({
      supportedVersions: expect.arrayContaining([MODERN]) as unknown,
    });
  });

  it('refuses a Mcp-Method or Mcp-Name header that disagrees with the body with 400', async () => {
    const call = {
      jsonrpc: '2.0',
      id: 4,
      method: 'tools/call',
      params: { name: 'up__echo', arguments: { text: 'hi' }, _meta: envelope() },
    };
    const wrongMethod = await postRpc(gateway.url, call, headers('tools/list'));
    expect(wrongMethod.status).toBe(400);
    expect(messageOf(wrongMethod.text)).toContain('Mcp-Method header says "tools/list"');
    const wrongName = await postRpc(gateway.url, call, headers('tools/call', 'up__other'));
    expect(wrongName.status).toBe(400);
    expect(messageOf(wrongName.text)).toContain('Mcp-Name header says "up__other"');
    // The revision's HeaderMismatch code, and the request's id, so the client knows which failed.
    expect(JSON.parse(wrongName.text)).toMatchObject({ id: 4, error: { code: -32020 } });
  });

  it('refuses missing mirrored headers and a protocol version header that disagrees with the envelope', async () => {
    const call = {
      jsonrpc: '2.0',
      id: 5,
      method: 'tools/call',
      params: { name: 'up__echo', arguments: { text: 'hi' }, _meta: envelope() },
    };
    const { 'Mcp-Method': _method, ...noMethod } = headers('tools/call', 'up__echo');
    const { 'Mcp-Name': _name, ...noName } = headers('tools/call', 'up__echo');
    const { 'Mcp-Protocol-Version': _version, ...noVersion } = headers('tools/call', 'up__echo');
    for (const [sent, says] of [
      [noMethod, 'Mcp-Method header is missing'],
      [noName, 'Mcp-Name header is missing'],
      [noVersion, 'MCP-Protocol-Version header is missing'],
      [
        { ...headers('tools/call', 'up__echo'), 'Mcp-Protocol-Version': '2025-11-25' },
        'MCP-Protocol-Version header says',
      ],
    ] as const) {
      const answer = await postRpc(gateway.url, call, sent);
      expect(answer.status, says).toBe(400);
      expect(JSON.parse(answer.text), says).toMatchObject({ error: { code: -32020 } });
      expect(messageOf(answer.text)).toContain(says);
    }
    expect(readAudit(audit).filter((r) => r.type === 'call' && (r.args as Json).text === 'hi')).toHaveLength(
      1,
    );
  });

  it('takes a Base64-encoded Mcp-Name, as the revision carries names that are not plain ASCII', async () => {
    const name = 'up__echo';
    const encoded = `=?base64?${Buffer.from(name).toString('base64')}?=`;
    const call = {
      jsonrpc: '2.0',
      id: 6,
      method: 'tools/call',
      params: { name, arguments: { text: 'encoded' }, _meta: envelope() },
    };
    const answer = await postRpc(gateway.url, call, { ...headers('tools/call'), 'Mcp-Name': encoded });
    expect(answer.status).toBe(200);
    const other = `=?base64?${Buffer.from('up__other').toString('base64')}?=`;
    const refused = await postRpc(gateway.url, call, { ...headers('tools/call'), 'Mcp-Name': other });
    expect(refused.status).toBe(400);
    expect(messageOf(refused.text)).toContain('Mcp-Name header says "up__other"');
  });

  it('answers an unknown method with 404 and an unserved version with 400, each with its JSON-RPC error', async () => {
    const unknown = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 7, method: 'no/such', params: { _meta: envelope() } },
      headers('no/such'),
    );
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text)).toMatchObject({ id: 7, error: { code: -32601 } });
    const version = '2099-01-01';
    const future = await postRpc(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: 8,
        method: 'tools/list',
        params: { _meta: envelope({ protocolVersion: version }) },
      },
      { ...headers('tools/list'), 'Mcp-Protocol-Version': version },
    );
    expect(future.status).toBe(400);
    expect(JSON.parse(future.text)).toMatchObject({ id: 8, error: { code: -32022 } });
    // The versions the error lists are those server/discover lists.
    const discover = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope() } },
      headers('server/discover'),
    );
    const { supportedVersions } = (JSON.parse(discover.text) as { result: { supportedVersions: string[] } })
      .result;
    const error = (JSON.parse(future.text) as { error: { data: { supported: string[] }; message: string } })
      .error;
    expect(error.data.supported).toEqual(supportedVersions);
    expect(error.message).toContain(`mcp-warden serves ${supportedVersions.join(', ')} per request`);
  });

  it('answers a malformed envelope with 400, an enveloped initialize with its id and what to send instead', async () => {
    const malformed = await postRpc(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/list',
        params: { _meta: { ...envelope(), 'io.modelcontextprotocol/clientCapabilities': 'none' } },
      },
      headers('tools/list'),
    );
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.text)).toMatchObject({
      id: 9,
      error: { code: -32602, message: expect.stringContaining('Invalid request envelope on tools/list') },
    });
    const init = await postRpc(
      gateway.url,
      { jsonrpc: '2.0', id: 5, method: 'initialize', params: { _meta: envelope() } },
      headers('initialize'),
    );
    expect(init.status).toBe(400);
    expect(JSON.parse(init.text)).toMatchObject({ id: 5, error: { code: -32022 } });
    expect(messageOf(init.text)).toMatch(/sends server\/discover instead/);
    expect(messageOf(init.text)).toMatch(/with initialize \(without the per-request envelope/);
  });

  it("streams a call's progress as SSE before its answer, and sends plain JSON to a client that takes only JSON", async () => {
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: {
        name: 'up__progress',
        arguments: { steps: 3 },
        _meta: { ...envelope(), progressToken: `p${id}` },
      },
    });
    const streamed = await postRpc(gateway.url, call(20), headers('tools/call', 'up__progress'));
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toBe('text/event-stream');
    expect(streamed.headers.get('x-accel-buffering')).toBe('no');
    const events = sseMessages(streamed.text);
    expect(events.map((e) => e.method ?? `answer ${String(e.id)}`)).toEqual([
      'notifications/progress',
      'notifications/progress',
      'notifications/progress',
      'answer 20',
    ]);
    expect(events.slice(0, 3).map((e) => (e.params as Json).progress)).toEqual([1, 2, 3]);
    expect(textOf(modernResult('tools/call', events[3] as unknown as RpcAnswer))).toBe('done');

    const plain = await postRpc(gateway.url, call(21), {
      ...headers('tools/call', 'up__progress'),
      Accept: 'application/json',
    });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('application/json');
    expect(textOf((JSON.parse(plain.text) as { result: Json }).result)).toBe('done');
  });

  it('cancels a call upstream when its client closes the response stream', async () => {
    const abort = new AbortController();
    const response = await fetch(gateway.url, {
      method: 'POST',
      signal: abort.signal,
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...headers('tools/call', 'up__sleep'),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 25,
        method: 'tools/call',
        params: {
          name: 'up__sleep',
          arguments: { ms: 60_000 },
          _meta: { ...envelope(), progressToken: 'slow' },
        },
      }),
    });
    const first = await sseReader(response.body!).next();
    expect(first.method).toBe('notifications/progress');
    abort.abort();
    // The call ends as cancelled long before its minute is up, and the trail says so.
    await expect
      .poll(() => readAudit(audit).find((r) => r.type === 'call' && r.tool === 'up__sleep'), {
        timeout: 20_000,
      })
      .toMatchObject({ outcome: 'cancelled' });
  });

  it('keeps a subscriptions/listen stream open and delivers the resource updates it asked for', async () => {
    const uri = 'fixture://fixture/a';
    const abort = new AbortController();
    const response = await fetch(gateway.url, {
      method: 'POST',
      signal: abort.signal,
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...headers('subscriptions/listen'),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 30,
        method: 'subscriptions/listen',
        params: { notifications: { resourceSubscriptions: [uri] }, _meta: envelope() },
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const stream = sseReader(response.body!);
    const ack = await stream.next();
    modernAcknowledgment(ack);
    expect(ack.params).toEqual({
      _meta: { 'io.modelcontextprotocol/subscriptionId': 30 },
      notifications: { resourceSubscriptions: [uri] },
    });
    // Another request, on another POST, makes the server change the resource.
    const told = await postRpc(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: 31,
        method: 'tools/call',
        params: { name: 'up__update_resource', arguments: { uri }, _meta: envelope() },
      },
      headers('tools/call', 'up__update_resource'),
    );
    expect(textOf((JSON.parse(told.text) as { result: Json }).result)).toBe('notified');
    const updated = await stream.next();
    expect(updated).toMatchObject({
      method: 'notifications/resources/updated',
      params: { uri, _meta: { 'io.modelcontextprotocol/subscriptionId': 30 } },
    });
    // Closing the stream is the revision's cancellation: the gateway lets go of the subscription.
    abort.abort();
    // Nothing announces the upstream's unsubscribe, so ask the server until it no longer holds one.
    let answer = 'notified';
    for (let i = 0; i < 100 && answer !== 'not subscribed'; i++) {
      const again = await postRpc(
        gateway.url,
        {
          jsonrpc: '2.0',
          id: 40 + i,
          method: 'tools/call',
          params: { name: 'up__update_resource', arguments: { uri }, _meta: envelope() },
        },
        headers('tools/call', 'up__update_resource'),
      );
      answer = textOf((JSON.parse(again.text) as { result: Json }).result);
    }
    expect(answer).toBe('not subscribed');
  });

  it('writes each call to the audit trail before its answer leaves', async () => {
    // Each check reads the file the moment the answer arrives: a record written after the
    // answer (at the end of the turn) would be missing for some of them.
    for (let i = 0; i < 10; i++) {
      const answer = await postRpc(
        gateway.url,
        {
          jsonrpc: '2.0',
          id: 10 + i,
          method: 'tools/call',
          params: { name: 'up__echo', arguments: { text: `n${i}` }, _meta: envelope() },
        },
        headers('tools/call', 'up__echo'),
      );
      expect(answer.status).toBe(200);
      const calls = readAudit(audit).filter((r) => r.type === 'call' && (r.args as Json).text === `n${i}`);
      expect(calls).toHaveLength(1);
    }
  });
});

describe('a stateless call that needs the host’s answer (MRTR over HTTP)', () => {
  let gateway: ServedHttp;
  const dir = tempDir();
  const audit = path.join(dir, 'audit.jsonl');
  const headers = { 'Mcp-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'up__echo' };
  const call = (id: number, extra: Json = {}) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'up__echo', arguments: { text: 'approved' }, _meta: envelope(), ...extra },
  });
  const answerOf = (text: string) => JSON.parse(text) as RpcAnswer;

  beforeAll(async () => {
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n',
    );
    gateway = await shared.http(
      writeConfig(
        {
          gateway: FAST_GATEWAY,
          policies: ['policy.yaml'],
          audit: { file: audit },
          servers: { up: fixture() },
        },
        dir,
      ),
    );
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('asks on one POST, runs the call once on the retry POST, and refuses the state a second time', async () => {
    const first = answerOf((await postRpc(gateway.url, call(1), headers)).text);
    const asked = modernResult('tools/call', first);
    expect(asked).toMatchObject({ resultType: 'input_required' });
    const [key, question] = Object.entries(asked.inputRequests as Record<string, Json>)[0]!;
    expect(question.method).toBe('elicitation/create');
    expect(String((question.params as Json).message)).toContain('Echo needs a human.');
    const requestState = asked.requestState as string;
    // Nothing ran yet: the call waits for the human.
    expect(readAudit(audit).filter((r) => r.type === 'call')).toHaveLength(0);

    const inputResponses = { [key]: { action: 'accept', content: {} } };
    const retry = call(2, { inputResponses, requestState });
    const final = answerOf((await postRpc(gateway.url, retry, headers)).text);
    expect(textOf(modernResult('tools/call', final))).toBe('approved');
    const calls = readAudit(audit).filter((r) => r.type === 'call');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ outcome: 'ok' });

    const replay = await postRpc(gateway.url, call(3, { inputResponses, requestState }), headers);
    expect(replay.status).toBe(200);
    const refused = answerOf(replay.text).error!;
    expect(refused.code).toBe(-32602);
    expect(refused.message).toContain('requestState refused');
    expect(readAudit(audit).filter((r) => r.type === 'call')).toHaveLength(1);
  });

  it('a declined answer on the retry does not run the call', async () => {
    const asked = modernResult('tools/call', answerOf((await postRpc(gateway.url, call(10), headers)).text));
    const [key] = Object.keys(asked.inputRequests as Json);
    const retry = call(11, {
      inputResponses: { [key!]: { action: 'decline' } },
      requestState: asked.requestState,
    });
    const final = modernResult('tools/call', answerOf((await postRpc(gateway.url, retry, headers)).text));
    expect(final.isError).toBe(true);
    expect(textOf(final)).toContain('Declined by the user');
  });
});

describe('arguments mirrored into Mcp-Param-* headers', () => {
  let gateway: ServedHttp;
  let upstream: Awaited<ReturnType<typeof startModernHttpFixture>>;
  const call = (id: number, args: Json) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'h__query', arguments: args, _meta: envelope() },
  });
  const headers = (params: Record<string, string>): Record<string, string> => ({
    'Mcp-Protocol-Version': MODERN,
    'Mcp-Method': 'tools/call',
    'Mcp-Name': 'h__query',
    ...params,
  });
  const upstreamCalls = () => upstream.seen.filter((r) => r.method === 'tools/call').length;

  beforeAll(async () => {
    // The gateway serves the modern server's `query` tool as it was defined: its `region` and
    // `options.limit` arguments are marked for mirroring, so hosts send them as headers too.
    upstream = await startModernHttpFixture();
    gateway = await shared.http(
      writeConfig({
        gateway: FAST_GATEWAY,
        servers: { h: { url: `http://127.0.0.1:${upstream.port}/mcp` } },
      }),
    );
  });
  afterAll(async () => {
    await upstream.close();
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('serves a call whose headers match its arguments, integers compared as numbers', async () => {
    const answer = await postRpc(
      gateway.url,
      call(1, { region: 'eu-1', options: { limit: 7 }, sql: 'select 1' }),
      headers({ 'Mcp-Param-Region': 'eu-1', 'Mcp-Param-Limit': '7.0' }),
    );
    expect(answer.status).toBe(200);
    expect(textOf(modernResult('tools/call', JSON.parse(answer.text) as RpcAnswer))).toBe(
      'query in eu-1 (limit 7): select 1',
    );
  });

  it('refuses a missing, different or unexpected header with 400 and HeaderMismatch, running nothing', async () => {
    const before = upstreamCalls();
    const cases: Array<[Json, Record<string, string>, RegExp]> = [
      [{ region: 'eu-1', sql: 's' }, {}, /Mcp-Param-Region header is missing/],
      [{ region: 'eu-1', sql: 's' }, { 'Mcp-Param-Region': 'us-2' }, /Mcp-Param-Region header says "us-2"/],
      [{ sql: 's' }, { 'Mcp-Param-Region': 'eu-1' }, /body has no arguments\.region/],
      [
        { region: 'eu-1', options: { limit: 3 }, sql: 's' },
        { 'Mcp-Param-Region': 'eu-1', 'Mcp-Param-Limit': '4' },
        /Mcp-Param-Limit header says "4"/,
      ],
      [
        { region: 'Zürich', sql: 's' },
        { 'Mcp-Param-Region': '=?base64?abcde?=' },
        /Mcp-Param-Region header's Base64 value cannot be decoded/,
      ],
    ];
    let id = 10;
    for (const [args, params, why] of cases) {
      const answer = await postRpc(gateway.url, call(id++, args), headers(params));
      expect(answer.status).toBe(400);
      const error = (JSON.parse(answer.text) as { error: { code: number; message: string } }).error;
      expect(error.code).toBe(-32020);
      expect(error.message).toMatch(why);
    }
    // The Base64 form of the right value is the same value.
    const encoded = await postRpc(
      gateway.url,
      call(id++, { region: 'Zürich', sql: 's' }),
      headers({ 'Mcp-Param-Region': `=?base64?${Buffer.from('Zürich').toString('base64')}?=` }),
    );
    expect(encoded.status).toBe(200);
    expect(upstreamCalls()).toBe(before + 1);
  });
});

describe('tasks of stateless requests on the HTTP listener', () => {
  const TASKS_EXTENSION = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  let gateway: ServedHttp;
  beforeAll(async () => {
    gateway = await shared.http(
      writeConfig({
        gateway: FAST_GATEWAY,
        servers: {
          t: { command: NODE, args: [path.join(ROOT, 'test/fixtures/task-server.mjs')] },
          m: { command: NODE, args: [path.join(ROOT, 'test/fixtures/modern-server.mjs'), '--tasks'] },
        },
      }),
    );
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  let id = 1;
  /** One stateless POST of `method`, declaring the tasks extension; its JSON-RPC answer. */
  async function post(method: string, params: Json, name?: string): Promise<Json> {
    const answer = await postRpc(
      gateway.url,
      {
        jsonrpc: '2.0',
        id: id++,
        method,
        params: {
          ...params,
          _meta: envelope({ capabilities: { elicitation: { form: {} }, ...TASKS_EXTENSION } }),
        },
      },
      {
        'Mcp-Protocol-Version': MODERN,
        'Mcp-Method': method,
        ...(name !== undefined && { 'Mcp-Name': name }),
      },
    );
    expect(answer.status).toBe(200);
    return JSON.parse(answer.text) as Json;
  }

  it.each([
    ['a 2025-11-25 server', 't__report', { n: 3 }],
    ['a 2026-07-28 server', 'm__task_report', { n: 3 }],
  ])('a task of %s, created by one POST, is polled by later ones', async (_what, tool, args) => {
    const created = (await post('tools/call', { name: tool, arguments: args }, tool)).result as Json;
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const handle = created.taskId as string;
    let polled: Json;
    do {
      const answer = await post('tasks/get', { taskId: handle });
      expect(answer.error).toBeUndefined();
      polled = answer.result as Json;
    } while (polled.status === 'working');
    expect(polled).toMatchObject({ taskId: handle, status: 'completed' });
  });

  it.each([
    ['2026-07-28', 'm__task_ask', {}, 'name'],
    ['2025-11-25', 't__ask-task', { questions: 1 }, 'answer'],
  ])(
    "takes a %s server's task questions and their answers across requests",
    async (_era, tool, args, field) => {
      const created = (await post('tools/call', { name: tool, arguments: args }, tool)).result as Json;
      const handle = created.taskId as string;
      const ended = (task: Json) => ['completed', 'failed', 'cancelled'].includes(task.status as string);
      let polled: Json;
      do polled = (await post('tasks/get', { taskId: handle })).result as Json;
      while (Object.keys((polled.inputRequests ?? {}) as Json).length === 0 && !ended(polled));
      expect([polled.status, polled.error]).toEqual(['input_required', undefined]);
      const [key] = Object.keys(polled.inputRequests as Json);
      const updated = await post('tasks/update', {
        taskId: handle,
        inputResponses: { [key!]: { action: 'accept', content: { [field]: 'across requests' } } },
      });
      expect(updated.error).toBeUndefined();
      do polled = (await post('tasks/get', { taskId: handle })).result as Json;
      while (!ended(polled));
      expect(polled.status).toBe('completed');
      expect(JSON.stringify(polled.result)).toContain('across requests');
    },
  );
});
