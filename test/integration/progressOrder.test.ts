/**
 * A request's last progress reaches the host before its result. Hosts built on the TypeScript
 * SDK handle a notification a microtask after a response that arrives in the same read, and
 * drop progress for a request already answered; so a gateway that merely writes the two in
 * order still loses the last progress whenever they reach the host together. Counted over many
 * calls in one session, through the gateway and on a direct connection to the same server.
 * Through the built binary: what is tested is how the host's reads of a pipe join the two
 * (served in-process, over a stream in memory, they arrive apart). How the gateway treats a
 * host that never answers its ping is tested in-process, in test/inprocess/progressOrder.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import path from 'node:path';
import { connectHost, FAST_GATEWAY, FIXTURE, NODE, ROOT, serverBin, writeConfig, textOf } from './harness.js';

const TASK_SERVER = path.join(ROOT, 'test/fixtures/task-server.mjs');

const CALLS = 200;
const STEPS = 3;

interface Upstream {
  readonly args: string[];
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
}

/** Pauses 2 ms after each step, the last one included, so its progress and result come apart. */
const SPACED: Upstream = {
  args: [FIXTURE],
  tool: 'progress',
  arguments: { steps: STEPS, delayMs: 2 },
};
/** Writes the last progress and the result back to back. */
const BACK_TO_BACK: Upstream = {
  args: [serverBin('everything')],
  tool: 'trigger-long-running-operation',
  arguments: { duration: 0.003, steps: STEPS },
};

/** Makes `CALLS` calls one after another; returns how many missed their last progress. */
async function countLost(client: Client, upstream: Upstream, prefix: string): Promise<number> {
  let lost = 0;
  for (let call = 0; call < CALLS; call += 1) {
    let last = 0;
    await client.callTool({ name: prefix + upstream.tool, arguments: upstream.arguments }, undefined, {
      onprogress: (p) => (last = Math.max(last, p.progress)),
    });
    if (last !== STEPS) lost += 1;
  }
  return lost;
}

async function direct(upstream: Upstream): Promise<Client> {
  const client = new Client({ name: 'direct-host', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: NODE, args: upstream.args, stderr: 'pipe' }));
  return client;
}

function report(what: string, lost: number): void {
  process.stderr.write(`progress order: ${what} lost the last progress on ${lost} of ${CALLS} calls\n`);
}

describe('progress before result', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  async function throughGateway(upstream: Upstream): Promise<number> {
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { up: { command: NODE, args: upstream.args } },
    });
    const host = await connectHost(config);
    closers.push(() => host.close());
    return countLost(host.client, upstream, 'up__');
  }

  it('a server that pauses after its last progress: none lost through the gateway', async () => {
    const client = await direct(SPACED);
    closers.push(() => client.close());
    const directLost = await countLost(client, SPACED, '');
    // Direct, the host's own reads decide (a busy machine can still join the two): recorded.
    report('direct (spaced)', directLost);
    const gatewayLost = await throughGateway(SPACED);
    report('the gateway (spaced)', gatewayLost);
    expect(gatewayLost).toBe(0);
  });

  it('a server that answers right after its last progress: none lost through the gateway', async () => {
    const client = await direct(BACK_TO_BACK);
    closers.push(() => client.close());
    // Direct, the host's own read loop decides; counted for the record, not asserted.
    report('direct (back to back)', await countLost(client, BACK_TO_BACK, ''));
    const gatewayLost = await throughGateway(BACK_TO_BACK);
    report('the gateway (back to back)', gatewayLost);
    expect(gatewayLost).toBe(0);
  });

  it('a task the gateway runs for a host without tasks: its last status reaches the host', async () => {
    // The last status (the task done) is told as progress just before `tasks/result`, which a
    // finished task answers at once: progress and answer leave the gateway moments apart.
    const config = writeConfig({
      gateway: FAST_GATEWAY,
      servers: { up: { command: NODE, args: [TASK_SERVER, '--task-ms', '1'] } },
    });
    const host = await connectHost(config);
    closers.push(() => host.close());
    const calls = 30;
    let lost = 0;
    for (let call = 0; call < calls; call += 1) {
      let last = '';
      const result = await host.client.callTool(
        { name: 'up__required-work', arguments: { n: call } },
        undefined,
        { onprogress: (p) => (last = p.message ?? '') },
      );
      expect(textOf(result)).toContain(`"total":${call * 2}`);
      if (last !== 'done') lost += 1;
    }
    process.stderr.write(`progress order: a driven task lost its last status on ${lost} of ${calls} calls\n`);
    expect(lost).toBe(0);
  });
});
