/** A real HAProxy in front of gateway replicas, for the tests of replicas. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { tempDir } from './harness.js';

export const hasHaproxy = spawnSync('haproxy', ['-v'], { stdio: 'ignore' }).status === 0;

/** A port nobody listens on now (the next process binds it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts HAProxy balancing round robin over `backends` (each HOST:PORT), with `backendLines`
 * added to the backend (stickiness, when a test wants it); resolves once it passes a request
 * through to /healthz. A replica that refuses the connection is passed over (retries, redispatch).
 * It listens on `options.port` when given (when the replicas must know their public URL first).
 */
export async function startHaproxy(
  backends: readonly string[],
  backendLines: readonly string[] = [],
  options: { readonly port?: number } = {},
): Promise<{ readonly url: string; readonly process: ChildProcess }> {
  const port = options.port ?? (await freePort());
  const cfg = path.join(tempDir(), 'haproxy.cfg');
  writeFileSync(
    cfg,
    [
      'defaults',
      '  mode http',
      '  timeout connect 2s',
      '  timeout client 30s',
      '  timeout server 30s',
      '  retries 2',
      '  option redispatch 1',
      'frontend mcp',
      `  bind 127.0.0.1:${port}`,
      '  default_backend warden',
      'backend warden',
      '  balance roundrobin',
      ...backendLines,
      ...backends.map((host, i) => `  server w${i} ${host}`),
      '',
    ].join('\n'),
  );
  const child = spawn('haproxy', ['-f', cfg, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = `http://127.0.0.1:${port}`;
  // Ready once it passes a request through (it binds after reading its config).
  for (;;) {
    const up = await fetch(`${url}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { url, process: child };
}
