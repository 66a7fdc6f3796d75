/**
 * Audit records shipped to a real rsyslog (RFC 5424, octet-counted frames), through the built
 * binary: over TCP, every record arrives once and in order, across an outage of the receiver of
 * several seconds, while calls go on, and what waited is sent when it comes back. A trail with no
 * local file (the sinks replace it, their spools holding what is not yet sent). Over TLS, with a
 * certificate the gateway trusts and one it refuses.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { killRawSessions, readAudit, runCli, tempDir } from './harness.js';
import {
  freePort,
  gatewayWithSinks,
  makeCertificates,
  received,
  refusedByFullSpool,
  rsyslog,
  rsyslogMissing,
  rsyslogTlsMissing,
  stopReceivers,
  until,
} from './sinkHelpers.js';

afterEach(() => {
  killRawSessions();
  stopReceivers();
});

describe.skipIf(rsyslogMissing)('audit shipped to rsyslog over TCP', () => {
  it('every record arrives once, in order, across an outage of several seconds', async () => {
    const dir = tempDir();
    const port = await freePort();
    const receiver = rsyslog(dir, port);
    receiver.run();
    await receiver.listen();
    const { s, file, callOnce } = await gatewayWithSinks(
      [{ type: 'syslog', host: '127.0.0.1', port, required: true, facility: 13, appName: 'warden-test' }],
      dir,
    );
    for (let i = 0; i < 5; i++) await callOnce();
    await until(
      'the first calls at rsyslog',
      () => received(receiver.out).filter((r) => r.msgid === 'call').length === 5,
    );

    // The receiver goes away; calls go on for several seconds and are answered.
    await receiver.stop();
    const outageStart = Date.now();
    while (Date.now() - outageStart < 4000) await callOnce();
    await until('the gateway to say records wait', () => /audit sink syslog: cannot send/.test(s.stderr()));
    expect(s.stderr()).toMatch(/records? wait in .*audit\.jsonl\.spool/);
    const summary = await runCli(['audit', 'summary', file]);
    expect(summary.stdout).toMatch(/waiting for sink syslog: \d+ records? \(\d+ bytes\)/);

    receiver.run();
    await receiver.listen();
    // What waited arrives without a new call to push it (the sink retries on its own).
    const waited = readAudit(file).length;
    await until('the records that waited at rsyslog', () => received(receiver.out).length >= waited);
    for (let i = 0; i < 3; i++) await callOnce();
    s.child.stdin.end();
    expect(await s.exited).toBe(0);

    const written = readAudit(file).map((r) => r.seq);
    // The stop record (and whatever the last drain could not send) is sent by the next start;
    // here it is sent at shutdown, the receiver being back.
    await until('every record at rsyslog', () => received(receiver.out).length >= written.length);
    const got = received(receiver.out);
    expect(got.map((r) => r.record.seq)).toEqual(written);
    expect(got.map((r) => JSON.stringify(r.record))).toEqual(readAudit(file).map((r) => JSON.stringify(r)));
    expect((await runCli(['audit', 'summary', file])).stdout).not.toContain('waiting for sink');
    const first = got.find((r) => r.msgid === 'call')!;
    expect(first.app).toBe('warden-test');
    expect(first.pri).toBe(13 * 8 + 6);
    expect(first.sd).toMatch(
      /^\[mcpWarden@32473 event="call" seq="\d+" session="[^"]+" host="[^"]+" server="up" tool="up__echo" decision="allow" outcome="ok"/,
    );
  }, 120_000);
});

describe.skipIf(!rsyslogMissing)('audit shipped to rsyslog', () => {
  // Reported as skipped, with the reason, rather than as a test that passed.
  it('needs rsyslogd', (context) =>
    context.skip('rsyslogd is not installed (.ci/run installs the Debian package rsyslog)'));
});

describe('a required sink whose spool is full', () => {
  it('with onFailure block, calls are refused saying why; the file still has every record', async () => {
    const { s, file, refused } = await refusedByFullSpool({ required: true });
    expect(refused).toMatch(/Calls are refused: .*sink syslog.*the spool for audit sink syslog is full/);
    await until('the full spool in the log', () =>
      /AUDIT: the spool for audit sink syslog is full/.test(s.stderr()),
    );
    expect(readAudit(file).some((r) => r.type === 'call_start')).toBe(true);
  }, 60_000);
});

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

describe.skipIf(rsyslogMissing)('a trail without a local file (audit.file: false)', () => {
  it('goes to rsyslog only, chained across restarts; no audit file is written', async () => {
    const dir = tempDir();
    const port = await freePort();
    const receiver = rsyslog(dir, port);
    receiver.run();
    await receiver.listen();
    const sinks = [{ type: 'syslog', host: '127.0.0.1', port, required: true }];
    const audit = { file: false, spool: './spool' };

    const first = await gatewayWithSinks(sinks, dir, audit);
    for (let i = 0; i < 5; i++) await first.callOnce();
    await until(
      'the calls at rsyslog',
      () => received(receiver.out).filter((r) => r.msgid === 'call').length === 5,
    );
    first.s.child.stdin.end();
    expect(await first.s.exited).toBe(0);
    await until('the stop record at rsyslog', () =>
      received(receiver.out).some((r) => r.record['type'] === 'gateway_stop'),
    );

    // A second run goes on with the chain where the first left it (read from its spool).
    const second = await gatewayWithSinks(sinks, dir, audit);
    await second.callOnce();
    second.s.child.stdin.end();
    expect(await second.s.exited).toBe(0);
    await until(
      'the second stop record at rsyslog',
      () => received(receiver.out).filter((r) => r.record['type'] === 'gateway_stop').length === 2,
    );

    const got = received(receiver.out);
    expect(got.map((r) => r.record['seq'])).toEqual(got.map((_, i) => i));
    expect(new Set(got.map((r) => r.record['writer'])).size).toBe(2);
    // Nothing of the trail on this machine but the spools: no JSON-lines file anywhere.
    expect(existsSync(first.file)).toBe(false);
    expect(filesUnder(dir).filter((file) => file.endsWith('.jsonl'))).toEqual([]);
    // The SIEM's copy is a whole chain: verify it as a file.
    const copy = path.join(dir, 'from-siem.jsonl');
    writeFileSync(copy, got.map((r) => `${r.line}\n`).join(''));
    const verify = await runCli(['audit', 'verify', copy]);
    expect(verify.stdout).toMatch(
      /^ok: \d+ records from 2 writers in 1 file; the chain is complete from its first record/,
    );
    expect(verify.code).toBe(0);
    const summary = await runCli(['audit', 'summary', path.join(dir, 'spool')]);
    expect(summary.stdout).toMatch(/^nothing waits in .*spool: the sinks have every record/);
  }, 120_000);
});

/** A bare RFC 6587 receiver: the octet-counted frames it is sent, as PRI, MSGID and payload. */
async function frameReceiver(port: number) {
  const messages: { pri: number; msgid: string; body: string }[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const space = pending.indexOf(0x20);
        if (space === -1) return;
        const length = Number(pending.subarray(0, space).toString('latin1'));
        if (pending.length < space + 1 + length) return;
        const text = pending.subarray(space + 1, space + 1 + length).toString('utf8');
        pending = pending.subarray(space + 1 + length);
        const parts = text.split(' ');
        messages.push({
          pri: Number(/^<(\d+)>/.exec(text)![1]),
          msgid: parts[5]!,
          body: text.slice(text.indexOf('{"')),
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    messages,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('a syslog sink whose spool overflowed before it could be reached', () => {
  it('gets an audit_gap message (severity err) in place of the records it missed', async () => {
    const port = await freePort(); // nothing listens there yet
    const { s, file, callOnce } = await gatewayWithSinks(
      [{ type: 'syslog', host: '127.0.0.1', port, spoolMaxSize: '1KiB', facility: 13 }],
      undefined,
      { onFailure: 'continue' },
    );
    for (let i = 0; i < 12; i++) await callOnce();
    await until('the full spool in the log', () =>
      /the spool for audit sink syslog is full/.test(s.stderr()),
    );
    const receiver = await frameReceiver(port);
    try {
      await expect
        .poll(async () => (await runCli(['audit', 'summary', file])).stdout, {
          timeout: 30_000,
          interval: 200,
        })
        .not.toMatch(/waiting for sink syslog/);
      await callOnce();
      s.child.stdin.end();
      expect(await s.exited).toBe(0);
      await until('the last record', () => receiver.messages.some((m) => m.msgid === 'gateway_stop'));
      const written = readAudit(file);
      const got = receiver.messages.map((m) => JSON.parse(m.body) as Record<string, unknown>);
      const sent = new Set(got.map((r) => r.seq));
      const missed = written.filter((r) => !sent.has(r.seq));
      const at = got.findIndex((r) => r.type === 'audit_gap');
      expect(at).toBeGreaterThan(-1);
      const gap = got[at]!;
      expect(receiver.messages[at]).toMatchObject({ msgid: 'audit_gap', pri: 13 * 8 + 3 });
      expect(gap).toMatchObject({
        sink: 'syslog',
        lost: missed.length,
        firstSeq: missed[0]!.seq,
        lastSeq: missed.at(-1)!.seq,
        since: missed[0]!.ts,
        until: missed.at(-1)!.ts,
      });
      expect(got.slice(at + 1).every((r) => (r.seq as number) > missed.at(-1)!.seq)).toBe(true);
    } finally {
      receiver.close();
    }
  }, 120_000);
});

describe('a syslog sink whose spool overflowed and the gateway stopped before it could say so', () => {
  it('is sent the audit_gap first by the next run, before that run’s own records', async () => {
    const port = await freePort(); // nothing listens there during the first run
    const dir = tempDir();
    const sinks = [{ type: 'syslog', host: '127.0.0.1', port, spoolMaxSize: '1KiB' }];
    const first = await gatewayWithSinks(sinks, dir, { onFailure: 'continue' });
    for (let i = 0; i < 12; i++) await first.callOnce();
    await until('the full spool in the log', () =>
      /the spool for audit sink syslog is full/.test(first.s.stderr()),
    );
    first.s.child.stdin.end();
    expect(await first.s.exited).toBe(0);
    const firstRun = readAudit(first.file);

    const receiver = await frameReceiver(port);
    try {
      const second = await gatewayWithSinks(sinks, dir, { onFailure: 'continue' });
      await second.callOnce();
      second.s.child.stdin.end();
      expect(await second.s.exited).toBe(0);
      await until('the second run’s last record', () =>
        receiver.messages.some(
          (m) => m.msgid === 'gateway_stop' && (JSON.parse(m.body) as { seq: number }).seq > firstRun.length,
        ),
      );
      const got = receiver.messages.map((m) => JSON.parse(m.body) as Record<string, unknown>);
      const sent = new Set(got.map((r) => r.seq));
      const missed = firstRun.filter((r) => !sent.has(r.seq));
      expect(missed.length).toBeGreaterThan(0);
      // The first gap the sink hears of is the first run's, and it comes before any record of
      // the second run.
      const at = got.findIndex((r) => r.type === 'audit_gap');
      expect(at).toBeGreaterThan(-1);
      expect(got[at]).toMatchObject({
        sink: 'syslog',
        lost: missed.length,
        firstSeq: missed[0]!.seq,
        lastSeq: missed.at(-1)!.seq,
      });
      expect(got.slice(0, at).every((r) => (r.seq as number) < firstRun.length)).toBe(true);
      expect(second.s.stderr()).toMatch(
        /records were not kept for this sink before the gateway last stopped; an audit_gap record tells the sink/,
      );
    } finally {
      receiver.close();
    }
  }, 120_000);
});

describe('a trail without a local file whose only sink cannot keep records', () => {
  it('with onFailure block, calls are refused saying no sink kept the records', async () => {
    const { s, dir, refused } = await refusedByFullSpool({}, { file: false, spool: './spool' });
    expect(refused).toMatch(/Calls are refused: .*no audit sink could keep the records/);
    await until('the full spool in the log', () =>
      /AUDIT: the spool for audit sink syslog is full/.test(s.stderr()),
    );
    const summary = await runCli(['audit', 'summary', path.join(dir, 'spool')]);
    expect(summary.stdout).toMatch(/^waiting for sink syslog: \d+ records? \(\d+ bytes\)/);
  }, 60_000);
});

describe.skipIf(rsyslogTlsMissing)('audit shipped to rsyslog over TLS', () => {
  it('a receiver signed by another CA is refused, naming the sink; its records wait and arrive over TLS once trusted', async () => {
    const dir = tempDir();
    const port = await freePort();
    const right = makeCertificates(dir, 'right');
    const wrong = makeCertificates(dir, 'wrong');
    const receiver = rsyslog(dir, port, right);
    receiver.run();
    await receiver.listen();
    const sink = { type: 'syslog', name: 'siem', host: '127.0.0.1', port, tls: true };

    const refused = await gatewayWithSinks([{ ...sink, ca: wrong.ca }], dir);
    for (let i = 0; i < 3; i++) await refused.callOnce();
    await until('the refused certificate in the log', () =>
      /audit sink siem: cannot send/.test(refused.s.stderr()),
    );
    expect(refused.s.stderr()).toMatch(
      new RegExp(
        `audit sink siem: cannot send \\(refused the TLS certificate of 127\\.0\\.0\\.1:${port} \\(.+; trusting the CAs in .*wrong-ca\\.pem\\)\\); \\d+ records wait in .*audit\\.jsonl\\.spool`,
      ),
    );
    expect((await runCli(['audit', 'summary', refused.file])).stdout).toMatch(
      /waiting for sink siem: \d+ records/,
    );
    refused.s.child.stdin.end();
    expect(await refused.s.exited).toBe(0);
    expect(received(receiver.out)).toEqual([]);

    // Trusting the right CA, the next run sends what waited first, then its own records.
    const trusted = await gatewayWithSinks([{ ...sink, ca: right.ca }], dir);
    await trusted.callOnce();
    trusted.s.child.stdin.end();
    expect(await trusted.s.exited).toBe(0);
    const written = readAudit(trusted.file);
    await until('every record at rsyslog', () => received(receiver.out).length >= written.length);
    expect(received(receiver.out).map((r) => r.line)).toEqual(written.map((r) => JSON.stringify(r)));
    expect(received(receiver.out).filter((r) => r.msgid === 'call')).toHaveLength(4);
  }, 120_000);
});

describe.skipIf(!rsyslogTlsMissing)('a trail without a local file, and syslog over TLS', () => {
  it('needs rsyslogd and its TLS driver', (context) =>
    context.skip('rsyslog or its TLS driver is not installed (.ci/run installs rsyslog and rsyslog-gnutls)'));
});
