/**
 * Full protocol pass-through in-process: the SDK Client as host, declaring sampling, elicitation
 * and roots, uses what server-everything offers through the gateway as if it were connected
 * directly, and requests servers make of the host keep their own ids. Everything over memory, so
 * each scenario costs no process.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ListRootsResultSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type LoggingMessageNotification,
  type Progress,
  type ResourceUpdatedNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { everything, stopEverything } from './everything.js';
import { type InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

const textOf = (result: unknown): string =>
  ((result as { content?: { type: string; text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('');

describe('pass-through to server-everything, in-process', () => {
  let running: InProcessGateway;
  const sampled: unknown[] = [];
  const logListeners = new Set<(n: LoggingMessageNotification) => void>();

  beforeAll(async () => {
    running = await shared.inProcess({
      config: 'servers:\n  everything: { command: unused }\n',
      upstreams: { everything },
      client: { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
      beforeConnect: (client) => {
        client.setRequestHandler(CreateMessageRequestSchema, (request) => {
          sampled.push(request.params);
          return { role: 'assistant', content: { type: 'text', text: 'sampled by the host' }, model: 'm' };
        });
        client.setRequestHandler(ElicitRequestSchema, () => ({
          action: 'accept',
          content: { name: 'Ada Lovelace', check: true },
        }));
        client.setRequestHandler(ListRootsRequestSchema, () => ({
          roots: [{ uri: 'file:///tmp/warden-root', name: 'warden root' }],
        }));
        client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
          for (const listener of logListeners) listener(n);
        });
      },
    });
  });
  afterAll(async () => {
    stopEverything();
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  it('advertises what it can route, and offers the tools the host’s capabilities unlock', async () => {
    expect(running.client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      logging: {},
      completions: {},
    });
    const names = (await running.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'everything__trigger-sampling-request',
        'everything__trigger-elicitation-request',
        'everything__get-roots-list',
      ]),
    );
  });

  it('forwards sampling, elicitation and roots/list to the host and the answers back', async () => {
    const { client } = running;
    const sampling = await client.callTool({
      name: 'everything__trigger-sampling-request',
      arguments: { prompt: 'Say hi', maxTokens: 20 },
    });
    expect(textOf(sampling)).toContain('sampled by the host');
    expect(sampled).toHaveLength(1);
    const elicited = await client.callTool({
      name: 'everything__trigger-elicitation-request',
      arguments: {},
    });
    expect(textOf(elicited)).toContain('Ada Lovelace');
    const roots = await client.callTool({ name: 'everything__get-roots-list', arguments: {} });
    expect(textOf(roots)).toContain('file:///tmp/warden-root');
  });

  it('delivers upstream progress under the host’s own token, in order', async () => {
    const progress: Progress[] = [];
    const result = await running.client.callTool(
      { name: 'everything__trigger-long-running-operation', arguments: { duration: 0.03, steps: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    expect(textOf(result)).toContain('Long running operation completed');
    // The SDK Client routes progress by the token it sent: arriving here proves the re-tagging.
    // It dispatches notifications a microtask after responses, so the last step may lose the
    // race with the result even on a direct connection.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.map((p) => p.progress)).toEqual([1, 2, 3].slice(0, progress.length));
    expect(progress.every((p) => p.total === 3)).toBe(true);
  });

  it('fans logging/setLevel out, and log messages arrive tagged with the server’s name', async () => {
    await running.client.setLoggingLevel('debug');
    const first = new Promise<LoggingMessageNotification>((resolve) => logListeners.add(resolve));
    await running.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
    const message = await first;
    expect(message.params.logger).toMatch(/^everything/);
    await running.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
  });

  it('namespaces prompts, routes prompts/get to the owner and completions by prompt reference', async () => {
    const { client } = running;
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(
      expect.arrayContaining(['everything__simple-prompt', 'everything__args-prompt']),
    );
    const prompt = await client.getPrompt({ name: 'everything__args-prompt', arguments: { city: 'Paris' } });
    expect(JSON.stringify(prompt.messages)).toContain('Paris');
    await expect(client.getPrompt({ name: 'everything__nope' })).rejects.toMatchObject({ code: -32602 });
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
      argument: { name: 'department', value: 'Eng' },
    });
    expect(completion.completion.values).toEqual(['Engineering']);
  });

  it('merges resources and templates and routes reads by URI, a template’s too', async () => {
    const { client } = running;
    const { resources } = await client.listResources();
    const first = resources[0]!;
    expect((await client.readResource({ uri: first.uri })).contents[0]?.uri).toBe(first.uri);
    expect((await client.listResourceTemplates()).resourceTemplates.length).toBeGreaterThan(0);
    const dynamic = await client.readResource({ uri: 'demo://resource/dynamic/text/7' });
    expect(JSON.stringify(dynamic.contents)).toContain('7');
  });

  it('routes subscribe, and forwards resources/updated', async () => {
    const { client } = running;
    const uri = (await client.listResources()).resources[0]!.uri;
    const updated = new Promise<ResourceUpdatedNotification>((resolve) =>
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        if (n.params.uri === uri) resolve(n);
      }),
    );
    await client.subscribeResource({ uri });
    await client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
    await updated;
    await client.unsubscribeResource({ uri });
    await client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
  });
});

/**
 * A server whose `ask` tool asks the host for its roots, tagging the question with its name, and
 * whose `ask_client` tool asks the host `method` and answers with the error it got, if any.
 */
