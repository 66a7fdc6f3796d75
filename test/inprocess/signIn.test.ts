/**
 * Signing in to a server through the host, in-process, with the SDK Client as host: a server
 * that needs its user to sign in lists one `authorize` tool in place of its own and never holds
 * the others up; calling it (or a stale name of that server) asks the host to open the sign-in
 * page by URL-mode elicitation, or, for a host that cannot be asked, answers with the URL and the
 * command to run. Once signed in the server connects and its tools replace `authorize`. The
 * server is a real HTTP server (test/fixtures/signin-http-server.mjs) that answers 401 until
 * its sign-in page was visited; the sign-in port is test/fixtures/fixtureSignIn.ts.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { beforeEach, describe, expect, it } from 'vitest';
import { tokenPrincipal } from '../../src/core/principal.js';
import { FixtureSignIn, LOCAL_USER, openInBrowser } from '../fixtures/fixtureSignIn.js';
import { envelope } from '../fixtures/modernHost.js';
import { startSignInFixture, type SignInFixture } from '../fixtures/signin-http-server.mjs';
import { MemoryTransport, sdkTransport, type InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();
let fixture: SignInFixture;
let signIn: FixtureSignIn;
let running: InProcessGateway | undefined;

beforeEach(async () => {
  // Opened first, so closed last: after the gateway that signs in to it.
  fixture = each.track(await startSignInFixture());
  signIn = new FixtureSignIn(fixture);
});

/** A plain server beside the one that needs sign-in, to show it is never held up. */
function local(): McpServer {
  const server = new McpServer({ name: 'local', version: '1' });
  server.registerTool('echo', { description: 'echo' }, () => ({
    content: [{ type: 'text', text: 'local echo' }],
  }));
  return server;
}

function config(extra = ''): string {
  return `${extra}servers:\n  remote: { url: "${fixture.url}/mcp" }\n  local: { command: unused }\n`;
}

async function start(options: {
  extra?: string;
  files?: Record<string, string>;
  client?: ConstructorParameters<typeof Client>[1];
  beforeConnect?: (client: Client) => void;
}): Promise<InProcessGateway> {
  running = await each.inProcess({
    config: config(options.extra),
    ...(options.files && { files: options.files }),
    upstreams: { local },
    connectUpstream: (server, principal) => signIn.transport(server, principal),
    signInFor: (server) => (server.name === 'remote' ? signIn : undefined),
    ...(options.client && { client: options.client }),
    ...(options.beforeConnect && { beforeConnect: options.beforeConnect }),
  });
  return running;
}

const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name).sort();
const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

/** A host that declared URL-mode elicitation and "opens" each URL it is asked to, answering `action`. */
function urlHost(action: 'accept' | 'decline' = 'accept', asked: Record<string, unknown>[] = []) {
  return {
    client: { capabilities: { elicitation: { form: {}, url: {} } } },
    beforeConnect: (client: Client) =>
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        const url = (request.params as { url?: string }).url;
        if (action === 'accept' && url !== undefined) await openInBrowser(url);
        return { action };
      }),
  };
}

/** Resolves on the host's next `notifications/tools/list_changed`. */
function nextListChanged(client: Client): Promise<void> {
  return new Promise((resolve) =>
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
  );
}

describe('a server that needs sign-in', () => {
  it('lists only its authorize tool, saying what it signs in to, and never holds up the other server', async () => {
    const { client, log } = await start({});
    expect(await names(client)).toEqual(['local__echo', 'remote__authorize']);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'remote__authorize')?.description).toContain(signIn.describe());
    expect(textOf(await client.callTool({ name: 'local__echo' }))).toBe('local echo');
    // No restart loop: it waits for a sign-in, it is not a failing server.
    expect(running!.gateway.pool.byName.get('remote')?.state).toBe('needs-sign-in');
    expect(log.filter((l) => /remote/.test(l) && /restart/.test(l))).toEqual([]);
    expect(fixture.authorizations).toEqual([]);
  });
});

