/**
 * Sandboxed stdio servers through the built binary, on Linux with bubblewrap and socat (.ci/run
 * installs them from .ci/debian-packages). The probe server tries what a sandbox must refuse;
 * the same probe without a sandbox shows that each attempt succeeds otherwise.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  connectHost,
  FAST_GATEWAY,
  NODE,
  readAudit,
  runCli,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';

const PROBE = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sandbox-probe.mjs');
const installed = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const missing = ['bwrap', 'socat'].filter((command) => !installed(command));
const canSandbox = process.platform === 'linux' && missing.length === 0;

let host: HostSession | undefined;
const servers: { close(): void }[] = [];
afterEach(async () => {
  await host?.close();
  host = undefined;
  for (const server of servers.splice(0)) server.close();
});

/** A temp HOME with a fake SSH key in it. */
function fakeHome(): string {
  const home = tempDir('warden-home-');
  mkdirSync(path.join(home, '.ssh'));
  writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'FAKE PRIVATE KEY');
  return home;
}

async function listening<T extends Server | HttpServer>(server: T): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A DNS server on 127.0.0.1 answering every A question with 127.0.0.1. */
async function dnsServer(): Promise<number> {
  const socket: UdpSocket = createSocket('udp4');
  socket.on('message', (query, from) => {
    const questionEnd = query.indexOf(0, 12) + 5;
    const header = Buffer.from([query[0]!, query[1]!, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
    const answer = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), answer]), from.port, from.address);
  });
  servers.push(socket);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket.address().port;
}

/** Connects the host, and waits until every server named has listed its tools. */
async function connect(config: string, options: Parameters<typeof connectHost>[1], names: string[]) {
  host = await connectHost(config, options);
  const listed = async () => {
    const { tools } = await host!.client.listTools();
    return names.filter((name) => !tools.some((tool) => tool.name.startsWith(`${name}__`)));
  };
  await expect.poll(listed, { timeout: 20_000 }).toEqual([]);
}

async function call(server: string, tool: string, args: Record<string, unknown>): Promise<string> {
  return textOf(await host!.client.callTool({ name: `${server}__${tool}`, arguments: args }));
}

const probe = (extra: Record<string, unknown> = {}) => ({ command: NODE, args: [PROBE], ...extra });

describe.skipIf(!canSandbox)('a sandboxed stdio server', () => {
  it('cannot read the home folder, write outside its folders, or reach the network; unsandboxed it can', async () => {
    const home = fakeHome();
    const dir = tempDir();
    const work = path.join(dir, 'work');
    const outside = tempDir('warden-outside-');
    mkdirSync(work);
    const tcp = await listening(createServer((socket) => socket.end()));
    const dns = await dnsServer();
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        servers: {
          boxed: probe({ sandbox: { filesystem: { write: [work] }, network: false } }),
          open: probe(),
        },
      },
      dir,
    );
    await connect(config, { env: { HOME: home } }, ['boxed', 'open']);
    const key = path.join(home, '.ssh', 'id_ed25519');
    expect(await call('open', 'read', { path: key })).toBe('ok: FAKE PRIVATE KEY');
    expect(await call('boxed', 'read', { path: key })).toMatch(/^refused: E/);

    expect(await call('open', 'write', { path: path.join(outside, 'a') })).toMatch(/^ok/);
    expect(await call('boxed', 'write', { path: path.join(outside, 'b') })).toMatch(/^refused: E/);
    expect(existsSync(path.join(outside, 'b'))).toBe(false);
    expect(await call('boxed', 'write', { path: path.join(work, 'c') })).toMatch(/^ok/);
    expect(existsSync(path.join(work, 'c'))).toBe(true);
    // Its own temp folder is writable, and not the one every process shares.
    const temp = (await call('boxed', 'env', {})).slice('ok: '.length);
    expect(temp).toMatch(/mcp-warden-boxed-/);
    expect(await call('boxed', 'write', { path: path.join(temp, 'scratch') })).toMatch(/^ok/);

    expect(await call('open', 'connect', { host: '127.0.0.1', port: tcp })).toMatch(/^ok/);
    expect(await call('boxed', 'connect', { host: '127.0.0.1', port: tcp })).toMatch(/^refused: E/);

    const question = { name: 'exfiltrate.example', server: `127.0.0.1:${dns}` };
    expect(await call('open', 'resolve', question)).toBe('ok: 127.0.0.1');
    expect(await call('boxed', 'resolve', question)).toMatch(/^refused: E/);

    await host!.close();
    host = undefined;
    const start = readAudit(path.join(dir, 'audit.jsonl')).find((r) => r.type === 'server_start');
    expect(start).toMatchObject({
      server: 'boxed',
      sandbox: { read: [], write: [work], network: false, temp },
    });
  }, 60_000);

  it('reaches an allowed host through the proxy and not another, and the refusal is audited', async () => {
    const dir = tempDir();
    const web = await listening(createHttpServer((_req, res) => res.end('hello')));
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        servers: {
          boxed: probe({ sandbox: { network: { allow: ['localhost'] } } }),
          open: probe(),
        },
      },
      dir,
    );
    await connect(config, { env: { HOME: fakeHome() } }, ['boxed', 'open']);
    expect(await call('boxed', 'fetch', { url: `http://localhost:${web}/` })).toBe('ok: hello');
    expect(await call('open', 'fetch', { url: `http://127.0.0.1:${web}/` })).toBe('ok: hello');
    expect(await call('boxed', 'fetch', { url: `http://127.0.0.1:${web}/` })).toMatch(/^refused: HTTP 403/);
    await host!.close();
    host = undefined;
    const denied = readAudit(path.join(dir, 'audit.jsonl')).filter((r) => r.type === 'sandbox_denied');
    expect(denied).toMatchObject([{ server: 'boxed', target: `127.0.0.1:${web}` }]);
  }, 60_000);

  it('the real filesystem server under sandbox: auto works in its folder and cannot leave it, even told to', async () => {
    const home = fakeHome();
    const dir = tempDir();
    const project = path.join(dir, 'project');
    mkdirSync(project);
    const entry = (sandbox: unknown) => ({
      command: NODE,
      args: [serverBin('filesystem'), project],
      sandbox,
    });
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { fs: entry('auto'), plain: entry(false) } },
      dir,
    );
    // The host's roots replace the folders the server was started with: its own check then lets
    // it into the home folder, and only the sandbox stands in the way (the policy allows all).
    const roots = [project, home].map((folder) => ({ uri: pathToFileURL(folder).href }));
    await connect(
      config,
      {
        env: { HOME: home },
        capabilities: { roots: { listChanged: true } },
        beforeConnect: (client) => client.setRequestHandler(ListRootsRequestSchema, () => ({ roots })),
      },
      ['fs', 'plain'],
    );
    const note = path.join(project, 'note.txt');
    expect(await call('fs', 'write_file', { path: note, content: 'inside' })).toMatch(/Successfully wrote/);
    expect(await call('fs', 'read_text_file', { path: note })).toBe('inside');
    const key = path.join(home, '.ssh', 'id_ed25519');
    await expect
      .poll(() => call('plain', 'read_text_file', { path: key }), { timeout: 10_000 })
      .toBe('FAKE PRIVATE KEY');
    // Told it may, by the roots it was given, and still not able to.
    await expect
      .poll(() => call('fs', 'read_text_file', { path: key }), { timeout: 10_000 })
      .toMatch(/ENOENT|no such file/i);
  }, 60_000);
});

