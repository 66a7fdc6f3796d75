/**
 * What the audit shipping tests share: a bounded poll, a gateway whose trail has sinks, and a
 * real rsyslogd of the test's own (TCP, or TLS through rsyslog's gtls driver).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
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

/**
 * A gateway with `sinks` in its audit section (the file `audit.jsonl` unless `audit` says
 * otherwise); `callOnce` makes one echo call and awaits its answer.
 */
export async function gatewayWithSinks(sinks: object[], dir = tempDir(), audit: object = {}) {
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: './audit.jsonl', ...audit, sinks },
      servers: { up: fixture() },
    },
    dir,
  );
  const s = rawSession(config);
  await initialize(s);
  let id = 0;
  const call = async (): Promise<{ isError?: boolean; content: { text: string }[] }> => {
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
    const message = await answer;
    expect(message.error).toBeUndefined();
    return message.result as { isError?: boolean; content: { text: string }[] };
  };
  const callOnce = async () => {
    await call();
  };
  return { s, file: path.join(dir, 'audit.jsonl'), call, callOnce };
}

/**
 * A gateway whose one syslog sink (`sink` added) has nowhere to send and a 1 KiB spool, called
 * (up to 20 times) until a call is refused: `refused` is that answer's text, or undefined.
 */
export async function refusedByFullSpool(sink: object, audit: object = {}) {
  const port = await freePort(); // nothing listens there
  const dir = tempDir();
  const gateway = await gatewayWithSinks(
    [{ type: 'syslog', host: '127.0.0.1', port, spoolMaxSize: '1KiB', ...sink }],
    dir,
    audit,
  );
  let refused: string | undefined;
  for (let n = 1; n <= 20 && refused === undefined; n++) {
    const result = await gateway.call();
    if (result.isError === true) refused = result.content[0]!.text;
  }
  return { ...gateway, dir, refused };
}

export const rsyslogMissing = spawnSync('rsyslogd', ['-v'], { encoding: 'utf8' }).status !== 0;

/** rsyslog's TLS driver (Debian's rsyslog-gnutls) is installed: lmnsd_gtls.so in its module folder. */
export const rsyslogTlsMissing =
  rsyslogMissing ||
  !['/usr/lib', '/usr/lib64', ...libArchDirs()].some((dir) =>
    existsSync(path.join(dir, 'rsyslog', 'lmnsd_gtls.so')),
  );

function libArchDirs(): string[] {
  try {
    return readdirSync('/usr/lib')
      .filter((name) => name.endsWith('-linux-gnu'))
      .map((name) => path.join('/usr/lib', name));
  } catch {
    return [];
  }
}

const receivers: ChildProcess[] = [];

/** Kills the rsyslogd processes the tests started (for afterEach). */
export function stopReceivers(): void {
  for (const child of receivers.splice(0)) child.kill('SIGKILL');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** Files of a TLS listener: the server's certificate and key, and the CA that signed it. */
export interface TlsFiles {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/**
 * A throwaway CA (`name`-ca.pem) and a server certificate it signed for 127.0.0.1 and localhost,
 * made with openssl in `dir`.
 */
export function makeCertificates(dir: string, name = 'test'): TlsFiles {
  const file = (suffix: string) => path.join(dir, `${name}-${suffix}`);
  const openssl = (...args: string[]) => {
    const run = spawnSync('openssl', args, { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`openssl ${args[0]}: ${run.stderr}`);
  };
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name} test CA`,
    '-keyout',
    file('ca-key.pem'),
    '-out',
    file('ca.pem'),
  );
  writeFileSync(file('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    file('key.pem'),
    '-out',
    file('csr.pem'),
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('csr.pem'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca-key.pem'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    file('ext.cnf'),
    '-out',
    file('cert.pem'),
  );
  return { ca: file('ca.pem'), cert: file('cert.pem'), key: file('key.pem') };
}

/**
 * An rsyslogd of the test's own on 127.0.0.1:port, plain TCP or (with `tls`) TLS only, each
 * message written as a line of `out`.
 */
export function rsyslog(dir: string, port: number, tls?: TlsFiles) {
  const conf = path.join(dir, 'rsyslog.conf');
  const out = path.join(dir, 'received.log');
  const listener =
    tls === undefined
      ? ['module(load="imtcp")']
      : [
          // gtls with anonymous client authentication: the gateway checks the server, not the reverse.
          `global(defaultNetstreamDriverCAFile="${tls.ca}" defaultNetstreamDriverCertFile="${tls.cert}" defaultNetstreamDriverKeyFile="${tls.key}")`,
          'module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")',
        ];
  writeFileSync(
    conf,
    [
      `global(workDirectory="${dir}")`,
      ...listener,
      `input(type="imtcp" port="${port}" address="127.0.0.1")`,
      'template(name="line" type="string" string="%pri%|%app-name%|%msgid%|%structured-data%|%msg%\\n")',
      `*.* action(type="omfile" file="${out}" template="line")`,
      '',
    ].join('\n'),
  );
  let child: ChildProcess | undefined;
  return {
    out,
    async listen(): Promise<void> {
      const deadline = Date.now() + 20_000;
      while (!(await accepts(port))) {
        if (Date.now() > deadline) throw new Error('rsyslogd did not listen within 20 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    run(): ChildProcess {
      child = spawn('rsyslogd', ['-n', '-f', conf, '-i', path.join(dir, 'rsyslogd.pid')], {
        stdio: 'ignore',
      });
      receivers.push(child);
      return child;
    },
    async stop(): Promise<void> {
      const running = child;
      if (running === undefined || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    },
  };
}

/** The records rsyslog wrote: the record JSON after the structured data, and the header fields. */
export function received(out: string) {
  if (!existsSync(out)) return [];
  const lines = readFileSync(out, 'utf8').split('\n');
  // The file is read while rsyslog may be writing it: what follows the last newline is a line
  // not yet complete (or nothing), and is read on the next poll.
  lines.pop();
  return lines
    .filter((line) => line !== '')
    .map((line) => {
      const start = line.indexOf('|{"seq":');
      const [pri, app, msgid, sd] = line.slice(0, start).split('|');
      return {
        pri: Number(pri),
        app,
        msgid,
        sd: sd ?? '',
        line: line.slice(start + 1),
        record: JSON.parse(line.slice(start + 1)) as Record<string, unknown>,
      };
    });
}
