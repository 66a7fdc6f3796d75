/**
 * Every kind of routed request passes the one pipeline: in-process, with the SDK Client as host
 * and the real server-everything as upstream over memory, a resource read, a prompt, a
 * completion and an elicitation the upstream asks of the host each leave an audit record that
 * says what was asked, of which server, and how it ended; and the built CLI verifies the trail.
 */
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../integration/harness.js';
import { everything, stopEverything } from './everything.js';
import { type InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

type AuditRecord = Record<string, unknown> & { type: string };

describe('every routed request kind is audited', () => {
  let running: InProcessGateway;
  const elicited: unknown[] = [];

  beforeAll(async () => {
    running = await shared.inProcess({
      config: 'audit: { file: ./audit.jsonl }\nservers:\n  everything: { command: unused }\n',
      upstreams: { everything },
      client: { capabilities: { elicitation: { form: {} } } },
      beforeConnect: (client) => {
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          elicited.push(request.params);
          return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
        });
      },
    });
  });
  afterAll(async () => {
    stopEverything();
  });
  const shared = servedPerTest({ closeAfter: 'all' });
  /** The records written so far (each is written before its answer reaches the host). */
  const records = () => running.auditRecords() as AuditRecord[];
  const requests = (method: string) => records().filter((r) => r.type === 'request' && r.method === method);

  it('records a resource read, with the URI it read', async () => {
    const { resources } = await running.client.listResources();
    const uri = resources[0]!.uri;
    const read = await running.client.readResource({ uri });
    expect(read.contents.length).toBeGreaterThan(0);
    expect(requests('resources/read')).toEqual([
      expect.objectContaining({
        direction: 'to_upstream',
        server: 'everything',
        target: uri,
        outcome: 'ok',
        decision: { effect: 'allow', rule: null },
      }),
    ]);
  });

  it('records a prompt, with its arguments', async () => {
    const prompt = await running.client.getPrompt({
      name: 'everything__args-prompt',
      arguments: { city: 'Paris' },
    });
    expect(prompt.messages.length).toBeGreaterThan(0);
    expect(requests('prompts/get')).toEqual([
      expect.objectContaining({
        server: 'everything',
        target: 'args-prompt',
        args: { city: 'Paris' },
        outcome: 'ok',
      }),
    ]);
  });

  it('records a completion, naming the prompt it completes for', async () => {
    const completion = await running.client.complete({
      ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
      argument: { name: 'department', value: 'Eng' },
    });
    expect(completion.completion.values).toEqual(['Engineering']);
    expect(requests('completion/complete')).toEqual([
      expect.objectContaining({
        server: 'everything',
        target: 'completable-prompt',
        args: { name: 'department', value: 'Eng' },
        outcome: 'ok',
      }),
    ]);
  });

  it('records an elicitation the upstream asked of the host, naming the server that asked', async () => {
    const result = await running.client.callTool({
      name: 'everything__trigger-elicitation-request',
      arguments: {},
    });
    expect(result.isError).not.toBe(true);
    expect(elicited).toHaveLength(1);
    const [elicitation] = requests('elicitation/create');
    expect(elicitation).toMatchObject({ direction: 'to_host', server: 'everything', outcome: 'ok' });
    expect(elicitation!.args).toMatchObject({ message: 'Please provide inputs for the following fields:' });
    // The tool call around it is recorded too, after it: it ended after the question was answered.
    const all = records();
    const call = all.findIndex((r) => r.type === 'call' && r.upstreamTool === 'trigger-elicitation-request');
    expect(call).toBeGreaterThan(all.indexOf(elicitation!));
  });

  it('keeps the trail verifiable with the new records in it', async () => {
    const { code, stdout } = await runCli(['audit', 'verify', running.auditFile!]);
    expect(stdout).toContain('ok');
    expect(code).toBe(0);
  });
});
