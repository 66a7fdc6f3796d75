/** A real redis-server for the tests of replicas sharing a store. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createClient } from '@redis/client';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { FAST_GATEWAY, tempDir, writeConfig } from './harness.js';
import { freePort } from './haproxy.js';
import { startHttpGateway, type HttpGateway } from './httpHarness.js';

export const hasRedis = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * Starts redis-server on a free port (or `port`: the same one again after an outage) with
 * `password`, keeping nothing on disk; resolves once it is ready.
 */
export async function startRedis(
  password: string,
  options: { readonly port?: number } = {},
): Promise<{ readonly port: number; readonly process: ChildProcess }> {
  const port = options.port ?? (await freePort());
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      tempDir(),
      '--save',
      '',
      '--appendonly',
      'no',
      '--requirepass',
      password,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Ready once it says so.
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', () => reject(new Error(`redis-server exited:\n${out}`)));
  });
  return { port, process: child };
}

/** The session key every replica of a test shares. */
const SESSION_KEY = 'a-session-key-shared-by-both-replicas-0123456789';

/**
 * Starts one gateway replica over HTTP that shares the store at `redisPort` (password
 * `password`), with its own audit trail and a policy that asks a human before any call of the
 * server `ask`; `config` adds to (or replaces) what every such replica has.
 */
export async function startStoreReplica(options: {
  readonly redisPort: number;
  readonly password: string;
  readonly config: Record<string, unknown>;
  /** Where it listens (a free port on 127.0.0.1 unless given). */
  readonly address?: string;
  /** More environment for it (secrets its `config` names). */
  readonly env?: Record<string, string>;
  /** The bound of each store operation (`store.timeout`), when not the default. */
  readonly storeTimeout?: string;
}): Promise<{ readonly replica: HttpGateway; readonly audit: string }> {
  const dir = tempDir();
  const audit = path.join(dir, 'audit.jsonl');
  const storeUrl = `redis://:\${REDIS_PASSWORD}@127.0.0.1:${options.redisPort}/0`;
  writeFileSync(
    path.join(dir, 'policy.yaml'),
    'rules:\n  - id: ask-first\n    match: { server: ask }\n    action: confirm\n    reason: This one needs a human.\n',
  );
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      listen: { http: '127.0.0.1:0', sessionKey: '${MCP_WARDEN_SESSION_KEY}', allowedHosts: ['127.0.0.1'] },
      store: options.storeTimeout === undefined ? storeUrl : { url: storeUrl, timeout: options.storeTimeout },
      policies: ['policy.yaml'],
      audit: { file: audit },
      ...options.config,
    },
    dir,
  );
  const replica = await startHttpGateway(config, {
    ...(options.address !== undefined && { address: options.address }),
    env: { MCP_WARDEN_SESSION_KEY: SESSION_KEY, REDIS_PASSWORD: options.password, ...options.env },
  });
  return { replica, audit };
}

/** The keys matching `pattern` in the store at `port` now, as a client of the test's own sees them. */
export async function storeKeys(port: number, password: string, pattern: string): Promise<string[]> {
  const client = createClient({ url: `redis://:${password}@127.0.0.1:${port}/0` });
  await client.connect();
  try {
    return await client.keys(pattern);
  } finally {
    await client.close();
  }
}
