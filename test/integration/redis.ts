/** A real redis-server for the tests of replicas sharing a store. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { tempDir } from './harness.js';
import { freePort } from './haproxy.js';

export const hasRedis = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** Starts redis-server on a free port with `password`, keeping nothing on disk; resolves once it is ready. */
export async function startRedis(
  password: string,
): Promise<{ readonly port: number; readonly process: ChildProcess }> {
  const port = await freePort();
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
