/**
 * The whole gateway in-process: host and upstreams over memory, the SDK Client and McpServer at
 * the ends. Covers the router's method table and error boundary, every routed kind through the
 * one pipeline, and the fence around the byte-forwarding path.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseMessage, type JsonRpcRequest } from '../../src/core/protocol/jsonRpc.js';
import { MemoryTransport, type InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

const POLICY = `
default: allow
rules:
  - id: no-secrets
    match: { server: up, tool: secret }
    action: deny
    reason: secrets stay put
`;

function upstream(): McpServer {
  const server = new McpServer({ name: 'up', version: '1' });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  server.registerTool('secret', { inputSchema: {} }, () => ({ content: [{ type: 'text', text: 'x' }] }));
  server.registerTool('ask', { inputSchema: {} }, async () => {
    const answer = await server.server.elicitInput({
      message: 'Your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
    });
    return { content: [{ type: 'text', text: `answer: ${JSON.stringify(answer.content ?? null)}` }] };
  });
  server.registerPrompt('greet', { argsSchema: { who: z.string() } }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Hello ${who}` } }],
  }));
  server.registerResource('note', 'mem://note', {}, () => ({
    contents: [{ uri: 'mem://note', text: 'a note' }],
  }));
  return server;
}

let running: InProcessGateway | undefined;
const each = servedPerTest();

describe('the gateway in-process', () => {
  async function start() {
    running = await each.inProcess({
      config:
        'audit: { file: ./audit.jsonl }\npolicies: [./policy.yaml]\nservers:\n  up: { command: unused }\n',
      files: { 'policy.yaml': POLICY },
      upstreams: { up: upstream },
      client: { capabilities: { elicitation: { form: {} } } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'Ada' } })),
    });
    return running;
  }

  it('lists what the policy allows and routes each kind through the pipeline, auditing it', async () => {
    const { client, auditRecords } = await start();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['up__ask', 'up__echo']);
    expect(await client.callTool({ name: 'up__echo', arguments: { text: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'hi' }],
    });
    expect((await client.readResource({ uri: 'mem://note' })).contents).toEqual([
      { uri: 'mem://note', text: 'a note' },
    ]);
    expect((await client.getPrompt({ name: 'up__greet', arguments: { who: 'Ada' } })).messages).toHaveLength(
      1,
    );
    expect(await client.callTool({ name: 'up__ask', arguments: {} })).toEqual({
      content: [{ type: 'text', text: 'answer: {"name":"Ada"}' }],
    });
    const records = auditRecords().filter((r) => r.type === 'call' || r.type === 'request');
    expect(records.map((r) => [r.type, r.method ?? r.upstreamTool, r.direction ?? 'to_upstream'])).toEqual([
      ['call', 'echo', 'to_upstream'],
      ['request', 'resources/read', 'to_upstream'],
      ['request', 'prompts/get', 'to_upstream'],
      ['request', 'elicitation/create', 'to_host'],
      ['call', 'ask', 'to_upstream'],
    ]);
  });

  it('refuses a denied tool with the rule, and never reaches the upstream', async () => {
    const { client, auditRecords } = await start();
    const result = await client.callTool({ name: 'up__secret', arguments: {} });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('secrets stay put');
    expect(auditRecords().find((r) => r.type === 'call')).toMatchObject({
      outcome: 'denied',
      decision: { effect: 'deny', rule: 'no-secrets' },
    });
  });

  it('answers from its method table: unknown methods, unknown tools, bad params', async () => {
    const { client } = await start();
    await expect(client.request({ method: 'nothing/here', params: {} }, z.object({}))).rejects.toMatchObject({
      code: ErrorCode.MethodNotFound,
      message: expect.stringContaining('mcp-warden does not serve nothing/here'),
    });
    await expect(client.callTool({ name: 'up__nope', arguments: {} })).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
      message: expect.stringContaining('Unknown tool: up__nope'),
    });
    // The only server with resources is asked (templates may serve any URI); it says no.
    await expect(client.readResource({ uri: 'mem://missing' })).rejects.toMatchObject({
      message: expect.stringContaining('mem://missing'),
    });
    await expect(client.getPrompt({ name: 'up__nope' })).rejects.toBeInstanceOf(McpError);
  });
});

/**
 * An upstream driven line by line: it answers the handshake and listing itself, and each
 * `tools/call` with the text `answer(request)` gives, exactly as written.
 */
