/**
 * The pipeline's session-wide and result-wide guards in-process: flow control over a session's
 * labels, result guardrails, rate limits and tool search, each driven by the SDK Client over
 * memory against McpServers made here. What reached a server is read from the server itself, so
 * a refusal that still forwarded the call would show. The same behaviour through the built binary
 * is in test/integration (flowControl, guardrails, rateLimits, toolSearch); these carry the
 * scenarios at a fraction of the cost.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

let running: InProcessGateway | undefined;
const each = servedPerTest();

/** An McpServer with an `echo` tool that keeps what it was sent, and `reply` answering `text` as given. */
function recorder(received: string[], reply?: (text: string) => CallToolResult): () => McpServer {
  return () => {
    const server = new McpServer({ name: 'recorder', version: '1' });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => {
      received.push(text);
      return reply?.(text) ?? { content: [{ type: 'text', text }] };
    });
    return server;
  };
}

const textOf = (result: unknown): string =>
  ((result as CallToolResult).content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('');

const call = async (name: string, text = name) =>
  (await running!.client.callTool({ name, arguments: { text } })) as CallToolResult;

describe('flow control over a session, in-process', () => {
  const received = { web: [] as string[], files: [] as string[], mail: [] as string[] };
  const asked: string[] = [];

  async function start(answer: 'accept' | 'decline', flow = ''): Promise<void> {
    for (const list of [...Object.values(received), asked]) list.length = 0;
    running = await each.inProcess({
      config:
        `${flow}audit: { file: ./audit.jsonl }\nservers:\n` +
        '  web: { command: unused, labels: [untrusted] }\n' +
        '  files: { command: unused, labels: [private] }\n' +
        '  mail: { command: unused, labels: [egress] }\n',
      upstreams: {
        web: recorder(received.web),
        files: recorder(received.files),
        mail: recorder(received.mail),
      },
      client: { capabilities: { elicitation: { form: {} } } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(request.params.message);
          return { action: answer };
        }),
    });
  }

  it('asks before the call that completes untrusted + private + egress; declined, it never reaches the server', async () => {
    await start('decline');
    await call('web__echo', 'page');
    await call('files__echo', 'secret');
    const refused = await call('mail__echo', 'exfiltrate');
    expect(refused.isError).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('lethal trifecta');
    expect(asked[0]).toContain('server "web"');
    expect(asked[0]).toContain('server "files"');
    expect(received.mail).toEqual([]);
    // The refused call's record carries the decision and the calls that made it risky.
    const mail = running!.auditRecords().find((r) => r['type'] === 'call' && r['tool'] === 'mail__echo');
    expect(mail?.['flow']).toMatchObject({ labels: ['egress'], trifecta: 'confirm' });
    expect((mail?.['flow'] as { lineage?: unknown[] }).lineage).toHaveLength(2);
  });

  it('private then egress, nothing untrusted read: no question', async () => {
    await start('decline');
    await call('files__echo');
    expect(textOf(await call('mail__echo', 'report'))).toBe('report');
    expect(asked).toEqual([]);
    expect(received.mail).toEqual(['report']);
  });

  it('deny mode refuses without asking, saying why', async () => {
    await start('accept', 'flow: { trifecta: deny }\n');
    await call('web__echo');
    await call('files__echo');
    const refused = await call('mail__echo', 'x');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/trifecta/i);
    expect(asked).toEqual([]);
    expect(received.mail).toEqual([]);
  });
});

