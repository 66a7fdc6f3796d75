/**
 * Complete mediation served in-process (test/inprocess/served.ts: the same `startServing` as
 * `mcp-warden --config FILE`), with the SDK Client as host and the real server-everything as
 * upstream: the requests a server makes of the host are decided by policy and the config, and
 * recorded, as tool calls are. Resources, prompts and what the config refuses a server are
 * covered over in-memory upstreams (test/inprocess/mediation.test.ts).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { NODE, serverBin, tempDir, textOf, writeConfig, readAudit } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const served = servedPerTest();

describe('requests a server makes of the host', () => {
  it('are decided by policy and the config, named, and recorded', async () => {
    const dir = tempDir();
    const fixed = tempDir('warden-fixed-root-');
    const config = writeConfig(
      [
        `gateway: { startupTimeout: 5s, connectTimeout: 5s }`,
        `audit: { file: ./audit.jsonl }`,
        `policies: [./policy.yaml]`,
        `servers:`,
        `  everything:`,
        `    command: ${JSON.stringify(NODE)}`,
        `    args: [${JSON.stringify(serverBin('everything'))}]`,
        `    roots: [${JSON.stringify(fixed)}]`,
        '',
      ].join('\n'),
      dir,
    );
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'default: allow\nrules:\n  - id: no-sampling\n    match: { kind: sampling }\n    action: deny\n    reason: No model calls from servers here.\n',
    );
    const asked = { sampling: 0, roots: 0, elicitations: [] as string[] };
    const host = await served.connect(config, {
      capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } },
      beforeConnect: (client) => {
        client.setRequestHandler(CreateMessageRequestSchema, () => {
          asked.sampling++;
          return { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' };
        });
        client.setRequestHandler(ListRootsRequestSchema, () => {
          asked.roots++;
          return { roots: [{ uri: 'file:///host/workspace', name: 'host' }] };
        });
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.elicitations.push(request.params.message);
          return { action: 'decline' };
        });
      },
    });

    // Fixed roots: the server is told the config's folder, and the host is never asked.
    const roots = textOf(await host.client.callTool({ name: 'everything__get-roots-list', arguments: {} }));
    expect(roots).toContain(pathToFileURL(fixed).href);
    expect(roots).not.toContain('file:///host/workspace');
    expect(asked.roots).toBe(0);

    // A policy rule on sampling: the host is never asked, the server gets the refusal.
    await host.client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hi' } });
    expect(asked.sampling).toBe(0);

    // Elicitation: the user sees which server asks.
    await host.client.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
    expect(asked.elicitations).toEqual([expect.stringMatching(/^\[everything\] /)]);

    const requests = readAudit(path.join(dir, 'audit.jsonl')).filter((r) => r.type === 'request');
    expect(
      requests.map((r) => [r.method, r.direction, r.outcome, (r.decision as { rule: unknown }).rule]),
    ).toEqual(
      expect.arrayContaining([
        ['roots/list', 'to_host', 'ok', null],
        ['sampling/createMessage', 'to_host', 'denied', 'no-sampling'],
        ['elicitation/create', 'to_host', 'ok', null],
      ]),
    );
  });
});