describe.skipIf(!canSandbox)('mcp-warden tools and check', () => {
  it('tools runs a sandboxed server in its sandbox and says so; check shows its effective grants', async () => {
    const dir = tempDir();
    const project = path.join(dir, 'project');
    mkdirSync(project);
    const config = writeConfig(
      {
        // The command waits this long for the servers; a loaded machine may need it.
        gateway: { ...FAST_GATEWAY, startupTimeout: '30s' },
        servers: {
          fs: { command: NODE, args: [serverBin('filesystem'), project], sandbox: 'auto' },
          open: probe(),
        },
      },
      dir,
    );
    const tools = await runCli(['tools', '--config', config], { HOME: fakeHome() });
    expect(tools.stdout).toMatch(/^server fs: ready, \d+ tools, sandboxed/m);
    expect(tools.stdout).toMatch(/^server open: ready, 6 tools(?!, sandboxed)/m);
    const check = await runCli(['check', '--config', config]);
    expect(check.stdout).toContain(`server fs: sandboxed: read nothing; write ${project}; network off\n`);
    expect(check.stdout).not.toContain('server open: sandboxed');
  }, 60_000);
});

describe.skipIf(process.platform !== 'linux')('where bubblewrap is missing', () => {
  it('a sandboxed server does not start, saying what to install; the others run', async () => {
    // A PATH without bwrap: the gateway, its servers and the shell it starts them with are all
    // named by absolute path, so nothing else needs one.
    const dir = tempDir();
    const config = writeConfig(
      { gateway: FAST_GATEWAY, servers: { boxed: probe({ sandbox: true }), open: probe() } },
      dir,
    );
    await connect(config, { env: { HOME: fakeHome(), PATH: path.join(dir, 'empty') } }, ['open']);
    await host!.waitForStderr(/bubblewrap \(bwrap\) not installed.*apt-get install bubblewrap socat/, 20_000);
    expect(host!.stderr()).toMatch(/boxed.*failed to start/);
    expect(await call('open', 'env', {})).toMatch(/^ok/);
    const { tools } = await host!.client.listTools();
    expect(tools.some((tool) => tool.name.startsWith('boxed__'))).toBe(false);
  }, 60_000);
});

describe.skipIf(canSandbox || process.platform !== 'linux')('a sandboxed stdio server', () => {
  it('needs bubblewrap and socat', (context) =>
    context.skip(`${missing.join(' and ')} not installed (.ci/run installs them from .ci/debian-packages)`));
});
