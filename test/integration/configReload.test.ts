/**
 * Fifty quick edits of the config file while the built gateway serves: afterwards the gateway
 * process has exactly one child per server, so this counts the children of the binary's own
 * pid. The other config edit scenarios run in-process, in test/inprocess/configReload.test.ts.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  FIXTURE,
  isAlive,
  NODE,
  tempDir,
  textOf,
  type HostSession,
} from './harness.js';

const sessions: HostSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

/** A fixture server entry as YAML flow text; `flags` after the fixture path. */
function entry(flags: string[], extra = ''): string {
  return `{ command: ${JSON.stringify(NODE)}, args: ${JSON.stringify([FIXTURE, ...flags])}${extra} }`;
}

function pidOf(file: string): number {
  return Number(readFileSync(file, 'utf8').trim());
}

/** The processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && fields[0] !== 'Z') children.push(Number(name));
    } catch {
      // Gone while we looked.
    }
  }
  return children;
}

describe('fifty quick edits', () => {
  it('leave one process per server, running what the last edit says', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'proxy.config.yaml');
    const steadyFile = path.join(dir, 'steady.pid');
    const steady = entry(['--pid-file', steadyFile]);
    const write = (n: number) =>
      writeFileSync(
        file,
        `gateway: ${JSON.stringify(FAST_GATEWAY)}\naudit: { file: ./audit.jsonl }\nservers:\n` +
          `  steady: ${steady}\n  moving: ${entry([], `, env: { GENERATION: "${n}" }`)}\n`,
      );
    write(0);
    const host = await connectHost(file);
    sessions.push(host);
    await host.client.listTools();
    const steadyPid = pidOf(steadyFile);
    for (let n = 1; n <= 50; n++) write(n);

    await expect
      .poll(
        async () =>
          textOf(await host.client.callTool({ name: 'moving__env', arguments: { name: 'GENERATION' } })),
        {
          timeout: 15_000,
        },
      )
      .toBe('50');
    // Every replaced process is gone: the gateway has exactly its two servers as children.
    await expect.poll(() => childrenOf(host.pid).length, { timeout: 10_000 }).toBe(2);
    expect(pidOf(steadyFile)).toBe(steadyPid);
    expect(isAlive(steadyPid)).toBe(true);
  });
});
