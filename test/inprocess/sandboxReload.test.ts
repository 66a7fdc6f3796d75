/**
 * A sandboxed server's grants follow edits while serving, served in-process (`startServing` on
 * the config file and its watcher): its own `sandbox:`, the gateway's default, and (for
 * `sandbox: auto`) the policy its grants derive from. The server restarts with the new grants;
 * the probe server shows what it may write.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FAST_GATEWAY, NODE, tempDir, textOf, type HostSession } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const PROBE = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sandbox-probe.mjs');
const installed = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const canSandbox = process.platform === 'linux' && ['bwrap', 'socat'].every(installed);

let host: HostSession | undefined;
const each = servedPerTest();

/** Two folders, `work` and `more`, and a config written by `write(work, more)`. */
function folders() {
  const dir = tempDir('warden-sandbox-reload-');
  const work = path.join(dir, 'work');
  const more = path.join(dir, 'more');
  mkdirSync(work);
  mkdirSync(more);
  return { dir, work, more, file: path.join(dir, 'proxy.config.json') };
}

const write = async (file: string) =>
  textOf(await host!.client.callTool({ name: 'boxed__write', arguments: { path: file } }));

/** Waits until `boxed` has connected `n` times: at start, and again after each restart. */
const connected = (n: number) =>
  host!.waitForStderr(new RegExp(`(\\[boxed\\]: connected[^]*){${n}}`), 20_000);

describe.skipIf(!canSandbox)('sandbox grants changed while serving', () => {
  it('a changed gateway.sandbox default restarts the server with the new grants', async () => {
    const { work, more, file } = folders();
    const config = (folders: string[]) =>
      JSON.stringify({
        gateway: { ...FAST_GATEWAY, sandbox: { filesystem: { write: folders }, network: false } },
        servers: { boxed: { command: NODE, args: [PROBE] } },
      });
    writeFileSync(file, config([work]));
    host = await each.connect(file);
    await connected(1);
    expect(await write(path.join(work, 'a'))).toMatch(/^ok/);
    expect(await write(path.join(more, 'b'))).toMatch(/^refused: E/);

    writeFileSync(file, config([work, more]));
    await host.waitForStderr(/reloaded: restarted boxed \(entry changed\)/);
    await connected(2);
    expect(await write(path.join(more, 'b'))).toMatch(/^ok/);
  }, 90_000);

  it('sandbox: auto: a policy edit that allows another folder restarts the server with it', async () => {
    const { dir, work, more, file } = folders();
    const policy = (folders: string[]) =>
      `rules:\n  - id: boxed-folders\n    match: { server: boxed, paths: { under: ${JSON.stringify(folders)} } }\n    action: allow\n`;
    writeFileSync(path.join(dir, 'policy.yaml'), policy([work]));
    writeFileSync(
      file,
      JSON.stringify({
        gateway: FAST_GATEWAY,
        policies: ['policy.yaml'],
        servers: { boxed: { command: NODE, args: [PROBE], sandbox: 'auto' } },
      }),
    );
    host = await each.connect(file);
    await connected(1);
    expect(await write(path.join(work, 'a'))).toMatch(/^ok/);
    expect(await write(path.join(more, 'b'))).toMatch(/^refused: E/);

    writeFileSync(path.join(dir, 'policy.yaml'), policy([work, more]));
    await host.waitForStderr(/server "boxed": the policies changed what its sandbox grants; restarting it/);
    await connected(2);
    expect(await write(path.join(more, 'b'))).toMatch(/^ok/);
  }, 90_000);
});
