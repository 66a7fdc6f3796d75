/**
 * The Streamable HTTP listener of the built binary, for what needs the gateway's own process: it
 * goes on serving once the reader of its stderr is gone, answers the calls in flight on SIGTERM
 * before it exits 0, and refuses an address beyond loopback with exit code 2. The rest of the
 * listener's scenarios run in-process in test/inprocess/httpListener.test.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, runCli, tempDir, textOf, writeConfig } from './harness.js';
import { connectHttpHost, INITIALIZE, postRpc, startHttpGateway, type HttpGateway } from './httpHarness.js';

let gateway: HttpGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

/** A fresh folder with a config, its audit trail, and one fixture upstream recording what it gets. */
function setup(extra: Record<string, unknown> = {}) {
  const dir = tempDir();
  const record = path.join(dir, 'upstream.jsonl');
  const servers = { up: fixture(['--record', record]) };
  const audit = { file: path.join(dir, 'audit.jsonl') };
  return { config: writeConfig({ gateway: FAST_GATEWAY, audit, servers, ...extra }, dir), record };
}

describe('HTTP listener', () => {
  it('goes on serving, and stops promptly on SIGTERM, once the reader of its log is gone', async () => {
    const { config } = setup();
    gateway = await startHttpGateway(config);
    const pid = gateway.child.pid!;
    // Utime plus stime, in clock ticks (the fields after the command, which may hold spaces).
    const cpuTicks = () => {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /, '')
        .split(' ');
      return Number(fields[11]) + Number(fields[12]);
    };
    // The reader goes away: every later line the gateway logs meets a broken pipe.
    gateway.child.stderr.destroy();
    // Each of these is logged (a new session, a refused Origin).
    expect((await postRpc(gateway.url, INITIALIZE)).status).toBe(200);
    expect((await postRpc(gateway.url, INITIALIZE, { Origin: 'http://evil.example' })).status).toBe(403);
    const before = cpuTicks();
    for (let i = 0; i < 10; i++) {
      const health = await fetch(`${gateway.base}/healthz`, { signal: AbortSignal.timeout(5000) });
      expect(health.status).toBe(200);
    }
    // Ten health checks cost the gateway a few ticks; a spinning process burns a core meanwhile.
    expect(cpuTicks() - before).toBeLessThan(50);
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
  });

  it('on SIGTERM, answers the calls in flight before it exits', async () => {
    const { config, record } = setup();
    gateway = await startHttpGateway(config);
    const a = await connectHttpHost(gateway.url);
    const call = a.client.callTool({ name: 'up__sleep', arguments: { ms: 1500 } });
    // The call is in flight once the upstream has it.
    while (!(existsSync(record) && readFileSync(record, 'utf8').includes('"tools/call"')))
      await new Promise((r) => setTimeout(r, 10));
    gateway.child.kill('SIGTERM');
    expect(textOf(await call)).toBe('slept 1500');
    expect(await gateway.exited).toBe(0);
  });

  it('refuses to listen beyond loopback without auth:, naming the file and line', async () => {
    const { config } = setup({ listen: { http: '0.0.0.0:8080' } });
    const byConfig = await runCli(['--config', config]);
    expect(byConfig.code).toBe(2);
    expect(byConfig.stderr).toMatch(
      /proxy\.config\.json:\d+:\d+: listen\.http: listening on 0\.0\.0\.0 .*needs an auth: section/,
    );
    const { config: plain } = setup();
    const byFlag = await runCli(['--config', plain, '--http', '0.0.0.0:0']);
    expect(byFlag.code).toBe(2);
    expect(byFlag.stderr).toContain('--http: listening on 0.0.0.0');
    const malformed = await runCli(['--config', plain, '--http', 'localhost']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('expected HOST:PORT');
  });
});