function rawUpstream(tool: Tool, answer: (request: JsonRpcRequest) => string): () => MemoryTransport {
  return () => {
    const [gatewayEnd, serverEnd] = MemoryTransport.pair();
    serverEnd.onmessage = (message) => {
      if (!('method' in message) || !('id' in message)) return;
      const request = message as JsonRpcRequest;
      const reply = (result: object) =>
        void serverEnd.send({ jsonrpc: '2.0', id: request.id, result: result as never });
      if (request.method === 'initialize')
        reply({
          protocolVersion: '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'raw', version: '1' },
        });
      else if (request.method === 'tools/list') reply({ tools: [tool] });
      else if (request.method === 'tools/call') serverEnd.sendLine(answer(request));
    };
    return gatewayEnd;
  };
}

describe('the byte-forwarding path', () => {
  const structuredTool: Tool = {
    name: 'data',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  };

  async function startRaw(answer: (request: JsonRpcRequest) => string) {
    running = await each.inProcess({
      config: 'servers:\n  raw: { command: unused }\n',
      upstreams: { raw: rawUpstream(structuredTool, answer) },
    });
    return running;
  }

  it('forwards an untouched result as the upstream wrote it, spacing and member order included', async () => {
    const text = '{ "structuredContent" : {"n":1}, "content":[{"type":"text","text":"{\\"n\\":1}"}] }';
    const gateway = await startRaw((r) => `{"jsonrpc":"2.0","id":${String(r.id)},"result":${text}}`);
    await gateway.client.callTool({ name: 'raw__data', arguments: {} });
    expect(gateway.hostLines().some((line) => line.includes(text))).toBe(true);
  });

  it('never forwards the old bytes of a result a stage changed', async () => {
    // Structured content with no text: repair adds the text block, so the result changed.
    const text = '{ "structuredContent" : {"n":2} }';
    const gateway = await startRaw((r) => `{"jsonrpc":"2.0","id":${String(r.id)},"result":${text}}`);
    const result = await gateway.client.callTool({ name: 'raw__data', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: '{"n":2}' }]);
    const line = gateway.hostLines().find((l) => l.includes('"n":2'))!;
    expect(line).not.toContain(text);
    expect(parseMessage(line).ok).toBe(true);
  });
});

describe('a server that asks the host for what the config refuses it', () => {
  it('is answered with the refusal, and the host is never asked', async () => {
    const answers: unknown[] = [];
    let sampled = 0;
    const asking = (): MemoryTransport => {
      const [gatewayEnd, serverEnd] = MemoryTransport.pair();
      serverEnd.onmessage = (message) => {
        if (!('method' in message)) {
          answers.push(message);
          return;
        }
        if (!('id' in message)) return;
        const request = message as JsonRpcRequest;
        const reply = (result: object) =>
          void serverEnd.send({ jsonrpc: '2.0', id: request.id, result: result as never });
        if (request.method === 'initialize') {
          reply({
            protocolVersion: '2025-06-18',
            capabilities: { tools: {} },
            serverInfo: { name: 's', version: '1' },
          });
        } else if (request.method === 'tools/list') {
          reply({ tools: [{ name: 'go', inputSchema: { type: 'object' } }] });
        } else if (request.method === 'tools/call') {
          // Asks although the gateway never said the host can sample.
          void serverEnd.send({
            jsonrpc: '2.0',
            id: 'ask-1',
            method: 'sampling/createMessage',
            params: { messages: [], maxTokens: 5 },
          });
          reply({ content: [{ type: 'text', text: 'asked' }] });
        }
      };
      return gatewayEnd;
    };
    running = await each.inProcess({
      config: 'audit: { file: ./audit.jsonl }\nservers:\n  s: { command: unused, sampling: false }\n',
      upstreams: { s: asking },
      client: { capabilities: { sampling: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(CreateMessageRequestSchema, () => {
          sampled++;
          return { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' };
        }),
    });
    await running.client.callTool({ name: 's__go', arguments: {} });
    await expect.poll(() => answers.length).toBe(1);
    expect(answers[0]).toMatchObject({
      id: 'ask-1',
      error: { message: expect.stringContaining('servers.s.sampling: false') },
    });
    expect(sampled).toBe(0);
    expect(
      running.auditRecords().find((r) => r.type === 'request' && r.method === 'sampling/createMessage'),
    ).toMatchObject({
      direction: 'to_host',
      outcome: 'denied',
      decision: { effect: 'deny', rule: null },
    });
  });
});