describe('result guardrails, in-process', () => {
  const AWS_KEY = 'AKIA' + 'Z7QW4RTXKJ2M8N5P';

  it('redacts a secret in text and in structuredContent, and passes a clean result byte for byte', async () => {
    const received: string[] = [];
    running = await each.inProcess({
      config:
        'guardrails: { secrets: redact }\naudit: { file: ./audit.jsonl }\nservers:\n  s: { command: unused }\n',
      upstreams: {
        s: recorder(received, (text) =>
          text === 'leak'
            ? {
                content: [{ type: 'text', text: `key ${AWS_KEY} here` }],
                structuredContent: { key: AWS_KEY },
              }
            : { content: [{ type: 'text', text: `clean ${text}` }] },
        ),
      },
    });
    const leaked = await call('s__echo', 'leak');
    expect(JSON.stringify(leaked)).not.toContain(AWS_KEY);
    expect(textOf(leaked)).toMatch(/key \[redacted:[a-z-]+\] here/);
    expect(running.auditRecords().some((r) => r['type'] === 'result_guarded')).toBe(true);

    const before = running.hostLines().length;
    expect(textOf(await call('s__echo', 'fine'))).toBe('clean fine');
    // The clean answer reached the host as the server wrote it (same text inside the frame).
    const answer = running
      .hostLines()
      .slice(before)
      .find((line) => line.includes('clean fine'));
    expect(answer).toContain('"content":[{"type":"text","text":"clean fine"}]');
  });

  it('blocks the result when told to, without losing the call', async () => {
    running = await each.inProcess({
      config: 'guardrails: { secrets: block }\nservers:\n  s: { command: unused }\n',
      upstreams: {
        s: recorder([], () => ({ content: [{ type: 'text', text: `key ${AWS_KEY}` }] })),
      },
    });
    const blocked = await call('s__echo', 'leak');
    expect(blocked.isError).toBe(true);
    expect(JSON.stringify(blocked)).not.toContain(AWS_KEY);
  });
});

describe('rate limits, in-process', () => {
  it('refuses the call past the burst, unrun, saying when to retry; other tools are not limited', async () => {
    const received: string[] = [];
    running = await each.inProcess({
      config:
        "rateLimits:\n  - { server: s, tool: 'echo', rate: 2/hour, burst: 2 }\n" +
        'audit: { file: ./audit.jsonl }\nservers:\n  s: { command: unused }\n',
      upstreams: { s: recorder(received) },
    });
    await call('s__echo', 'one');
    await call('s__echo', 'two');
    const refused = await call('s__echo', 'three');
    expect(refused.isError).toBe(true);
    const retryAfter = (refused._meta as Record<string, unknown> | undefined)?.['mcp-warden/retryAfter'];
    expect(typeof retryAfter).toBe('number');
    expect(retryAfter as number).toBeGreaterThan(0);
    expect(received).toEqual(['one', 'two']);
    const records = running.auditRecords().filter((r) => r['type'] === 'rate_limited');
    expect(records).toHaveLength(1);
  });
});

describe('tool search, in-process', () => {
  it('lists search_tools and call_tool in search mode; a found tool is called through the pipeline', async () => {
    const received: string[] = [];
    running = await each.inProcess({
      config:
        'catalog: { mode: search }\naudit: { file: ./audit.jsonl }\nservers:\n  notes: { command: unused }\n',
      upstreams: {
        notes: () => {
          const server = new McpServer({ name: 'notes', version: '1' });
          server.registerTool(
            'append_note',
            { description: 'Append a line to the shared meeting notes', inputSchema: { text: z.string() } },
            ({ text }) => {
              received.push(text);
              return { content: [{ type: 'text', text: 'noted' }] };
            },
          );
          server.registerTool('list_notes', { description: 'List every note' }, () => ({
            content: [{ type: 'text', text: '[]' }],
          }));
          return server;
        },
      },
    });
    const { client } = running;
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(['call_tool', 'search_tools']);
    const found = await client.callTool({
      name: 'search_tools',
      arguments: { query: 'add to meeting notes' },
    });
    expect(textOf(found)).toContain('notes__append_note');
    const result = await client.callTool({
      name: 'call_tool',
      arguments: { name: 'notes__append_note', arguments: { text: 'agenda item' } },
    });
    expect(textOf(result)).toBe('noted');
    expect(received).toEqual(['agenda item']);
    // The audit trail names the real tool, not the search wrapper.
    const calls = running.auditRecords().filter((r) => r['type'] === 'call');
    expect(calls.map((r) => r['tool'])).toContain('notes__append_note');
  });
});
