/**
 * Complete mediation through the built binary, with the SDK Client as host and the real
 * server-everything as upstream: resources, prompts and the requests a server makes of the host
 * are decided by policy and the config, and recorded, as tool calls are.
 */
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  NODE,
  ROOT,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
  readAudit,
} from './harness.js';

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

describe('under the shipped locked-down-org.yaml', () => {
  it("refuses and records an unapproved server's resources and prompts, and lists none of them", async () => {
    const dir = tempDir();
    copyFileSync(path.join(ROOT, 'policies/locked-down-org.yaml'), path.join(dir, 'org.yaml'));
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: ['./org.yaml'],
        audit: { file: './audit.jsonl' },
        servers: { everything: { command: NODE, args: [serverBin('everything')] } },
      },
      dir,
    );
    host = await connectHost(config);
    expect((await host.client.listResources()).resources).toEqual([]);
    expect((await host.client.listResourceTemplates()).resourceTemplates).toEqual([]);
    expect((await host.client.listPrompts()).prompts).toEqual([]);
    expect((await host.client.listTools()).tools).toEqual([]);

    await expect(
      host.client.readResource({ uri: 'demo://resource/static/document/architecture.md' }),
    ).rejects.toThrow(/not on the organisation's approved list.*policy rule "not-approved"/s);
    await expect(host.client.getPrompt({ name: 'everything__simple-prompt' })).rejects.toThrow(
      /not-approved/,
    );

    const requests = readAudit(path.join(dir, 'audit.jsonl')).filter((r) => r.type === 'request');
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
    host = await connectHost(config, {
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

  it('a server refused sampling in the config is never told the host can sample', async () => {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { everything: { command: NODE, args: [serverBin('everything')], sampling: false } },
    });
    host = await connectHost(config, {
      capabilities: { sampling: {}, elicitation: { form: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(CreateMessageRequestSchema, () => ({
          role: 'assistant',
          content: { type: 'text', text: 'x' },
          model: 'm',
        })),
    });
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    // server-everything offers its sampling tool only to clients that can sample.
    expect(names).toContain('everything__trigger-elicitation-request');
    expect(names).not.toContain('everything__trigger-sampling-request');
  });
});
