/**
 * Full protocol pass-through (issue 3): the host, declaring sampling, elicitation and roots,
 * uses everything server-everything offers through the gateway as if it were connected directly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type LoggingMessageNotification,
  type ResourceUpdatedNotification,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { readRecord } from '../fixtures/fixtureProcess.js';
import {
  connectHost,
  keepListings,
  FAST_GATEWAY,
  fixture,
  NODE,
  serverBin,
  tempDir,
  writeConfig,
  type HostSession,
  textOf,
} from './harness.js';

/** Resolves with the first notification a handler sees that matches. */
function waitFor<T>(register: (handler: (n: T) => void) => void, match: (n: T) => boolean): Promise<T> {
  return new Promise((resolve) => register((n) => match(n) && resolve(n)));
}

describe('pass-through to server-everything', () => {
  let host: HostSession;
  const sampled: unknown[] = [];
  const logs: LoggingMessageNotification[] = [];
  const logListeners = new Set<(n: LoggingMessageNotification) => void>();

  beforeAll(async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    // What the initialize answer declares is what the server declared, however slow its start.
    await keepListings(config);
    host = await connectHost(config, {
      capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } },
      beforeConnect: (client) => {
        client.setRequestHandler(CreateMessageRequestSchema, (request) => {
          sampled.push(request.params);
          return {
            role: 'assistant',
            content: { type: 'text', text: 'sampled by the host' },
            model: 'test-model',
          };
        });
        client.setRequestHandler(ElicitRequestSchema, () => ({
          action: 'accept',
          content: { name: 'Ada Lovelace', check: true },
        }));
        client.setRequestHandler(ListRootsRequestSchema, () => ({
          roots: [{ uri: 'file:///tmp/warden-root', name: 'warden root' }],
        }));
        client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
          logs.push(n);
          for (const l of logListeners) l(n);
        });
      },
    });
  });
  afterAll(async () => {
    await host?.close();
  });

  it('advertises what it can route', () => {
    expect(host.client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      logging: {},
      completions: {},
    });
  });

  it('declares the host’s capabilities upstream, so capability-gated tools appear', async () => {
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'everything__trigger-sampling-request',
        'everything__trigger-elicitation-request',
        'everything__get-roots-list',
      ]),
    );
  });

  it('forwards sampling to the host and the answer back to the upstream', async () => {
    const result = await host.client.callTool({
      name: 'everything__trigger-sampling-request',
      arguments: { prompt: 'Say hi', maxTokens: 20 },
    });
    expect(textOf(result)).toContain('sampled by the host');
    expect(sampled).toHaveLength(1);
  });

  it('forwards elicitation to the host and the user’s answer back', async () => {
    const result = await host.client.callTool({
      name: 'everything__trigger-elicitation-request',
      arguments: {},
    });
    expect(textOf(result)).toContain('Ada Lovelace');
  });

  it('forwards roots/list to the host', async () => {
    const result = await host.client.callTool({ name: 'everything__get-roots-list', arguments: {} });
    expect(textOf(result)).toContain('file:///tmp/warden-root');
  });

  it('delivers upstream progress under the host’s own token, and none after the result', async () => {
    const progress: Progress[] = [];
    const result = await host.client.callTool(
      { name: 'everything__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    expect(textOf(result)).toContain('Long running operation completed');
    // The SDK Client routes progress by the token it sent: arriving here proves the re-tagging.
    // The SDK dispatches notifications a microtask after responses, so even on a direct
    // connection the last step can lose the race with the result: expect the steps in order.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.map((p) => p.progress)).toEqual([1, 2, 3].slice(0, progress.length));
    expect(progress.every((p) => p.total === 3)).toBe(true);
  });

  it('fans logging/setLevel out, and log messages arrive tagged with the server’s name', async () => {
    await host.client.setLoggingLevel('debug');
    const first = new Promise<LoggingMessageNotification>((resolve) => logListeners.add(resolve));
    await host.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
    const message = await first;
    expect(message.params.logger).toMatch(/^everything/);
    await host.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
  });

  it('namespaces prompts and routes prompts/get to the owner', async () => {
    const { prompts } = await host.client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(
      expect.arrayContaining([
        'everything__simple-prompt',
        'everything__args-prompt',
        'everything__completable-prompt',
      ]),
    );
    const prompt = await host.client.getPrompt({
      name: 'everything__args-prompt',
      arguments: { city: 'Paris' },
    });
    expect(JSON.stringify(prompt.messages)).toContain('Paris');
    await expect(host.client.getPrompt({ name: 'everything__nope' })).rejects.toMatchObject({ code: -32602 });
  });

  it('routes completions by prompt reference', async () => {
    const completion = await host.client.complete({
      ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
      argument: { name: 'department', value: 'Eng' },
    });
    expect(completion.completion.values).toEqual(['Engineering']);
  });

  it('merges resources and templates and routes reads by URI', async () => {
    const { resources } = await host.client.listResources();
    expect(resources.length).toBeGreaterThan(0);
    const first = resources[0]!;
    const read = await host.client.readResource({ uri: first.uri });
    expect(read.contents[0]?.uri).toBe(first.uri);
    const { resourceTemplates } = await host.client.listResourceTemplates();
    expect(resourceTemplates.length).toBeGreaterThan(0);
    // A URI that only a template describes is routed by the template.
    const dynamic = await host.client.readResource({ uri: 'demo://resource/dynamic/text/7' });
    expect(JSON.stringify(dynamic.contents)).toContain('7');
  });

  it('routes subscribe, and forwards resources/updated', async () => {
    const { resources } = await host.client.listResources();
    const uri = resources[0]!.uri;
    const updated = waitFor<ResourceUpdatedNotification>(
      (h) => host.client.setNotificationHandler(ResourceUpdatedNotificationSchema, h),
      (n) => n.params.uri === uri,
    );
    await host.client.subscribeResource({ uri });
    await host.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
    await updated;
    await host.client.unsubscribeResource({ uri });
    await host.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
  });
});

