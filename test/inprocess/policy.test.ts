/**
 * Policy and human confirmation served in-process (`startServing` on the config file, the real
 * recording fixture upstream), with the SDK Client as host. The fixture's record proves what
 * never reached it. Start-up refusing an invalid policy and the `check` and `policy explain`
 * commands stay with the built binary in test/integration/policy.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { NODE, textOf, type HostSession } from '../integration/harness.js';
import { POLICY, setup } from '../integration/policyScenario.js';
import { servedPerTest } from './perTest.js';

let host: HostSession | undefined;
const each = servedPerTest();

/** A round trip after which everything sent earlier has reached (and been recorded by) the fixture. */
async function sync(h: HostSession): Promise<void> {
  await h.client.callTool({ name: 'up__add', arguments: { a: 1, b: 1 } });
}

describe('deny', () => {
  it('hides unconditionally denied tools, and a call to one is refused with the reason and rule, never reaching the upstream', async () => {
    const { config, calls } = setup();
    host = await each.connect(config);
    const names = (await host.client.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('up__crash');
    expect(names).toContain('up__env'); // denied only for some arguments: still listed

    const result = await host.client.callTool({ name: 'up__crash', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      '[mcp-warden] Crashing the server is not allowed. (policy rule "no-crash", policy.yaml) The call to tool "crash" on server "up" was not run.',
    );
    await sync(host);
    expect(calls('crash')).toEqual([]);
  });

  it('denies by argument condition, and allows the same tool otherwise', async () => {
    const { config, calls } = setup();
    host = await each.connect(config);
    const denied = await host.client.callTool({ name: 'up__env', arguments: { name: 'MY_SECRET_KEY' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('Secrets stay secret. (policy rule "no-secret-env", policy.yaml)');
    const allowed = await host.client.callTool({ name: 'up__env', arguments: { name: 'HOME' } });
    expect(allowed.isError).toBeFalsy();
    await sync(host);
    expect(calls('env').map((c) => c.params?.arguments)).toEqual([{ name: 'HOME' }]);
  });
});

describe('confirmation through the host (elicitation)', () => {
  function hostAnswering(config: string, answer: (message: string) => object | Promise<object>) {
    const asked: string[] = [];
    return {
      asked,
      connect: () =>
        each.connect(config, {
          capabilities: { elicitation: {} },
          beforeConnect: (client) =>
            client.setRequestHandler(ElicitRequestSchema, (request) => {
              const message = (request.params as { message: string }).message;
              asked.push(message);
              return answer(message) as never;
            }),
        }),
    };
  }

  it('accepted: the call runs once, with the arguments shown', async () => {
    const { config, calls } = setup();
    const h = hostAnswering(config, () => ({ action: 'accept', content: { remember: false } }));
    host = await h.connect();
    const result = await host.client.callTool({
      name: 'up__echo',
      arguments: { text: 'approved', token: 'sk-abcdefghijklmnopqrstuv123456' },
    });
    expect(textOf(result)).toBe('approved');
    expect(h.asked).toHaveLength(1);
    expect(h.asked[0]).toContain('Server "up" wants to run tool "echo"');
    expect(h.asked[0]).toContain('"text": "approved"');
    expect(h.asked[0]).toContain('Echo needs a human.');
    // The question shows arguments redacted; the upstream gets them as the host sent them.
    expect(h.asked[0]).not.toContain('sk-abcdefghijklmnopqrstuv123456');
    await sync(host);
    expect(calls('echo').map((c) => c.params?.arguments)).toEqual([
      { text: 'approved', token: 'sk-abcdefghijklmnopqrstuv123456' },
    ]);
  });

  it.each([
    ['declined', { action: 'decline' }],
    ['cancelled', { action: 'cancel' }],
  ])('%s: not run, and the model is told', async (_label, answer) => {
    const { config, calls } = setup();
    host = await hostAnswering(config, () => answer).connect();
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'no' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      '[mcp-warden] Declined by the user (asked through the host): tool "echo" on server "up" was not run.',
    );
    await sync(host);
    expect(calls('echo')).toEqual([]);
  });

  it('remember for this session: asked once', async () => {
    const { config, calls } = setup();
    const h = hostAnswering(config, () => ({ action: 'accept', content: { remember: true } }));
    host = await h.connect();
    for (const text of ['one', 'two']) {
      expect(textOf(await host.client.callTool({ name: 'up__echo', arguments: { text } }))).toBe(text);
    }
    expect(h.asked).toHaveLength(1);
    await sync(host);
    expect(calls('echo')).toHaveLength(2);
  });

  it('no answer in time means no', async () => {
    const { config, calls } = setup({ confirmation: { timeout: '300ms' } });
    host = await hostAnswering(config, () => new Promise(() => {})).connect();
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'late' } });
    expect(textOf(result)).toBe(
      '[mcp-warden] No confirmation from the user (asked through the host) within 300ms for tool "echo" on server "up", so it was not run.',
    );
    await sync(host);
    expect(calls('echo')).toEqual([]);
  });

  it('a host cancellation while asking withdraws the question and runs nothing', async () => {
    const { config, calls } = setup();
    let withdrawn!: () => void;
    const questionWithdrawn = new Promise<void>((resolve) => (withdrawn = resolve));
    let asked!: () => void;
    const questionAsked = new Promise<void>((resolve) => (asked = resolve));
    host = await each.connect(config, {
      capabilities: { elicitation: {} },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
          asked();
          return new Promise((_resolve, reject) =>
            extra.signal.addEventListener('abort', () => {
              withdrawn();
              reject(new Error('withdrawn'));
            }),
          );
        }),
    });
    const controller = new AbortController();
    const call = host.client.callTool({ name: 'up__echo', arguments: { text: 'x' } }, undefined, {
      signal: controller.signal,
    });
    await questionAsked;
    controller.abort('changed my mind');
    await expect(call).rejects.toThrow();
    await questionWithdrawn;
    await sync(host);
    expect(calls('echo')).toEqual([]);
  });
});

