/**
 * Policy reload in-process: the real files and their watcher, the gateway and an echo upstream
 * over memory. A policy folder renamed away and replaced, and the rules an engine remembers per
 * tool replaced with the policy. The folder deleted and created again, and a file written in two
 * steps, are served from the config file in test/inprocess/policyReloadServed.test.ts.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { textOf } from '../integration/harness.js';
import type { InProcessGateway } from './harness.js';
import { ALLOW_ALL, NO_ECHO, version } from '../integration/policyTexts.js';
import { servedPerTest } from './perTest.js';

let running: InProcessGateway | undefined;
const each = servedPerTest();

async function start(policy: string) {
  let echoes = 0;
  const upstream = () => {
    const server = new McpServer({ name: 'up', version: '1' });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => {
      echoes++;
      return { content: [{ type: 'text', text }] };
    });
    return server;
  };
  running = await each.inProcess({
    config:
      'policies: [policies/main.yaml]\naudit: { file: ./audit.jsonl }\nservers:\n  up: { command: unused }\n',
    files: { 'policies/main.yaml': policy },
    upstreams: { up: upstream },
  });
  const gateway = running;
  return {
    gateway,
    policies: path.join(gateway.dir, 'policies'),
    call: (text: string) => gateway.client.callTool({ name: 'up__echo', arguments: { text } }),
    echoes: () => echoes,
    /** Waits for the log to say that `text` is the policy in force. */
    inForce: (text: string) =>
      expect.poll(() => gateway.log.join('\n')).toContain(`in force: main.yaml sha256:${version(text)}`),
  };
}

describe('the policy folder replaced', () => {
  it('renamed away and replaced by another folder: the new policy is loaded', async () => {
    const { gateway, policies, call, echoes, inForce } = await start(ALLOW_ALL);
    const staged = path.join(gateway.dir, 'policies.new');
    mkdirSync(staged);
    writeFileSync(path.join(staged, 'main.yaml'), NO_ECHO);
    renameSync(policies, path.join(gateway.dir, 'policies.old'));
    renameSync(staged, policies);
    await inForce(NO_ECHO);
    const denied = await call('after');
    expect(denied.isError).toBe(true);
    expect(echoes()).toBe(0);

    // And the new folder is watched in turn.
    writeFileSync(path.join(policies, 'main.yaml'), ALLOW_ALL);
    await inForce(ALLOW_ALL);
    expect(textOf(await call('again'))).toBe('again');
  });
});

describe("a tool's rules remembered between calls", () => {
  it('are those of the policy in force: a reload that changes them changes the next decision', async () => {
    // The engine remembers, per tool, which rules can match its calls and what each decides;
    // the first calls fill that in for echo under the first policy.
    const first = `default: deny
rules:
  - id: no-secret
    match: { tool: echo, arguments: { properties: { text: { const: secret } } } }
    action: deny
    reason: No secrets.
  - id: echo-ok
    match: { tool: echo }
    action: allow
`;
    const second = `default: allow
rules:
  - id: secret-ok
    match: { tool: echo, arguments: { properties: { text: { const: secret } } } }
    action: allow
  - id: echo-off
    match: { tool: echo }
    action: deny
    reason: Echo is off for now.
`;
    const { policies, call, echoes, inForce } = await start(first);
    expect(textOf(await call('plain'))).toBe('plain');
    const secret = await call('secret');
    expect(secret.isError).toBe(true);
    expect(textOf(secret)).toContain('No secrets.');
    expect(textOf(await call('plain again'))).toBe('plain again');

    writeFileSync(path.join(policies, 'main.yaml'), second);
    await inForce(second);
    const plain = await call('plain');
    expect(plain.isError).toBe(true);
    expect(textOf(plain)).toContain('Echo is off for now.');
    expect(textOf(plain)).toContain('echo-off');
    expect(textOf(await call('secret'))).toBe('secret');
    expect(echoes()).toBe(3);
  });
});
