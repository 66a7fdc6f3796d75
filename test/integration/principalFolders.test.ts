/**
 * Per-principal servers that share nothing on disk: behind the HTTP listener, with a real issuer
 * (oauth2-mock-server) and the SDK's Streamable HTTP client as each user's host, the real
 * server-memory and server-filesystem get `${principal.home}` (each user's own folder, 0700) and
 * one user's data never reaches the other.
 */
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST_GATEWAY, NODE, runCli, serverBin, tempDir, textOf, writeConfig } from './harness.js';
import {
  connectHttpHost,
  startHttpGateway,
  suiteIssuer,
  type HttpGateway,
  type HttpHost,
} from './httpHarness.js';

const AUDIENCE = 'https://warden.test/mcp';
/**
 * A user's first call waits for their own processes this long: two real servers per user start
 * on a loaded machine, and a call that came before them would only be told to try again.
 */
const GATEWAY = { ...FAST_GATEWAY, startupTimeout: '45s' };
/** Each test starts four to six Node processes besides the gateway. */
const SLOW = 120_000;
const issuer = suiteIssuer(AUDIENCE);

let gateway: HttpGateway | undefined;
const hosts: HttpHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close().catch(() => {})));
  await gateway?.stop();
  gateway = undefined;
});

/** A gateway serving `servers` over HTTP, keeping its state (and each principal's folder) in `state`. */
async function serve(servers: Record<string, unknown>): Promise<{ state: string }> {
  const state = realpathSync(tempDir('warden-principals-'));
  const config = writeConfig({
    gateway: GATEWAY,
    auth: { issuer: issuer.url(), audience: AUDIENCE },
    servers,
  });
  gateway = await startHttpGateway(config, { env: { XDG_STATE_HOME: state } });
  return { state };
}

async function hostAs(subject: string): Promise<HttpHost> {
  const host = await connectHttpHost(gateway!.url, {
    token: await issuer.token(subject),
    name: `${subject}-host`,
  });
  hosts.push(host);
  return host;
}

const memory = (env: Record<string, string>) => ({ command: NODE, args: [serverBin('memory')], env });

async function remember(host: HttpHost, name: string): Promise<void> {
  const result = await host.client.callTool({
    name: 'memory__create_entities',
    arguments: { entities: [{ name, entityType: 'note', observations: [`${name} was written down`] }] },
  });
  expect(result.isError ?? false).toBe(false);
}

const graphOf = async (host: HttpHost) =>
  textOf(await host.client.callTool({ name: 'memory__read_graph', arguments: {} }));

describe('per-principal folders', () => {
  it(
    "gives each user's server-memory its own memory file: one user's entities never reach the other",
    async () => {
      const { state } = await serve({
        memory: memory({ MEMORY_FILE_PATH: '${principal.home}/memory.jsonl' }),
      });
      const alice = await hostAs('alice@example.com');
      const bob = await hostAs('bob');
      await remember(alice, 'alice-secret');
      await remember(bob, 'bob-secret');
      expect(await graphOf(alice)).toContain('alice-secret');
      expect(await graphOf(alice)).not.toContain('bob-secret');
      expect(await graphOf(bob)).toContain('bob-secret');
      expect(await graphOf(bob)).not.toContain('alice-secret');

      // Each memory file is in its user's own folder, readable by the gateway's user only, named
      // by the readable subject and a hash of issuer and subject.
      const homes = path.join(state, 'mcp-warden', 'principals');
      const folders = readdirSync(homes).sort();
      expect(folders).toEqual([
        expect.stringMatching(/^alice_example.com-[0-9a-f]{16}$/),
        expect.stringMatching(/^bob-[0-9a-f]{16}$/),
      ]);
      for (const folder of folders) {
        expect(statSync(path.join(homes, folder)).mode & 0o777).toBe(0o700);
        expect(existsSync(path.join(homes, folder, 'memory.jsonl'))).toBe(true);
      }
    },
    SLOW,
  );

  it(
    'without a placeholder, one MEMORY_FILE_PATH is shared: what alice writes, bob reads',
    async () => {
      // What the placeholder prevents: each user has their own process, but both write one file.
      const shared = path.join(tempDir(), 'memory.jsonl');
      await serve({ memory: memory({ MEMORY_FILE_PATH: shared }) });
      const alice = await hostAs('alice@example.com');
      const bob = await hostAs('bob');
      await remember(alice, 'alice-secret');
      expect(await graphOf(bob)).toContain('alice-secret');
    },
    SLOW,
  );

  it(
    "runs each user's server-filesystem in that user's own folder by default, and on ${principal.home}",
    async () => {
      const { state } = await serve({
        // "." is the process's working folder: the principal's own, as the entry gives no cwd.
        here: { command: NODE, args: [serverBin('filesystem'), '.'] },
        home: { command: NODE, args: [serverBin('filesystem'), '${principal.home}'] },
      });
      const alice = await hostAs('alice');
      const bob = await hostAs('bob');
      const allowed = async (host: HttpHost, server: string) =>
        textOf(await host.client.callTool({ name: `${server}__list_allowed_directories`, arguments: {} }));
      const homes = path.join(state, 'mcp-warden', 'principals');
      const aliceHome = path.join(
        homes,
        readdirSync(homes).find((f) => f.startsWith('alice-'))!,
      );
      const bobHome = path.join(
        homes,
        readdirSync(homes).find((f) => f.startsWith('bob-'))!,
      );
      for (const server of ['here', 'home']) {
        expect(await allowed(alice, server)).toContain(aliceHome);
        expect(await allowed(bob, server)).toContain(bobHome);
      }
      const note = path.join(aliceHome, 'note.txt');
      const wrote = await alice.client.callTool({
        name: 'home__write_file',
        arguments: { path: note, content: "alice's note" },
      });
      expect(wrote.isError ?? false).toBe(false);
      const read = await bob.client.callTool({ name: 'home__read_text_file', arguments: { path: note } });
      expect(read.isError).toBe(true);
      expect(textOf(read)).not.toContain("alice's note");
      expect(
        textOf(await bob.client.callTool({ name: 'here__list_directory', arguments: { path: '.' } })),
      ).not.toContain('note.txt');
    },
    SLOW,
  );
});