function asker(tag: string): () => McpServer {
  return () => {
    const server = new McpServer({ name: tag, version: '1' });
    server.registerTool('ask', { inputSchema: {} }, async (_args, extra) => {
      const answer = await extra.sendRequest(
        { method: 'roots/list', params: { _meta: { tag } } },
        ListRootsResultSchema,
      );
      return { content: [{ type: 'text', text: answer.roots[0]?.uri ?? '' }] };
    });
    server.registerTool('ask_client', { inputSchema: { method: z.string() } }, async ({ method }, extra) => {
      try {
        await extra.sendRequest({ method, params: {} } as never, z.object({}).passthrough());
        return { content: [{ type: 'text', text: 'answered' }] };
      } catch (error) {
        const { code, message } = error as { code: number; message: string };
        return { content: [{ type: 'text', text: JSON.stringify({ code, message }) }] };
      }
    });
    return server;
  };
}

let running: InProcessGateway | undefined;
const each = servedPerTest();

describe('requests servers make of the host, in-process', () => {
  it('from two upstreams at once keep their own ids and get their own answers', async () => {
    let bAsked!: () => void;
    const bWasAsked = new Promise<void>((resolve) => (bAsked = resolve));
    running = await each.inProcess({
      config: 'servers:\n  a: { command: unused }\n  b: { command: unused }\n',
      upstreams: { a: asker('a'), b: asker('b') },
      client: { capabilities: { roots: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ListRootsRequestSchema, async (request) => {
          const tag = String((request.params?._meta as { tag?: string } | undefined)?.tag);
          // a's question is answered only after b's, so the answers cross on the way back.
          if (tag === 'b') bAsked();
          else await bWasAsked.then(() => new Promise((resolve) => setImmediate(resolve)));
          return { roots: [{ uri: `file:///asked-by-${tag}` }] };
        }),
    });
    // Both servers number their requests from the same start: the gateway must not mix them up.
    const [a, b] = await Promise.all(
      ['a', 'b'].map((s) => running!.client.callTool({ name: `${s}__ask`, arguments: {} })),
    );
    expect(textOf(a)).toBe('file:///asked-by-a');
    expect(textOf(b)).toBe('file:///asked-by-b');
  });

  it('are refused with a clear error when the host did not declare the capability', async () => {
    running = await each.inProcess({
      config: 'servers:\n  a: { command: unused }\n',
      upstreams: { a: asker('a') },
      client: { capabilities: { roots: {} } },
    });
    const ask = async (method: string) =>
      JSON.parse(
        textOf(await running!.client.callTool({ name: 'a__ask_client', arguments: { method } })),
      ) as { code: number; message: string };
    // The SDK server puts its own "MCP error <code>: " in front of the message it received.
    expect(await ask('sampling/createMessage')).toEqual({
      code: -32601,
      message: expect.stringContaining(
        'the host connected to mcp-warden did not declare the sampling capability',
      ) as string,
    });
    expect((await ask('elicitation/create')).message).toContain('did not declare the elicitation capability');
    // A server lists the tasks it had the host run; this host runs none.
    expect(await ask('tasks/list')).toEqual({
      code: -32601,
      message: expect.stringContaining(
        'the host connected to mcp-warden did not declare the tasks capability',
      ) as string,
    });
  });
});

describe('cancellation from the host, in-process', () => {
  it('reaches the upstream that runs the call, and the connection still closes', async () => {
    let started!: () => void;
    const hangStarted = new Promise<void>((resolve) => (started = resolve));
    let aborted!: () => void;
    const upstreamAborted = new Promise<void>((resolve) => (aborted = resolve));
    const up = () => {
      const server = new McpServer({ name: 'up', version: '1' });
      // As the spec asks, a cancelled request gets no answer from this server.
      server.registerTool('hang', { inputSchema: {} }, (_args, extra) => {
        started();
        return new Promise((_resolve, reject) =>
          extra.signal.addEventListener('abort', () => {
            aborted();
            reject(new Error('stopped'));
          }),
        );
      });
      return server;
    };
    const made = await each.inProcess({ config: 'servers:\n  up: { command: unused }\n', upstreams: { up } });
    running = made;
    const controller = new AbortController();
    const call = made.client.callTool({ name: 'up__hang', arguments: {} }, undefined, {
      signal: controller.signal,
    });
    await hangStarted;
    controller.abort('user pressed stop');
    await expect(call).rejects.toThrow(/user pressed stop/);
    // The upstream's handler sees its own request cancelled, under the id the gateway gave it.
    await upstreamAborted;
    // The cancelled call is done on the host's side too: closing does not wait for its answer.
    await made.close();
    expect(made.log.join('\n')).not.toContain('internal error');
  });
});
