/**
 * Every kind of routed request passes the one pipeline: through the built binary, with the SDK
 * Client as host and the real server-everything as upstream, a resource read, a prompt, a
 * completion and an elicitation the upstream asks of the host each leave an audit record that
 * says what was asked, of which server, and how it ended.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  NODE,
  runCli,
  serverBin,
  tempDir,
  writeConfig,
  type HostSession,
} from './harness.js';

type AuditRecord = Record<string, unknown> & { type: string };

describe('every routed request kind is audited', () => {
  let host: HostSession;
  let file: string;
  const elicited: unknown[] = [];

  beforeAll(async () => {
    const dir = tempDir();
    file = path.join(dir, 'audit.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        servers: { everything: { command: NODE, args: [serverBin('everything')] } },
      },
      dir,
    );
    host = await connectHost(config, {
      capabilities: { elicitation: { form: {} } },
      beforeConnect: (client) => {
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          elicited.push(request.params);
          return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
        });
      },
    });
  });
  afterAll(async () => {
    await host?.close();
  });

  /** The records written so far (each is written before its answer reaches the host). */
  const records = (): AuditRecord[] =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditRecord);
  const requests = (method: string) => records().filter((r) => r.type === 'request' && r.method === method);

  it('records a resource read, with the URI it read', async () => {
    const { resources } = await host.client.listResources();
    const uri = resources[0]!.uri;
    const read = await host.client.readResource({ uri });
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
    const prompt = await host.client.getPrompt({
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
    const completion = await host.client.complete({
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
    const result = await host.client.callTool({
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
    const { code, stdout } = await runCli(['audit', 'verify', file]);
    expect(stdout).toContain('ok');
    expect(code).toBe(0);
  });
});