describe('confirmation without a way to ask', () => {
  it('fails closed, telling the user how to enable confirmation', async () => {
    const { config, calls } = setup();
    host = await each.connect(config); // no elicitation capability, no command
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(
      'needs confirmation (Echo needs a human. (policy rule "ask-echo", policy.yaml))',
    );
    expect(textOf(result)).toContain('set confirmation.command in the mcp-warden config');
    await sync(host);
    expect(calls('echo')).toEqual([]);
  });
});

describe('confirmation by command hook', () => {
  // Approves when the call's text argument is "yes"; never answers when it is "hang".
  const HOOK = `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const c=JSON.parse(s);if(c.arguments.text==='hang')setInterval(()=>{},1e9);else process.exit(c.arguments.text==='yes'&&c.server==='up'&&c.tool==='echo'?0:1)})`;

  it.each([
    ['yes', false],
    ['no', true],
  ])('exit code decides: text %s', async (text, denied) => {
    const { config, calls } = setup({
      confirmation: { methods: ['command'], command: { command: NODE, args: ['-e', HOOK] } },
    });
    host = await each.connect(config);
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text } });
    expect(Boolean(result.isError)).toBe(denied);
    if (denied) expect(textOf(result)).toContain('Declined by the confirmation command');
    await sync(host);
    expect(calls('echo')).toHaveLength(denied ? 0 : 1);
  });

  it('a hook that does not answer in time means no', async () => {
    const { config, calls } = setup({
      confirmation: {
        methods: ['command'],
        timeout: '300ms',
        command: { command: NODE, args: ['-e', HOOK] },
      },
    });
    host = await each.connect(config);
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'hang' } });
    expect(textOf(result)).toContain('No confirmation from the confirmation command');
    await sync(host);
    expect(calls('echo')).toEqual([]);
  });
});

describe('hot reload', () => {
  it('a good change takes effect and the host is told; a bad one is rejected and the last good one stays', async () => {
    const { config, policyFile } = setup();
    host = await each.connect(config);
    expect((await host.client.listTools()).tools.map((t) => t.name)).not.toContain('up__crash');
    let changed!: () => void;
    const listChanged = new Promise<void>((resolve) => (changed = resolve));
    host.client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());

    writeFileSync(
      policyFile,
      POLICY.replace('action: deny\n    reason: Crashing', 'action: allow\n    reason: Crashing'),
    );
    await listChanged;
    expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('up__crash');

    writeFileSync(policyFile, 'default: allow\nrules:\n  - id: broken\n    mach: {}\n    action: deny\n');
    await host.waitForStderr('a policy change was rejected; the previous policies stay in force');
    expect(host.stderr()).toContain(
      `${policyFile}:4:5: rules[0].mach: unknown key "mach" (did you mean "match"?)`,
    );
    // Still the good version: env with a secret name is denied, crash is listed.
    const denied = await host.client.callTool({ name: 'up__env', arguments: { name: 'SECRET' } });
    expect(denied.isError).toBe(true);
    expect((await host.client.listTools()).tools.map((t) => t.name)).toContain('up__crash');
  });
});
