/** What the audit shipping tests share: a bounded poll, and a gateway whose trail has sinks. */
import path from 'node:path';
import { expect } from 'vitest';
import { FAST_GATEWAY, fixture, initialize, rawSession, tempDir, writeConfig } from './harness.js';

/** Polls `check` (a file another process writes, a log line) until true; fails after `ms`. */
export async function until(what: string, check: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A gateway with `sinks` in its audit section; `callOnce` makes one echo call and awaits its answer. */
export async function gatewayWithSinks(sinks: object[], dir = tempDir()) {
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: './audit.jsonl', sinks },
      servers: { up: fixture() },
    },
    dir,
  );
  const s = rawSession(config);
  await initialize(s);
  let id = 0;
  const callOnce = async () => {
    const n = ++id;
    const answer = s.next((m) => m.id === n);
    s.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: n,
        method: 'tools/call',
        params: { name: 'up__echo', arguments: { text: `call ${n}` } },
      }),
    );
    expect((await answer).error).toBeUndefined();
  };
  return { s, file: path.join(dir, 'audit.jsonl'), callOnce };
}
