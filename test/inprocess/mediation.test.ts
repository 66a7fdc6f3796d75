/**
 * Complete mediation in-process, with the SDK Client as host and the real server-everything as
 * upstream, both over memory: resources and prompts are decided by policy and recorded as tool
 * calls are, and what the config refuses a server is never offered to it. The requests a server
 * makes of the host are served as the binary serves them in test/inprocess/mediationServed.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../integration/harness.js';
import { everything, stopEverything } from './everything.js';
import type { InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

let running: InProcessGateway | undefined;
afterEach(async () => {
  stopEverything();
});
const each = servedPerTest();

describe('under the shipped locked-down-org.yaml', () => {
  it("refuses and records an unapproved server's resources and prompts, and lists none of them", async () => {
    running = await each.inProcess({
      config:
        'policies: [./org.yaml]\naudit: { file: ./audit.jsonl }\nservers:\n  everything: { command: unused }\n',
      files: { 'org.yaml': readFileSync(path.join(ROOT, 'policies/locked-down-org.yaml'), 'utf8') },
      upstreams: { everything },
    });
    const { client } = running;
    expect((await client.listResources()).resources).toEqual([]);
    expect((await client.listResourceTemplates()).resourceTemplates).toEqual([]);
    expect((await client.listPrompts()).prompts).toEqual([]);
    expect((await client.listTools()).tools).toEqual([]);

    await expect(
      client.readResource({ uri: 'demo://resource/static/document/architecture.md' }),
    ).rejects.toThrow(/not on the organisation's approved list.*policy rule "not-approved"/s);
    await expect(client.getPrompt({ name: 'everything__simple-prompt' })).rejects.toThrow(/not-approved/);

    const requests = running.auditRecords().filter((r) => r.type === 'request');
    expect(requests).toEqual([
      expect.objectContaining({
        method: 'resources/read',
        server: 'everything',
        outcome: 'denied',
        decision: { effect: 'deny', rule: 'not-approved' },
      }),
      expect.objectContaining({
        method: 'prompts/get',
        server: 'everything',
        target: 'simple-prompt',
        outcome: 'denied',
        decision: { effect: 'deny', rule: 'not-approved' },
      }),
    ]);
  });
});

describe('requests a server makes of the host', () => {
  it('a server refused sampling in the config is never told the host can sample', async () => {
    running = await each.inProcess({
      config: 'servers:\n  everything: { command: unused, sampling: false }\n',
      upstreams: { everything },
      client: { capabilities: { sampling: {}, elicitation: { form: {} } } },
      beforeConnect: (client) =>
        client.setRequestHandler(CreateMessageRequestSchema, () => ({
          role: 'assistant',
          content: { type: 'text', text: 'x' },
          model: 'm',
        })),
    });
    const names = (await running.client.listTools()).tools.map((t) => t.name);
    // server-everything offers its sampling tool only to clients that can sample.
    expect(names).toContain('everything__trigger-elicitation-request');
    expect(names).not.toContain('everything__trigger-sampling-request');
  });
});