describe('a host that declared URL-mode elicitation', () => {
  it('is asked to open the sign-in page; the call answers who signed in, and the tools replace authorize', async () => {
    const asked: Record<string, unknown>[] = [];
    const { client, hostLines } = await start({
      extra: 'audit: { file: ./audit.jsonl }\n',
      ...urlHost('accept', asked),
    });
    expect(await names(client)).toContain('remote__authorize');
    const changed = nextListChanged(client);
    const result = await client.callTool({ name: 'remote__authorize' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(
      /Signed in to server "remote" as local-user \(scopes: read\)\. Its 1 tools are now listed/,
    );
    expect(asked).toEqual([
      expect.objectContaining({
        mode: 'url',
        url: expect.stringContaining(`${fixture.url}/sign-in?`),
        elicitationId: expect.any(String),
      }),
    ]);
    await changed;
    expect(await names(client)).toEqual(['local__echo', 'remote__whoami']);
    expect(textOf(await client.callTool({ name: 'remote__whoami' }))).toBe(`signed in as ${LOCAL_USER}`);
    // The host is told the URL-mode elicitation is complete.
    const complete = hostLines().map(
      (l) => JSON.parse(l) as { method?: string; params?: { elicitationId?: string } },
    );
    expect(complete.find((m) => m.method === 'notifications/elicitation/complete')?.params).toEqual({
      elicitationId: asked[0]!.elicitationId,
    });
    const records = running!.auditRecords();
    expect(records.filter((r) => String(r.type).startsWith('upstream_sign_in'))).toEqual([
      expect.objectContaining({ type: 'upstream_sign_in_start', server: 'remote' }),
    ]);
    expect(records).toContainEqual(
      expect.objectContaining({ type: 'request', method: 'authorize', server: 'remote', outcome: 'ok' }),
    );
    // Never a token, nor the sign-in URL (its state).
    const text = JSON.stringify(records);
    expect(text).not.toContain('token-');
    expect(text).not.toContain('/sign-in?');
  });

  it('signs in when the host calls a tool of that server by a name from an older list', async () => {
    const { client } = await start(urlHost('accept'));
    const result = await client.callTool({ name: 'remote__whoami' });
    expect(textOf(result)).toMatch(/Signed in to server "remote" as local-user/);
    expect(textOf(await client.callTool({ name: 'remote__whoami' }))).toBe(`signed in as ${LOCAL_USER}`);
  });

  it('declined: the sign-in is given up, with a result that says so, and authorize stays', async () => {
    const { client } = await start({ extra: 'audit: { file: ./audit.jsonl }\n', ...urlHost('decline') });
    const result = await client.callTool({ name: 'remote__authorize' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(
      /needs sign-in: the user declined the sign-in; call remote__authorize again/,
    );
    expect(signIn.cancelled).toEqual(['the user declined the sign-in']);
    expect(running!.auditRecords().filter((r) => String(r.type).startsWith('upstream_sign_in'))).toEqual([
      expect.objectContaining({ type: 'upstream_sign_in_start', server: 'remote' }),
      expect.objectContaining({
        type: 'upstream_sign_in_failed',
        server: 'remote',
        error: expect.stringContaining('declined'),
      }),
    ]);
    expect(await names(client)).toEqual(['local__echo', 'remote__authorize']);
  });

  it('a sign-in nobody completes ends with the call time limit, and is given up', async () => {
    running = await each.inProcess({
      config: `servers:\n  remote: { url: "${fixture.url}/mcp", timeout: 300ms }\n`,
      upstreams: {},
      connectUpstream: (server, principal) => signIn.transport(server, principal),
      signInFor: () => signIn,
      client: { capabilities: { elicitation: { form: {}, url: {} } } },
      // The user says yes and then never signs in.
      beforeConnect: (client) => client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept' })),
    });
    const result = await running.client.callTool({ name: 'remote__authorize' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/timed out|time limit|no answer/i);
    await expect.poll(() => signIn.cancelled.length).toBe(1);
    expect(await names(running.client)).toEqual(['remote__authorize']);
  });

  it('a policy rule of kind authorize denies the sign-in before the user is asked', async () => {
    const asked: Record<string, unknown>[] = [];
    const policy =
      'rules:\n  - id: no-sign-in\n    match: { kind: authorize }\n    action: deny\n    reason: sign-in is not allowed here\n';
    const { client } = await start({
      extra: 'policies: [./p.yaml]\n',
      files: { 'p.yaml': policy },
      ...urlHost('accept', asked),
    });
    const result = await client.callTool({ name: 'remote__authorize' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/no-sign-in/);
    expect(asked).toEqual([]);
    expect(signIn.begun).toEqual([]);
    expect(textOf(await client.callTool({ name: 'local__echo' }))).toBe('local echo');
  });
});

describe('a host that cannot be asked', () => {
  it('gets the URL and the command to run; once the user signs in, the tools replace authorize', async () => {
    const { client } = await start({});
    expect(await names(client)).toEqual(['local__echo', 'remote__authorize']);
    const result = await client.callTool({ name: 'remote__authorize' });
    expect(result.isError).toBeFalsy();
    const text = textOf(result);
    expect(text).toContain('mcp-warden auth login remote');
    const url = /(http:\/\/127\.0\.0\.1:\d+\/sign-in\?\S+)/.exec(text)?.[1];
    expect(url).toBeDefined();
    const changed = nextListChanged(client);
    await openInBrowser(url!);
    await changed;
    expect(await names(client)).toEqual(['local__echo', 'remote__whoami']);
  });
});

describe('a 2026-07-28 host', () => {
  it('is asked through the input-required round trip, and its retry gets who signed in', async () => {
    const { gateway } = await start({});
    const [gatewayEnd, hostEnd] = MemoryTransport.pair();
    const answers = new Map<number, Record<string, unknown>>();
    const waiting = new Map<number, (a: Record<string, unknown>) => void>();
    hostEnd.onmessage = (message) => {
      const m = message as { id?: number; result?: Record<string, unknown> };
      if (typeof m.id !== 'number') return;
      const answer = m as Record<string, unknown>;
      answers.set(m.id, answer);
      waiting.get(m.id)?.(answer);
    };
    gateway.connect(gatewayEnd, tokenPrincipal({ sub: 'modern-user' }, []));
    let id = 0;
    const URL_MODE = { capabilities: { elicitation: { form: {}, url: {} } } };
    const request = (method: string, params: Record<string, unknown>) => {
      const mine = ++id;
      const answered = new Promise<Record<string, unknown>>((resolve) => waiting.set(mine, resolve));
      void hostEnd.send({
        jsonrpc: '2.0',
        id: mine,
        method,
        params: { ...params, _meta: envelope(URL_MODE) },
      });
      return answered.then((a) => a.result as Record<string, unknown>);
    };
    const first = await request('tools/call', { name: 'remote__authorize', arguments: {} });
    expect(first.resultType).toBe('input_required');
    const [key, asked] = Object.entries(
      first.inputRequests as Record<string, { method: string; params: { url: string; mode: string } }>,
    )[0]!;
    expect(asked).toMatchObject({ method: 'elicitation/create', params: { mode: 'url' } });
    await openInBrowser(asked.params.url);
    const final = await request('tools/call', {
      name: 'remote__authorize',
      arguments: {},
      inputResponses: { [key]: { action: 'accept' } },
      requestState: first.requestState,
    });
    expect(textOf(final)).toMatch(/Signed in to server "remote" as local-user/);
  });
});

describe('behind the listener, two principals', () => {
  /** A host connection of `sub` (as the listener makes one for a validated token). */
  async function principalHost(sub: string, options: ReturnType<typeof urlHost> | undefined) {
    const [gatewayEnd, clientEnd] = MemoryTransport.pair();
    running!.gateway.connect(gatewayEnd, tokenPrincipal({ sub, iss: 'https://idp.example' }, []));
    const client = new Client({ name: `${sub}'s host`, version: '1' }, options?.client);
    options?.beforeConnect(client);
    await client.connect(sdkTransport(clientEnd));
    return each.track(client);
  }

  it("each signs in for themselves: one's sign-in never serves the other's calls", async () => {
    await start({ extra: 'listen: { http: "127.0.0.1:0" }\n' });
    const alice = await principalHost('alice', urlHost('accept'));
    const bob = await principalHost('bob', undefined);
    expect(await names(alice)).toEqual(['local__echo', 'remote__authorize']);
    expect(await names(bob)).toEqual(['local__echo', 'remote__authorize']);

    expect(textOf(await alice.callTool({ name: 'remote__authorize' }))).toMatch(
      /Signed in to server "remote" as alice/,
    );
    expect(await names(alice)).toEqual(['local__echo', 'remote__whoami']);
    expect(textOf(await alice.callTool({ name: 'remote__whoami' }))).toBe('signed in as alice');

    // Bob still has to sign in; a name he saw in no list of his (alice's tool) is a sign-in for him.
    expect(await names(bob)).toEqual(['local__echo', 'remote__authorize']);
    const asked = await bob.callTool({ name: 'remote__whoami' });
    expect(textOf(asked)).toContain('mcp-warden auth login remote');
    expect(signIn.begun).toEqual(['alice', 'bob']);
    // Every request the server received so far carried alice's token, none bob's or none at all.
    expect(fixture.authorizations.length).toBeGreaterThan(0);
    expect(new Set(fixture.authorizations.map((a) => fixture.whoseToken(a!.slice(7))))).toEqual(
      new Set(['alice']),
    );

    const url = /(http:\/\/127\.0\.0\.1:\d+\/sign-in\?\S+)/.exec(textOf(asked))![1]!;
    const changed = nextListChanged(bob);
    const seen = fixture.authorizations.length;
    await openInBrowser(url);
    await changed;
    expect(textOf(await bob.callTool({ name: 'remote__whoami' }))).toBe('signed in as bob');
    expect(textOf(await alice.callTool({ name: 'remote__whoami' }))).toBe('signed in as alice');
    // From bob's sign-in on, each request carried its own principal's token.
    const whose = fixture.authorizations.slice(seen).map((a) => fixture.whoseToken(a!.slice(7)));
    expect(whose).toContain('bob');
    expect(whose.every((w) => w === 'alice' || w === 'bob')).toBe(true);
  });
});
