/**
 * Answers no peer should give, met with a clear message: an upstream's `result: null`, a host
 * answering a confirmation with `result: null` (fails closed, saying why), and upstream
 * notifications named like members every object inherits. Served in-process
 * (test/inprocess/served.ts), with the fixture server as a real process.
 */
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  FAST_GATEWAY,
  fixture,
  initialize,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

let host: HostSession | undefined;
const each = servedPerTest();

describe('odd answers', () => {
  it('an upstream result of null fails the call naming the server and the method', async () => {
    const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture(['--tools', 'basic,odd']) } });
    host = await each.connect(config);
    const result = await host.client.callTool({ name: 'up__null_result', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      '[mcp-warden] Upstream server "up" failed: answered tools/call with a null result, not an object',
    );
  });

  it.each(['constructor', '__proto__', 'toString'])(
    'an upstream notification named %s is ignored quietly',
    async (method) => {
      const config = writeConfig({
        gateway: FAST_GATEWAY,
        servers: { up: fixture(['--tools', 'basic,odd']) },
      });
      host = await each.connect(config);
      const notified = await host.client.callTool({ name: 'up__notify', arguments: { method } });
      expect(textOf(notified)).toBe('notified');
      // The fixture answers in order: once a later call is answered, the notification was handled.
      expect(textOf(await host.client.callTool({ name: 'up__echo', arguments: { text: 'after' } }))).toBe(
        'after',
      );
      await host.client.ping();
      expect(host.stderr()).not.toContain('unhandled rejection');
      expect(host.stderr()).not.toContain('could not refresh');
    },
  );

  it('a confirmation answered with result: null fails closed, saying why', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'default: allow\nrules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n',
    );
    const s = await each.raw(
      writeConfig({ gateway: FAST_GATEWAY, policies: ['policy.yaml'], servers: { up: fixture() } }, dir),
    );
    await initialize(s, { elicitation: {} });
    const asked = s.next((m) => m.method === 'elicitation/create');
    const answered = s.next((m) => m.id === 'c');
    s.send(
      '{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"}}}',
    );
    const question = await asked;
    s.send(JSON.stringify({ jsonrpc: '2.0', id: question.id, result: null }));
    const answer = (await answered) as { result?: { isError?: boolean; content: { text: string }[] } };
    expect(answer.result?.isError).toBe(true);
    expect(answer.result?.content[0]?.text).toContain(
      'The host answered the confirmation request for tool "echo" on server "up" with a null result, not an elicitation result',
    );
  });
});
