/**
 * The built gateway keeps V8's code cache of its own code in the state folder
 * (src/lib/codeCache.ts): the first serving gateway writes it once its first call was answered,
 * the next start compiles from it. What the user sees: the debug log saying so, the file kept
 * safely, and a gateway that serves the same whatever state the file or its folder is in.
 */
import {
  chmodSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectHost, fixture, ROOT, tempDir, writeConfig, type HostSession } from './harness.js';
import { connectHttpHost, startHttpGateway } from './httpHarness.js';

const sessions: HostSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

function stateEnv(): { env: Record<string, string>; file: string } {
  const state = tempDir('warden-code-cache-');
  return { env: { XDG_STATE_HOME: state }, file: path.join(state, 'mcp-warden', 'code-cache.bin') };
}

const CONFIG = { servers: { fixture: fixture() }, gateway: { log: { level: 'debug' } } };

/** A session as a host makes it: list, then call; the gateway's stderr once it has ended. */
async function serveAndCall(
  env: Record<string, string>,
  options: { awaitWrite?: boolean; cli?: string } = {},
): Promise<string> {
  const host = await connectHost(writeConfig(CONFIG), {
    env,
    ...(options.cli !== undefined && { cli: options.cli }),
  });
  sessions.push(host);
  const { tools } = await host.client.listTools();
  expect(tools.map((t) => t.name)).toContain('fixture__echo');
  const result = await host.client.callTool({ name: 'fixture__echo', arguments: { text: 'hi' } });
  expect(result.isError).not.toBe(true);
  expect(JSON.stringify(result.content)).toContain('hi');
  if (options.awaitWrite === true) await host.waitForStderr(/code cache \S+ written \(\d+ KB\)/);
  const stderr = host.stderr();
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  return stderr;
}

/** Whether every chunk of our code this start compiled was taken from the cache by V8. */
function allFromCache(stderr: string): boolean {
  const [, from, of] = /: (\d+) of (\d+) chunks compiled from it/.exec(usedLine(stderr) ?? '') ?? [];
  return Number(of) > 10 && from === of;
}

function usedLine(stderr: string): string | undefined {
  return /code cache \S+(?: not used: [^\n]*|: \d+ of \d+ chunks compiled from it)/.exec(stderr)?.[0];
}