describe('cancellation from the host', () => {
  it('reaches the upstream that runs the call, under that upstream’s request id', async () => {
    const dir = tempDir();
    const record = path.join(dir, 'record.jsonl');
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { up: fixture(['--record', record]) } },
      dir,
    );
    const host = await connectHost(config);
    await host.client.listTools();
    const controller = new AbortController();
    const call = host.client.callTool({ name: 'up__hang', arguments: {} }, undefined, {
      signal: controller.signal,
    });
    // Once this echo (sent after the hang) is answered, the hang has reached the upstream.
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'sync' } });
    controller.abort('user pressed stop');
    await expect(call).rejects.toThrow();
    // And once this one is answered, the cancellation has been recorded.
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'after' } });
    const messages = readRecord(record);
    const hang = messages.find((m) => m.method === 'tools/call' && m.params?.name === 'hang')!;
    const cancel = messages.find((m) => m.method === 'notifications/cancelled');
    expect(cancel?.params?.requestId).toBe(hang.id);
    expect(host.stderr()).not.toContain('internal error');
    await host.close();
  });
});

describe('server-to-client requests', () => {
  it('are refused with a clear error when the host did not declare the capability', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } });
    const host = await connectHost(config, { capabilities: { roots: {} } });
    const ask = async (method: string) =>
      JSON.parse(textOf(await host.client.callTool({ name: 'up__ask_client', arguments: { method } }))) as {
        error?: { code: number; message: string };
      };
    expect(await ask('sampling/createMessage')).toEqual({
      error: {
        code: -32601,
        message: 'the host connected to mcp-warden did not declare the sampling capability',
      },
    });
    expect((await ask('elicitation/create')).error?.message).toContain(
      'did not declare the elicitation capability',
    );
    // A server lists the tasks it had the host run; this host runs none.
    expect((await ask('tasks/list')).error).toEqual({
      code: -32601,
      message: 'the host connected to mcp-warden did not declare the tasks capability',
    });
    await host.close();
  });

  it('from two upstreams at once keep their own ids and get their own answers', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { a: fixture(), b: fixture() } });
    let bAsked!: () => void;
    const bWasAsked = new Promise<void>((resolve) => (bAsked = resolve));
    const host = await connectHost(config, {
      capabilities: { roots: {} },
      beforeConnect: (client) => {
        client.setRequestHandler(ListRootsRequestSchema, async (request) => {
          const tag = String((request.params?._meta as { tag?: string } | undefined)?.tag);
          // Answer a's question only once b's is answered, so the answers cross on the way back
          // (both questions are then in flight at once, however slow the machine).
          if (tag === 'b') bAsked();
          else await bWasAsked.then(() => new Promise((resolve) => setImmediate(resolve)));
          return { roots: [{ uri: `file:///asked-by-${tag}` }] };
        });
      },
    });
    // Both fixtures number their requests from 1: the gateway must not mix them up.
    const [a, b] = await Promise.all(
      ['a', 'b'].map((s) =>
        host.client.callTool({
          name: `${s}__ask_client`,
          arguments: { method: 'roots/list', params: { _meta: { tag: s } } },
        }),
      ),
    );
    const rootOf = (r: object) =>
      (JSON.parse(textOf(r)) as { result: { roots: { uri: string }[] } }).result.roots[0]!.uri;
    expect(rootOf(a!)).toBe('file:///asked-by-a');
    expect(rootOf(b!)).toBe('file:///asked-by-b');
    await host.close();
  });
});

describe('without the capability', () => {
  it('does not declare to upstreams what the host cannot do', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { everything: { command: NODE, args: [serverBin('everything')] } },
    });
    const host = await connectHost(config);
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    // server-everything offers the sampling tool only to clients that can sample.
    expect(names).not.toContain('everything__trigger-sampling-request');
    await host.close();
  });
});
