/**
 * Reloads in-process: the `labels:` and `guardrails:` entries of a policy file (the real file
 * and its watcher), and edits of the config file put in force by the same watcher the CLI runs
 * (`watchConfigWhileServing`), each applied to the next call; and managed settings that block a
 * server and then allow it again (`Gateway.applyManaged`). Rules of a policy file replaced are
 * in policyReload.test.ts; the same edits served from a config file (`startServing`) are in
 * flowReload.test.ts and configReload.test.ts here.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { watchConfigWhileServing } from '../../src/commands/configReload.js';
import { parseConfigText } from '../../src/config/load.js';
import { AWS_KEY } from '../fixtures/secretSamples.js';
import { textOf } from '../integration/harness.js';
import { version } from '../integration/policyTexts.js';
import { memoryLogger, type InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

/** What each server received, by server name. */
const received = new Map<string, string[]>();

function echoServer(name: string) {
  return () => {
    const server = new McpServer({ name, version: '1' });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => {
      received.set(name, [...(received.get(name) ?? []), text]);
      return { content: [{ type: 'text', text }] };
    });
    return server;
  };
}

const SERVERS = ['web', 'files', 'mail'] as const;

async function serve(config: string, files: Record<string, string> = {}) {
  received.clear();
  const listChanged: number[] = [];
  const running = await each.inProcess({
    config,
    files: { 'proxy.config.yaml': config, ...files },
    upstreams: Object.fromEntries(SERVERS.map((name) => [name, echoServer(name)])),
    beforeConnect: (client) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        listChanged.push(Date.now());
      }),
  });
  const call = async (tool: string, text = tool) =>
    running.client.callTool({ name: tool, arguments: { text } });
  return { running, call, listChanged };
}

/** Waits for the log to say that the policy file `name` with `text` is in force. */
const inForce = (running: InProcessGateway, name: string, text: string) =>
  expect.poll(() => running.log.join('\n')).toContain(`in force: ${name} sha256:${version(text)}`);

const servers = (names: readonly string[]) =>
  `servers:\n${names.map((n) => `  ${n}: { command: unused }\n`).join('')}`;

describe('a policy file edited while serving, in-process', () => {
  it('its guardrails entry applies to the next result', async () => {
    const before = 'default: allow\n';
    const { running, call } = await serve(`policies: [policy.yaml]\n${servers(['web'])}`, {
      'policy.yaml': before,
    });
    expect(textOf(await call('web__echo', AWS_KEY))).toBe(AWS_KEY);

    const after = `${before}guardrails:\n  - match: { server: web }\n    secrets: redact\n`;
    writeFileSync(path.join(running.dir, 'policy.yaml'), after);
    await inForce(running, 'policy.yaml', after);
    const redacted = await call('web__echo', AWS_KEY);
    expect(textOf(redacted)).toBe('[redacted:aws-access-key]');
    // The server answered the call both times; only what reached the host changed.
    expect(received.get('web')).toEqual([AWS_KEY, AWS_KEY]);
  });

  it('its labels entries apply to the next call: a call that completes the trifecta never reaches its server', async () => {
    const before = 'default: allow\nlabels:\n  - match: { server: web }\n    add: [untrusted]\n';
    const { running, call } = await serve(
      `flow: { trifecta: deny }\npolicies: [policy.yaml]\n${servers(SERVERS)}`,
      {
        'policy.yaml': before,
      },
    );
    await call('web__echo');
    await call('files__echo');
    expect(textOf(await call('mail__echo', 'free'))).toBe('free');

    const after = `${before}  - match: { server: files }\n    add: [private]\n  - match: { server: mail }\n    add: [egress]\n`;
    writeFileSync(path.join(running.dir, 'policy.yaml'), after);
    await inForce(running, 'policy.yaml', after);
    // `files` is private from now on: read it again, and `mail` completes the trifecta.
    await call('files__echo');
    const refused = await call('mail__echo', 'exfiltrate');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('trifecta');
    expect(received.get('mail')).toEqual(['free']);
  });
});