/** A config with a listener and server-memory (lines 4 to 6), `more` lines after. */
const teamConfig = (more: readonly string[]) =>
  writeConfig(
    [
      'listen:',
      '  http: 127.0.0.1:0',
      'servers:',
      '  memory:',
      `    command: ${NODE}`,
      `    args: [${serverBin('memory')}]`,
      ...more,
      '',
    ].join('\n'),
  );

describe('claims', () => {
  it(
    "names a user's file by a claim listed in auth.claims, and refuses an unsafe one, naming server and claim",
    async () => {
      const state = realpathSync(tempDir('warden-principals-'));
      const config = writeConfig({
        gateway: GATEWAY,
        auth: { issuer: issuer.url(), audience: AUDIENCE, claims: ['email'] },
        servers: {
          memory: memory({ MEMORY_FILE_PATH: '${principal.home}/${principal.claims.email}.jsonl' }),
        },
      });
      gateway = await startHttpGateway(config, { env: { XDG_STATE_HOME: state } });
      const connect = async (subject: string, email: string) => {
        const host = await connectHttpHost(gateway!.url, {
          token: await issuer.token(subject, { email }),
          name: `${subject}-host`,
        });
        hosts.push(host);
        return host;
      };
      const alice = await connect('alice', 'alice@example.com');
      await remember(alice, 'alice-secret');
      const homes = path.join(state, 'mcp-warden', 'principals');
      const aliceHome = readdirSync(homes).find((f) => f.startsWith('alice-'))!;
      expect(readdirSync(path.join(homes, aliceHome))).toEqual(['alice@example.com.jsonl']);

      const mallory = await connect('mallory', `../${aliceHome}/alice@example.com`);
      // What the host is told names the server and the claim; nothing of alice's reaches mallory.
      const refused = await mallory.client.callTool({ name: 'memory__read_graph', arguments: {} });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(
        /"memory" is not available: its process for mallory@\S+ cannot start: \$\{principal\.claims\.email\} would be "\.\.\//,
      );
      expect(textOf(refused)).not.toContain('alice-secret');
      expect(readdirSync(homes)).toEqual([aliceHome]);
    },
    SLOW,
  );
});

describe('where ${principal.…} may stand', () => {
  it('check refuses it in a server that one process runs for everyone, naming file, line and key', async () => {
    const config = teamConfig([
      '    shared: true',
      '    env:',
      '      MEMORY_FILE_PATH: ${principal.home}/memory.jsonl',
    ]);
    const result = await runCli(['check', '--config', config]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      `${config}:9:25: servers.memory.env.MEMORY_FILE_PATH: server "memory" has "shared: true"`,
    );
  });

  it('check warns of a per-principal server given a shared writable path, saying the fix', async () => {
    const config = teamConfig([
      '  files:',
      `    command: ${NODE}`,
      `    args: [${serverBin('filesystem')}, /srv/team]`,
    ]);
    const result = await runCli(['check', '--config', config]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `${config}:4: servers.memory.env: server "memory" runs one process per principal`,
    );
    expect(result.stdout).toMatch(
      /servers\.memory\.env: .*set env MEMORY_FILE_PATH: \$\{principal\.home\}\/memory\.jsonl/,
    );
    expect(result.stdout).toContain(
      `${config}:7: servers.files.args[1]: server "files" runs one process per principal`,
    );
    expect(result.stdout).toMatch(/servers\.files\.args\[1\]: .*\/srv\/team.*give \$\{principal\.home\}/);
    // The default working folder is each principal's own: no warning about cwd.
    expect(result.stdout).not.toContain('.cwd:');
  });
});
