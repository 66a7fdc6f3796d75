/**
 * Isolation between principals on the built binary's HTTP listener, for what needs the gateway's
 * own process: the processes it is the parent of (one of server-filesystem per principal, one of
 * a shared server, none for nobody), and the exit code 2 of a bad `shared:` or
 * `listen.perPrincipal` value. The other scenarios run in-process in
 * test/inprocess/httpPrincipals.test.ts.
 */
import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FAST_GATEWAY,
  fixture,
  isAlive,
  readAudit,
  runCli,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  NODE,
  type AuditRecord,
} from './harness.js';
import {
  connectHttpHost,
  startHttpGateway,
  suiteIssuer,
  type HttpGateway,
  type HttpHost,
} from './httpHarness.js';

const AUDIENCE = 'https://warden.test/mcp';
const issuer = suiteIssuer(AUDIENCE);

let gateway: HttpGateway | undefined;
const hosts: HttpHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close().catch(() => {})));
  await gateway?.stop();
  gateway = undefined;
});

/** A host connected as `subject`, answering roots/list with its own folder `roots`. */
async function hostAs(subject: string, options: { readonly roots: string }): Promise<HttpHost> {
  const connected = await connectHttpHost(gateway!.url, {
    token: await issuer.token(subject, { scope: 'mcp' }),
    name: `${subject}-host`,
    capabilities: { roots: { listChanged: true } },
    beforeConnect: (client) =>
      client.setRequestHandler(ListRootsRequestSchema, () => ({
        roots: [{ uri: `file://${options.roots}`, name: `${subject}'s folder` }],
      })),
  });
  hosts.push(connected);
  return connected;
}

/** A config in a fresh folder: `servers` behind the issuer, with an audit trail. */
function setup(servers: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const dir = tempDir();
  const auditFile = path.join(dir, 'audit.jsonl');
  const auth = { issuer: issuer.url(), audience: AUDIENCE };
  const config = writeConfig(
    { gateway: FAST_GATEWAY, audit: { file: auditFile }, auth, servers, ...extra },
    dir,
  );
  return { config, auditFile };
}

const starts = (file: string, server: string): AuditRecord[] =>
  readAudit(file).filter((r) => r.type === 'upstream_start' && r.server === server);
const subjectOf = (r: AuditRecord) => (r.principal as { subject: string }).subject;

describe('isolation between principals', () => {
  it("runs server-filesystem once per principal, each with its own host's roots; a shared server once", async () => {
    const base = realpathSync(tempDir());
    const [aliceDir, bobDir, configured] = ['alice', 'bob', 'configured'].map((name) => {
      const folder = path.join(base, name);
      mkdirSync(folder);
      return folder;
    }) as [string, string, string];
    const { config, auditFile } = setup({
      fs: { command: NODE, args: [serverBin('filesystem'), configured] },
      up: fixture([], { shared: true }),
    });
    gateway = await startHttpGateway(config);
    const alice = await hostAs('alice', { roots: aliceDir });
    const bob = await hostAs('bob', { roots: bobDir });
    const allowed = async (host: HttpHost) =>
      textOf(await host.client.callTool({ name: 'fs__list_allowed_directories', arguments: {} }));
    // The server asks its host for roots when told they changed; each process asks its own
    // principal's host, and each user sees only their own folder.
    await alice.client.sendRootsListChanged();
    await bob.client.sendRootsListChanged();
    await expect.poll(() => allowed(alice)).toContain(aliceDir);
    await expect.poll(() => allowed(bob)).toContain(bobDir);
    expect(await allowed(alice)).not.toContain(bobDir);
    expect(await allowed(bob)).not.toContain(aliceDir);

    // The log says whose process each line is about.
    expect(gateway.stderr()).toMatch(/\[fs for alice@http:\/\/\S+\]: connected/);
    expect(gateway.stderr()).toMatch(/\[fs for bob@http:\/\/\S+\]: connected/);
    const fs = starts(auditFile, 'fs');
    expect(fs.map(subjectOf).sort()).toEqual(['alice', 'bob']);
    const pids = fs.map((r) => r.pid as number);
    expect(new Set(pids).size).toBe(2);
    for (const pid of pids) expect(isAlive(pid)).toBe(true);
    // The shared server is one process, the gateway's own.
    const up = starts(auditFile, 'up');
    expect(up).toHaveLength(1);
    expect(up[0]!.principal).toMatchObject({ source: 'os' });
    // And those are all the gateway runs: no process of fs was started for nobody.
    const pid = gateway.child.pid!;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    expect(children.map(Number).sort()).toEqual([...pids, up[0]!.pid as number].sort());
    expect(textOf(await bob.client.callTool({ name: 'up__echo', arguments: { text: 'hi' } }))).toBe('hi');
    expect(starts(auditFile, 'up')).toHaveLength(1);

    await gateway.stop();
    gateway = undefined;
    const exits = readAudit(auditFile).filter((r) => r.type === 'upstream_exit' && r.server === 'fs');
    expect(exits.map(subjectOf).sort()).toEqual(['alice', 'bob']);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
  });

  it('refuses a bad shared: or listen.perPrincipal value, naming the file, line and key', async () => {
    const { config } = setup(
      { up: fixture([], { shared: 'yes' }) },
      { listen: { http: '127.0.0.1:0', perPrincipal: { maxProcesses: 0, idleTimeout: 'soon' } } },
    );
    const result = await runCli(['--config', config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /proxy\.config\.json:\d+:\d+: servers\.up\.shared: expected true or false, got a string/,
    );
    expect(result.stderr).toMatch(
      /proxy\.config\.json:\d+:\d+: listen\.perPrincipal\.maxProcesses: must be at least 1, got 0/,
    );
    expect(result.stderr).toMatch(
      /proxy\.config\.json:\d+:\d+: listen\.perPrincipal\.idleTimeout: invalid duration "soon"/,
    );
    const over = setup(
      { up: fixture() },
      { listen: { http: '127.0.0.1:0', maxSessions: 4, perPrincipal: { maxSessions: 5 } } },
    );
    const refused = await runCli(['--config', over.config]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /proxy\.config\.json:\d+:\d+: listen\.perPrincipal\.maxSessions: 5 is more than listen\.maxSessions \(4\)/,
    );
  });
});