describe('code cache of our own code', () => {
  it('is written by the first serving gateway after its first call, and used by the next start', async () => {
    const { env, file } = stateEnv();
    const first = await serveAndCall(env, { awaitWrite: true });
    expect(usedLine(first)).toContain('not used: there is none');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const written = statSync(file).mtimeMs;

    const second = await serveAndCall(env);
    expect(usedLine(second)).toMatch(/: \d+ of \d+ chunks compiled from it/);
    expect(allFromCache(second)).toBe(true);
    // A cache V8 took whole is not written again.
    expect(second).not.toMatch(/code cache \S+ written/);
    expect(statSync(file).mtimeMs).toBe(written);
  });

  it('is written by a gateway serving only HTTP, after the first call of a listener session', async () => {
    const { env, file } = stateEnv();
    const gateway = await startHttpGateway(writeConfig(CONFIG), { env });
    try {
      const host = await connectHttpHost(gateway.url);
      try {
        const result = await host.client.callTool({ name: 'fixture__echo', arguments: { text: 'hi' } });
        expect(JSON.stringify(result.content)).toContain('hi');
        await gateway.waitForStderr(/code cache \S+ written \(\d+ KB\)/);
      } finally {
        await host.close();
      }
    } finally {
      await gateway.stop();
    }
    expect(usedLine(gateway.stderr())).toContain('not used: there is none');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(allFromCache(await serveAndCall(env))).toBe(true);
  });

  it('ignores a damaged file, serves, and replaces it', async () => {
    const { env, file } = stateEnv();
    await serveAndCall(env, { awaitWrite: true });
    const bytes = readFileSync(file);
    // Damage the compiled code itself, past the header: V8 would be handed bytes that changed.
    for (let at = bytes.length - 4096; at < bytes.length; at += 7) bytes[at] = (bytes[at]! + 1) & 0xff;
    writeFileSync(file, bytes, { mode: 0o600 });

    const second = await serveAndCall(env, { awaitWrite: true });
    expect(usedLine(second)).toMatch(/: \d+ of \d+ chunks compiled from it/);
    expect(readFileSync(file).equals(bytes)).toBe(false);
    const third = await serveAndCall(env);
    expect(allFromCache(third)).toBe(true);
  });

  it('ignores a file that is not a cache at all, serves, and replaces it', async () => {
    const { env, file } = stateEnv();
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, 'not a cache', { mode: 0o600 });
    const first = await serveAndCall(env, { awaitWrite: true });
    expect(usedLine(first)).toContain('not used: it is damaged');
    expect(allFromCache(await serveAndCall(env))).toBe(true);
  });

  it('ignores a cache made for another bundle, and replaces it', async () => {
    const { env, file } = stateEnv();
    await serveAndCall(env, { awaitWrite: true });
    const bytes = readFileSync(file);
    const length = bytes.readUInt32LE(0);
    const header = JSON.parse(bytes.toString('utf8', 4, 4 + length)) as { key: string };
    // The same length, another key: what a cache of another build (or Node) looks like.
    const other = Buffer.from(
      JSON.stringify({ ...header, key: header.key.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')) }),
    );
    writeFileSync(file, Buffer.concat([bytes.subarray(0, 4), other, bytes.subarray(4 + length)]), {
      mode: 0o600,
    });

    const second = await serveAndCall(env, { awaitWrite: true });
    expect(usedLine(second)).toContain('not used: it was made for another build, Node or V8 flags');
    const third = await serveAndCall(env);
    expect(allFromCache(third)).toBe(true);
  });

  it('ignores a cache made by another install of the same build, so that stack traces name this install', async () => {
    const { env } = stateEnv();
    // A second install of the same bytes, as a global install beside an npx cache would be.
    const other = tempDir('warden-other-install-');
    for (const part of ['dist', 'schema', 'policies'])
      cpSync(path.join(ROOT, part), path.join(other, part), { recursive: true });
    copyFileSync(path.join(ROOT, 'package.json'), path.join(other, 'package.json'));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(other, 'node_modules'));
    const otherCli = path.join(other, 'dist/cli.js');

    await serveAndCall(env, { awaitWrite: true });
    const fromOther = await serveAndCall(env, { awaitWrite: true, cli: otherCli });
    expect(usedLine(fromOther)).toContain(
      `not used: it was made by mcp-warden installed in ${path.join(ROOT, 'dist', 'chunks')}`,
    );
    const again = await serveAndCall(env, { cli: otherCli });
    expect(allFromCache(again)).toBe(true);
    const back = await serveAndCall(env);
    expect(usedLine(back)).toContain(
      `not used: it was made by mcp-warden installed in ${path.join(other, 'dist', 'chunks')}`,
    );
  });

  it('ignores a file others may write, and replaces it with one only its user can', async () => {
    const { env, file } = stateEnv();
    await serveAndCall(env, { awaitWrite: true });
    chmodSync(file, 0o620);
    const second = await serveAndCall(env, { awaitWrite: true });
    expect(usedLine(second)).toContain('not used: it is writable by others');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(allFromCache(await serveAndCall(env))).toBe(true);
  });

  it('neither reads nor writes in a folder others may write', async () => {
    const { env, file } = stateEnv();
    await serveAndCall(env, { awaitWrite: true });
    chmodSync(path.dirname(file), 0o770);
    const written = statSync(file).mtimeMs;
    const second = await serveAndCall(env);
    expect(usedLine(second)).toContain('not used: its folder is writable by others');
    expect(statSync(file).mtimeMs).toBe(written);
  });

  it('serves from a read-only state folder, without a cache', async () => {
    const { env, file } = stateEnv();
    const state = path.dirname(path.dirname(file));
    chmodSync(state, 0o500);
    try {
      const first = await serveAndCall(env);
      expect(usedLine(first)).toContain('not used: there is none');
    } finally {
      chmodSync(state, 0o700);
    }
  });
});
