/**
 * Isolation between principals on the HTTP listener served in-process (`startServing` with
 * `--http`), with a real issuer (oauth2-mock-server) and the SDK's StreamableHTTPClientTransport
 * as host: each user gets their own process of a stdio server, and nothing of one user's reaches
 * another. What needs the gateway's own process (the processes it is the parent of, the exit code
 * of a refused config) stays with the built binary in test/integration/httpPrincipals.test.ts.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { OAuth2Server } from 'oauth2-mock-server';
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAST_GATEWAY,
  fixture,
  isAlive,
  readAudit,
  tempDir,
  textOf,
  writeConfig,
  NODE,
  ROOT,
  type AuditRecord,
  type HostCapabilities,
} from '../integration/harness.js';
import { envelope, MODERN } from '../fixtures/modernHost.js';
import { connectHttpHost, INITIALIZE, postRpc, type HttpHost } from '../integration/httpHarness.js';
import { type ServedHttp } from './served.js';
import { servedPerTest } from './perTest.js';

const AUDIENCE = 'https://warden.test/mcp';
let issuer: OAuth2Server;

beforeAll(async () => {
  issuer = new OAuth2Server();
  await issuer.issuer.keys.generate('RS256');
  await issuer.start(0, '127.0.0.1');
});
afterAll(async () => {
  await issuer.stop();
});

let gateway: ServedHttp | undefined;
const each = servedPerTest();

/** A token for `subject` from the issuer. */
function token(subject: string): Promise<string> {
  return issuer.issuer.buildToken({
    scopesOrTransform: (_header, payload) => {
      payload.sub = subject;
      payload.aud = AUDIENCE;
      payload.scope = 'mcp';
    },
  });
}

const TASK_FIXTURE = path.join(ROOT, 'test/fixtures/task-server.mjs');
/** What a host that runs tasks itself declares. */
const TASK_HOST = { tasks: { list: {}, cancel: {} } };

/**
 * A host connected as `subject`, answering roots/list with `roots` when given (and telling the
 * gateway when they change), with `capabilities` and `beforeConnect` as the harness takes them.
 */
async function hostAs(
  subject: string,
  options: {
    readonly roots?: string;
    readonly capabilities?: HostCapabilities;
    readonly beforeConnect?: (client: HttpHost['client']) => void;
  } = {},
): Promise<HttpHost> {
  const { roots } = options;
  const connected = await connectHttpHost(gateway!.url, {
    token: await token(subject),
    name: `${subject}-host`,
    ...(options.capabilities && { capabilities: options.capabilities }),
    ...(options.beforeConnect && { beforeConnect: options.beforeConnect }),
    ...(roots !== undefined && {
      capabilities: { ...options.capabilities, roots: { listChanged: true } },
      beforeConnect: (client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => ({
          roots: [{ uri: `file://${roots}`, name: `${subject}'s folder` }],
        })),
    }),
  });
  // A host the test already closed, or whose gateway stopped, may fail to close again.
  each.track({ close: () => connected.close().catch(() => {}) });
  return connected;
}

function setup(servers: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const dir = tempDir();
  const auditFile = path.join(dir, 'audit.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: auditFile },
      auth: { issuer: issuer.issuer.url, audience: AUDIENCE },
      servers,
      ...extra,
    },
    dir,
  );
  return { dir, config, auditFile };
}

const starts = (file: string, server: string): AuditRecord[] =>
  readAudit(file).filter((r) => r.type === 'upstream_start' && r.server === server);
const subjectOf = (r: AuditRecord) => (r.principal as { subject: string }).subject;

/**
 * Starts a call of the fixture's `hang` tool and waits until the upstream has it (its --record
 * file says so); `cancel` gives up on it from the host's side.
 */
async function hangAt(host: HttpHost, recorded: string) {
  const abort = new AbortController();
  const hanging = host.client
    .callTool({ name: 'up__hang', arguments: {} }, undefined, { signal: abort.signal })
    .catch((error: unknown) => error);
  await expect.poll(() => (existsSync(recorded) ? readFileSync(recorded, 'utf8') : '')).toMatch(/hang/);
  return {
    cancel: async () => {
      abort.abort();
      await hanging;
    },
  };
}