/** Serves `config` and watches its file as the CLI does; `edit` writes the file and reloads it now. */
async function serveWatched(config: string) {
  const served = await serve(config);
  const file = path.join(served.running.dir, 'proxy.config.yaml');
  const live = {
    text: config,
    config: parseConfigText(config, { file, env: {} }).config,
    managed: undefined,
  };
  const logger = memoryLogger(served.running.log);
  const watcher = each.track(
    watchConfigWhileServing({ live, gateway: served.running.gateway, logger, env: {} }),
  );
  return {
    ...served,
    edit: async (text: string) => {
      writeFileSync(file, text);
      await watcher.reload();
    },
  };
}

describe('the config file edited while serving, in-process', () => {
  it('a guardrails section added applies to the next call', async () => {
    const { call, edit } = await serveWatched(servers(['web']));
    expect(textOf(await call('web__echo', AWS_KEY))).toBe(AWS_KEY);

    await edit(`guardrails: { secrets: block }\n${servers(['web'])}`);
    const blocked = await call('web__echo', AWS_KEY);
    expect(blocked.isError).toBe(true);
    expect(textOf(blocked)).toContain('aws-access-key (content[0].text)');
    expect(textOf(blocked)).not.toContain(AWS_KEY);
    expect(received.get('web')).toEqual([AWS_KEY, AWS_KEY]);
  });

  it('argument validation turned on, a stage the pipeline was built without, applies to the next call', async () => {
    const { running, call, edit } = await serveWatched(
      `gateway: { validateArguments: false }\n${servers(['web'])}`,
    );
    const wrong = async () => {
      try {
        return textOf(await running.client.callTool({ name: 'web__echo', arguments: { text: 42 } }));
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(await wrong()).not.toContain('Invalid arguments for tool "echo" on server "web"');

    await edit(servers(['web']));
    // The gateway section changed, so the server starts again: its calls wait for that.
    await expect.poll(wrong).not.toContain('still starting');
    expect(await wrong()).toContain('Invalid arguments for tool "echo" on server "web"');
    expect(textOf(await call('web__echo', 'fine'))).toBe('fine');
  });

  it('a server added is started and listed, one removed leaves the list; the host is told each time', async () => {
    const { running, call, edit, listChanged } = await serveWatched(servers(['web']));
    const names = async () => (await running.client.listTools()).tools.map((t) => t.name).sort();
    expect(await names()).toEqual(['web__echo']);

    await edit(servers(['web', 'mail']));
    await expect.poll(() => listChanged.length).toBeGreaterThan(0);
    await expect.poll(names).toEqual(['mail__echo', 'web__echo']);
    expect(textOf(await call('mail__echo', 'hello'))).toBe('hello');
    expect(received.get('mail')).toEqual(['hello']);

    const told = listChanged.length;
    await edit(servers(['mail']));
    await expect.poll(() => listChanged.length).toBeGreaterThan(told);
    await expect.poll(names).toEqual(['mail__echo']);
    await expect(call('web__echo', 'late')).rejects.toThrow(/Unknown tool: web__echo/);
    expect(received.get('web')).toBeUndefined();
  });
});

describe('the managed settings edited while serving, in-process', () => {
  it('a server they now block is stopped and leaves the list; allowed again, it is back', async () => {
    const text = servers(['web', 'mail']);
    const { running, call, listChanged } = await serve(text);
    const file = path.join(running.dir, 'proxy.config.yaml');
    const configured = parseConfigText(text, { file, env: {} }).config.servers;
    const names = async () => (await running.client.listTools()).tools.map((t) => t.name).sort();
    expect(await names()).toEqual(['mail__echo', 'web__echo']);
    expect(textOf(await call('mail__echo', 'before'))).toBe('before');

    const blocked = configured.map((s) =>
      s.name === 'mail' ? { ...s, blockedByManaged: 'not in managed.yaml allowedServers' } : s,
    );
    await running.gateway.applyManaged({ policies: [], servers: blocked });
    await expect.poll(() => listChanged.length).toBeGreaterThan(0);
    await expect.poll(names).toEqual(['web__echo']);
    const refused = await call('mail__echo', 'during');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('not in managed.yaml allowedServers');
    expect(running.log.join('\n')).toContain('not in managed.yaml allowedServers');

    const told = listChanged.length;
    await running.gateway.applyManaged({ policies: [], servers: configured });
    await expect.poll(() => listChanged.length).toBeGreaterThan(told);
    await expect.poll(names).toEqual(['mail__echo', 'web__echo']);
    expect(textOf(await call('mail__echo', 'after'))).toBe('after');
    expect(received.get('mail')).toEqual(['before', 'after']);
  });
});
