/**
 * The audit trail under faults, through the built binary: a gateway SIGKILLed in the middle of
 * writing a large record, and an audit file that cannot be written for a while.
 */
import { existsSync, readFileSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  fixture,
  initialize,
  killRawSessions,
  rawSession,
  runCli,
  tempDir,
  textOf,
  waitForExit,
  writeConfig,
} from './harness.js';

afterEach(() => killRawSessions());

function endsTorn(file: string): boolean {
  const text = readFileSync(file);
  return text.length > 0 && text[text.length - 1] !== 0x0a;
}

describe('a gateway SIGKILLed while writing', () => {
  it('tears a large record; the restarted gateway recovers and verify reports a crash gap, exit 0', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'audit.jsonl');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl', onFailure: 'block' },
        servers: { up: fixture() },
      },
      dir,
    );
    // One 3 MiB call: its call_start record is what the kill tears (as in a desktop host's force
    // quit during a large call). One line, built once: this test shares two cores with others.
    const bigCall = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'up__echo', arguments: { text: 'x'.repeat(3 * 1024 * 1024) } },
    });
    let torn = 0;
    let attempts = 0;
    // A kill lands mid-write most of the time (3 MiB records), not every time: try a bounded
    // number of times, each on the file the killed gateway left, as a restarted gateway would.
    for (let attempt = 0; attempt < 15 && torn < 1; attempt++) {
      const session = rawSession(config);
      // What is still queued for its stdin when it is killed cannot be delivered: expected.
      session.child.stdin.on('error', () => {});
      await initialize(session);
      const before = existsSync(file) ? statSync(file).size : 0;
      session.send(bigCall);
      // Kill as soon as the file starts growing: the 3 MiB call_start is being written.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && (existsSync(file) ? statSync(file).size : 0) <= before + 4096) {
        await new Promise((resolve) => setTimeout(resolve, 1)); // a poll, not a spin: shared cores
      }
      session.child.kill('SIGKILL');
      await session.exited;
      if (endsTorn(file)) torn++;
      attempts++;
    }
    expect(torn, `no torn record in ${attempts} kills`).toBeGreaterThan(0);

    // The gateway restarted on the same file after the last kill, and serves.
    const host = await connectHost(config);
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: 'after' } });
    expect(textOf(result)).toBe('after');
    await host.close();
    await waitForExit(host.pid, 5000);

    const { code, stdout } = await runCli(['audit', 'verify', file]);
    expect(stdout).toMatch(/^warning: .*audit\.jsonl:\d+: crash gap: a record cut short/m);
    expect(stdout).toMatch(/^ok: \d+ records /m);
    expect(stdout.match(/crash gap: /g)?.length).toBeGreaterThanOrEqual(torn);
    expect(code).toBe(0);

    // Each torn line is followed by the restarted gateway's recovery record.
    const lines = readFileSync(file, 'utf8').split('\n');
    for (let i = 0; i < lines.length - 1; i++) {
      const line = lines[i]!;
      if (line === '' || !line.startsWith('{')) continue;
      try {
        JSON.parse(line);
      } catch {
        expect(JSON.parse(lines[i + 1]!)).toMatchObject({ type: 'audit_gap', torn: true });
      }
    }

    // Editing any record after the gap is tampering: exit 1, naming file:line.
    const edited = lines.map((line) => line.replace('"text":"after"', '"text":"AFTER"'));
    writeFileSync(file, edited.join('\n'));
    const tampered = await runCli(['audit', 'verify', file]);
    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toMatch(/audit\.jsonl:\d+: seq \d+: hash mismatch/);
  }, 120_000);
});

describe.skipIf(!existsSync('/dev/full'))('an audit file that cannot be written for a while', () => {
  // The audit path is a symlink to /dev/full (every write: ENOSPC). "Space is freed" is the
  // symlink replaced by a regular file, which the gateway opens on its next attempt.
  function setup(onFailure: 'block' | 'continue') {
    const dir = tempDir();
    const file = path.join(dir, 'audit.jsonl');
    const recorded = path.join(dir, 'record.jsonl');
    symlinkSync('/dev/full', file);
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl', onFailure },
        servers: { up: fixture(['--record', recorded]) },
      },
      dir,
    );
    return { file, recorded, config };
  }

  it('block: refused while full, never reaching the upstream; serves again by itself once writable', async () => {
    const { file, recorded, config } = setup('block');
    const host = await connectHost(config);
    await host.client.listTools();
    const refused = await host.client.callTool({ name: 'up__echo', arguments: { text: 'while-full' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/Calls are refused: the audit log .* cannot be written \(ENOSPC/);
    expect(existsSync(recorded) ? readFileSync(recorded, 'utf8') : '').not.toContain('while-full');

    unlinkSync(file);
    writeFileSync(file, '');
    // No call is made until the gateway says it recovered: its own retry timer must notice.
    await host.waitForStderr(/the audit log can be written again; \d+ records were lost meanwhile/, 10_000);
    const served = await host.client.callTool({ name: 'up__echo', arguments: { text: 'after' } });
    expect(textOf(served)).toBe('after');
    await host.close();
    await waitForExit(host.pid, 5000);

    const records = readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records[0]).toMatchObject({ type: 'audit_gap', error: expect.stringMatching(/ENOSPC/) });
    const start = records.findIndex((r) => r.type === 'call_start');
    expect(records[start]).toMatchObject({ args: { text: 'after' }, call: expect.any(Number) });
    expect(records.find((r) => r.type === 'call')).toMatchObject({
      outcome: 'ok',
      call: records[start]!.call,
    });
    expect((await runCli(['audit', 'verify', file])).code).toBe(0);
    const summary = await runCli(['audit', 'summary', file]);
    expect(summary.stdout).toMatch(/up__echo\s+up\s+1\b/);
  });

  it('continue: serves while full, counts what it lost, and records the count once writable', async () => {
    const { file, config } = setup('continue');
    const host = await connectHost(config);
    for (let i = 0; i < 3; i++) {
      const served = await host.client.callTool({ name: 'up__echo', arguments: { text: `n${i}` } });
      expect(textOf(served)).toBe(`n${i}`);
    }
    unlinkSync(file);
    writeFileSync(file, '');
    await host.waitForStderr(/the audit log can be written again; \d+ records were lost meanwhile/, 10_000);
    const lost = Number(/can be written again; (\d+) records were lost/.exec(host.stderr())![1]);
    expect(lost).toBeGreaterThanOrEqual(3); // the 3 calls, plus lifecycle records
    await host.close();
    await waitForExit(host.pid, 5000);
    const first = JSON.parse(readFileSync(file, 'utf8').split('\n')[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({ type: 'audit_gap', lost });
  });
});