describe('isolation between principals', () => {
  it("stops a principal's processes once idle (never under a call), and starts fresh ones on the next call", async () => {
    const { config, auditFile } = setup(
      { up: fixture() },
      { listen: { http: '127.0.0.1:0', perPrincipal: { idleTimeout: '200ms' } } },
    );
    gateway = await each.http(config);
    const alice = await hostAs('alice');
    // A call longer than the idle time keeps its process.
    const slept = await alice.client.callTool({ name: 'up__sleep', arguments: { ms: 600 } });
    expect(textOf(slept)).toBe('slept 600');
    const [first] = starts(auditFile, 'up');
    expect(subjectOf(first!)).toBe('alice');
    await gateway.waitForStderr(/stopping alice@\S+'s server processes: unused for 200 ms/);
    await expect
      .poll(() => readAudit(auditFile).filter((r) => r.type === 'upstream_exit' && r.server === 'up'))
      .toHaveLength(1);
    expect(isAlive(first!.pid as number)).toBe(false);
    expect(textOf(await alice.client.callTool({ name: 'up__echo', arguments: { text: 'again' } }))).toBe(
      'again',
    );
    const again = starts(auditFile, 'up');
    expect(again.map(subjectOf)).toEqual(['alice', 'alice']);
    expect(again[1]!.pid).not.toBe(first!.pid);
  });

  it("lists a principal's lazy server from that principal's cached listing without starting it; another principal's first list starts their own", async () => {
    const { config, auditFile, dir } = setup(
      { lz: fixture([], { start: 'lazy' }) },
      { listen: { http: '127.0.0.1:0' }, pins: { file: './tool-pins.json' } },
    );
    // Alice's first list: never listed for her, so her process starts to be listed.
    gateway = await each.http(config);
    const before = await hostAs('alice');
    expect((await before.client.listTools()).tools.map((t) => t.name)).toContain('lz__echo');
    await expect.poll(() => starts(auditFile, 'lz').map(subjectOf)).toEqual(['alice']);
    await before.close();
    await gateway.stop();
    expect(readdirSync(path.join(dir, 'tool-pins.listings', 'principals'))).toHaveLength(1);

    gateway = await each.http(config);
    const alice = await hostAs('alice');
    expect((await alice.client.listTools()).tools.map((t) => t.name)).toContain('lz__echo');
    await gateway.waitForStderr(/\[lz for alice@\S+\]: listed from its last listing/);
    expect(starts(auditFile, 'lz').map(subjectOf)).toEqual(['alice']);
    // Bob has no listing of his own: his list starts his process (alice's is never shown to him).
    const bob = await hostAs('bob');
    expect((await bob.client.listTools()).tools.map((t) => t.name)).toContain('lz__echo');
    await expect.poll(() => starts(auditFile, 'lz').map(subjectOf)).toEqual(['alice', 'bob']);
    // Alice's first call starts hers.
    expect(textOf(await alice.client.callTool({ name: 'lz__echo', arguments: { text: 'up' } }))).toBe('up');
    await expect.poll(() => starts(auditFile, 'lz').map(subjectOf)).toEqual(['alice', 'bob', 'alice']);
  });

  it('refuses a new principal with an error naming the process bound while every principal is busy', async () => {
    const recorded = path.join(tempDir(), 'upstream.jsonl');
    const { config } = setup(
      { up: fixture(['--record', recorded]) },
      { listen: { http: '127.0.0.1:0', perPrincipal: { maxProcesses: 1 } } },
    );
    gateway = await each.http(config);
    const alice = await hostAs('alice');
    // The call is at the upstream: alice is busy.
    const hanging = await hangAt(alice, recorded);
    await expect(hostAs('bob')).rejects.toThrow(/listen\.perPrincipal\.maxProcesses: 1/);
    // Once alice is idle, her process makes room for the next principal.
    await hanging.cancel();
    // The host gives up at once; the gateway learns of it a moment later, as the error says.
    let carol: HttpHost | undefined;
    await expect.poll(async () => (carol = await hostAs('carol').catch(() => undefined))).toBeDefined();
    if (carol === undefined) throw new Error('carol could not connect');
    expect(textOf(await carol.client.callTool({ name: 'up__echo', arguments: { text: 'room' } }))).toBe(
      'room',
    );
    expect(gateway.stderr()).toMatch(/stopping alice@\S+'s server processes to make room/);
  });

  it("bounds each principal's sessions, so one user cannot take every slot: 429 naming the bound", async () => {
    const { config } = setup(
      { up: fixture([], { shared: true }) },
      { listen: { http: '127.0.0.1:0', maxSessions: 4, perPrincipal: { maxSessions: 2 } } },
    );
    gateway = await each.http(config);
    const first = await hostAs('alice');
    await hostAs('alice');
    const third = await postRpc(gateway.url, INITIALIZE, { Authorization: `Bearer ${await token('alice')}` });
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('30');
    expect(JSON.parse(third.text)).toMatchObject({
      error: {
        message: expect.stringMatching(
          /too many sessions for alice@\S+ \(listen\.perPrincipal\.maxSessions is 2\)/,
        ),
      },
    });
    // The other slots are still there for everyone else.
    const bob = await hostAs('bob');
    expect(textOf(await bob.client.callTool({ name: 'up__echo', arguments: { text: 'in' } }))).toBe('in');
    // Ending one of her sessions gives alice her slot back.
    await first.close();
    await hostAs('alice');
  });

  it("bounds each principal's calls at once and per minute, with a JSON-RPC error naming the bound", async () => {
    const recorded = path.join(tempDir(), 'upstream.jsonl');
    const { config, auditFile } = setup(
      { up: fixture(['--record', recorded], { shared: true }) },
      { listen: { http: '127.0.0.1:0', perPrincipal: { maxConcurrency: 1, ratePerMinute: 2 } } },
    );
    gateway = await each.http(config);
    const alice = await hostAs('alice');
    const bob = await hostAs('bob');
    const hanging = await hangAt(alice, recorded);
    // Alice has one call in flight: her next is refused; bob's are not hers to count.
    const busy = alice.client.callTool({ name: 'up__echo', arguments: { text: 'two at once' } });
    await expect(busy).rejects.toMatchObject({ code: -32029 });
    await expect(busy).rejects.toThrow(/listen\.perPrincipal\.maxConcurrency: 1/);
    expect(textOf(await bob.client.callTool({ name: 'up__echo', arguments: { text: 'b1' } }))).toBe('b1');
    await hanging.cancel();
    // A refused request does not count: hang and this one make two in this minute.
    await expect
      .poll(() =>
        alice.client.callTool({ name: 'up__echo', arguments: { text: 'a' } }).then(
          (result) => textOf(result),
          (error: Error) => error.message,
        ),
      )
      .toBe('a');
    const limited = alice.client.callTool({ name: 'up__echo', arguments: { text: 'too many' } });
    await expect(limited).rejects.toThrow(/listen\.perPrincipal\.ratePerMinute: 2/);
    expect(textOf(await bob.client.callTool({ name: 'up__echo', arguments: { text: 'b2' } }))).toBe('b2');
    // The refusals are in the audit trail, under alice.
    await expect
      .poll(() =>
        readAudit(auditFile)
          .filter(
            (r) => r.type === 'call' && subjectOf(r) === 'alice' && /perPrincipal/.test(JSON.stringify(r)),
          )
          .map((r) => (r.args as { text: string }).text),
      )
      .toEqual(['two at once', 'too many']);
  });

  it("refuses alice's task handle to bob, and lists each principal's tasks to that principal only", async () => {
    const { config } = setup({ t: { command: NODE, args: [TASK_FIXTURE] } });
    gateway = await each.http(config);
    const alice = await hostAs('alice', { capabilities: TASK_HOST });
    const bob = await hostAs('bob', { capabilities: TASK_HOST });
    let handle: string | undefined;
    for await (const message of alice.client.experimental.tasks.callToolStream(
      { name: 't__report', arguments: { n: 2 } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    ))
      if (message.type === 'taskCreated') handle = message.task.taskId;
    expect(handle).toBeDefined();
    expect((await alice.client.experimental.tasks.getTask(handle!)).taskId).toBe(handle);
    const refused = await bob.client.experimental.tasks.getTask(handle!).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(-32602);
    expect((await alice.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([handle]);
    expect((await bob.client.experimental.tasks.listTasks()).tasks).toEqual([]);
  });

  it('keeps tasks apart on a server every principal shares: each lists its own only', async () => {
    const { config } = setup({ t: { command: NODE, args: [TASK_FIXTURE], shared: true } });
    gateway = await each.http(config);
    const alice = await hostAs('alice', { capabilities: TASK_HOST });
    const bob = await hostAs('bob', { capabilities: TASK_HOST });
    const start = async (host: HttpHost) => {
      for await (const message of host.client.experimental.tasks.callToolStream(
        { name: 't__report', arguments: { n: 1 } },
        CallToolResultSchema,
        { task: { ttl: 60_000 } },
      ))
        if (message.type === 'taskCreated') return message.task.taskId;
      throw new Error('no task was created');
    };
    const mine = await start(alice);
    const his = await start(bob);
    // One process holds both tasks; each principal sees only the one it created.
    expect((await alice.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([mine]);
    expect((await bob.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([his]);
  });

  it("never lets alice's remembered confirmation approve bob's call", async () => {
    const { dir, config } = setup(
      { up: fixture([], { shared: true }) },
      { policies: ['policy.yaml'], confirmation: { methods: ['elicitation'] } },
    );
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n',
    );
    gateway = await each.http(config);
    const asked: string[] = [];
    const answering = (who: string) => (client: HttpHost['client']) =>
      client.setRequestHandler(ElicitRequestSchema, () => {
        asked.push(who);
        return { action: 'accept', content: { remember: true } };
      });
    const alice = await hostAs('alice', {
      capabilities: { elicitation: {} },
      beforeConnect: answering('alice'),
    });
    const bob = await hostAs('bob', { capabilities: { elicitation: {} }, beforeConnect: answering('bob') });
    const echo = (host: HttpHost, text: string) =>
      host.client.callTool({ name: 'up__echo', arguments: { text } }).then(textOf);
    expect(await echo(alice, 'a1')).toBe('a1');
    expect(await echo(alice, 'a2')).toBe('a2'); // remembered: not asked again
    expect(asked).toEqual(['alice']);
    expect(await echo(bob, 'b1')).toBe('b1'); // bob is asked himself
    expect(asked).toEqual(['alice', 'bob']);
  });

  it("puts a shared server's question only to the user whose call caused it; one outside any call to no one", async () => {
    const dir = tempDir();
    const recorded = path.join(dir, 'upstream.jsonl');
    const [go, later] = [path.join(dir, 'go'), path.join(dir, 'later')];
    const { config } = setup({ up: fixture(['--record', recorded], { shared: true }) });
    gateway = await each.http(config);
    const asked: string[] = [];
    const answering = (who: string) => (client: HttpHost['client']) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(`${who}: ${request.params.message}`);
        return { action: 'accept', content: { by: who } };
      });
    const elicits = { capabilities: { elicitation: {} } };
    const alice = await hostAs('alice', { ...elicits, beforeConnect: answering('alice') });
    const bob = await hostAs('bob', { ...elicits, beforeConnect: answering('bob') });
    const params = {
      mode: 'form',
      message: "alice's private question",
      requestedSchema: { type: 'object', properties: { by: { type: 'string' } } },
    };
    const ask = (extra: Record<string, unknown>) =>
      alice.client.callTool({
        name: 'up__ask_client',
        arguments: { method: 'elicitation/create', params, ...extra },
      });
    const call = ask({ waitFor: go });
    const upstreamGot = () => (existsSync(recorded) ? readFileSync(recorded, 'utf8') : '');
    await expect.poll(upstreamGot).toMatch(/ask_client/);
    // Bob uses the same server while alice's call is at it: he is the server's last user now.
    expect(textOf(await bob.client.callTool({ name: 'up__echo', arguments: { text: 'hi' } }))).toBe('hi');
    writeFileSync(go, '');
    expect(JSON.parse(textOf(await call))).toEqual({
      result: { action: 'accept', content: { by: 'alice' } },
    });
    expect(asked).toEqual([expect.stringMatching(/^alice: .*alice's private question/)]);
    // Asked after the call was answered, the question belongs to no call: it is put to no one.
    expect(textOf(await ask({ waitFor: later, detach: true }))).toBe('will ask');
    writeFileSync(later, '');
    const answers = () =>
      upstreamGot()
        .split('\n')
        .filter((line) => line.includes('"fixture-2"'))
        .map((line) => JSON.parse(line) as { error?: { message: string } });
    await expect.poll(answers).toHaveLength(1);
    expect(answers()[0]!.error?.message).toMatch(
      /refuses elicitation\/create from server "up": it came while no call to that server was in flight/,
    );
    expect(asked).toHaveLength(1);
    await gateway.waitForStderr(/refuses elicitation\/create from server "up"/);
  });

  it("sends notifications/resources/updated of alice's own server to alice only", async () => {
    const { config } = setup({ files: fixture(['--resources', '--name', 'files']) });
    gateway = await each.http(config);
    const updated = { alice: [] as string[], bob: [] as string[] };
    const listening = (who: 'alice' | 'bob') => (client: HttpHost['client']) =>
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        updated[who].push(n.params.uri);
      });
    const alice = await hostAs('alice', { beforeConnect: listening('alice') });
    const bob = await hostAs('bob', { beforeConnect: listening('bob') });
    const uri = 'fixture://files/a';
    // Both subscribe to the same URI, each on their own process of the server.
    await alice.client.subscribeResource({ uri });
    await bob.client.subscribeResource({ uri });
    const update = (host: HttpHost) =>
      host.client.callTool({ name: 'files__update_resource', arguments: { uri } }).then(textOf);
    expect(await update(alice)).toBe('notified');
    await expect.poll(() => updated.alice).toEqual([uri]);
    // Bob's own update reaches him; alice's never did.
    expect(await update(bob)).toBe('notified');
    await expect.poll(() => updated.bob).toEqual([uri]);
    expect(updated.alice).toEqual([uri]);
  });
});

describe('a stateless call waiting for its host’s answer', () => {
  it('is continued only by the principal it asked: another principal’s retry is refused', async () => {
    const { dir, config } = setup({ up: fixture() }, { policies: ['policy.yaml'] });
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n',
    );
    gateway = await each.http(config);
    const post = async (who: string, id: number, extra: Record<string, unknown> = {}) => {
      const answer = await postRpc(
        gateway!.url,
        {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'up__echo', arguments: { text: 'mine' }, _meta: envelope(), ...extra },
        },
        {
          Authorization: `Bearer ${await token(who)}`,
          'Mcp-Protocol-Version': MODERN,
          'Mcp-Method': 'tools/call',
          'Mcp-Name': 'up__echo',
        },
      );
      return JSON.parse(answer.text) as { result?: Record<string, unknown>; error?: { message: string } };
    };
    const asked = (await post('alice', 1)).result!;
    expect(asked.resultType).toBe('input_required');
    const [key] = Object.keys(asked.inputRequests as Record<string, unknown>);
    const retry = {
      inputResponses: { [key!]: { action: 'accept', content: {} } },
      requestState: asked.requestState,
    };
    const stolen = await post('bob', 2, retry);
    expect(stolen.error?.message).toContain('requestState refused');
    const mine = await post('alice', 3, retry);
    expect((mine.result!.content as { text: string }[])[0]!.text).toBe('mine');
  });
});
