/**
 * Edits of the config file while the gateway serves, run in-process (test/inprocess/served.ts:
 * the same `startServing` as `mcp-warden --config FILE`, with real upstream processes): servers
 * added, removed and changed with calls in flight, a broken edit, an env file edit, managed
 * settings that block a server or lock reload off, and hosts behind the HTTP listener. Each
 * test waits for what the host is told (list_changed) or for the gateway's own line, never a
 * fixed time. Fifty quick edits, which count the gateway process's own children, stay with the
 * binary in test/integration/configReload.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  FAST_GATEWAY,
  FIXTURE,
  isAlive,
  NODE,
  readAudit,
  tempDir,
  textOf,
  waitForExit,
  type HostSession,
} from '../integration/harness.js';
import { connectHttpHost, type HttpHost } from '../integration/httpHarness.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

/** A fixture server entry as YAML flow text; `flags` after the fixture path. */
function entry(flags: string[], extra = ''): string {
  return `{ command: ${JSON.stringify(NODE)}, args: ${JSON.stringify([FIXTURE, ...flags])}${extra} }`;
}

/** A YAML config in `dir` with these servers (name → flow entry), and a way to write it again. */
function yamlConfig(dir: string, servers: Record<string, string>, head = '') {
  const file = path.join(dir, 'proxy.config.yaml');
  const text = (s: Record<string, string>) =>
    `gateway: ${JSON.stringify(FAST_GATEWAY)}\naudit: { file: ./audit.jsonl }\n${head}servers:\n${Object.entries(
      s,
    )
      .map(([name, e]) => `  ${name}: ${e}\n`)
      .join('')}`;
  writeFileSync(file, text(servers));
  return {
    file,
    audit: path.join(dir, 'audit.jsonl'),
    write: (s: Record<string, string>) => writeFileSync(file, text(s)),
    writeRaw: (raw: string) => writeFileSync(file, raw),
  };
}

/** Counts the `notifications/tools/list_changed` a host gets, and waits for the next ones. */
function listChanges(client: Client) {
  let count = 0;
  const waiters: (() => void)[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    count++;
    for (const w of waiters.splice(0)) w();
  });
  return {
    get count() {
      return count;
    },
    next: () => new Promise<void>((resolve) => waiters.push(resolve)),
  };
}

async function serve(file: string, env: Record<string, string> = {}) {
  let changes!: ReturnType<typeof listChanges>;
  const host = await each.connect(file, { env, beforeConnect: (client) => (changes = listChanges(client)) });
  return { host, changes };
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((t) => t.name).sort();
}

function pidOf(file: string): number {
  return Number(readFileSync(file, 'utf8').trim());
}

/** Waits for the gateway's `n`-th "reloaded:" line (counting from the start). */
async function reloads(host: HostSession, n: number): Promise<void> {
  await host.waitForStderr(new RegExp(`(config file \\S+ reloaded:[^]*){${n}}`));
}

describe('servers added, removed and changed while serving', () => {
  it('starts, stops and restarts only what the edit changed; calls in flight are answered; subscriptions survive', async () => {
    const dir = tempDir();
    const pid = (name: string) => path.join(dir, `${name}.pid`);
    const keep = entry(['--resources', '--name', 'keep', '--pid-file', pid('keep')]);
    const gone = entry(['--pid-file', pid('gone')]);
    const config = yamlConfig(dir, { keep, gone, edit: entry(['--pid-file', pid('edit')]) });
    const { host, changes } = await serve(config.file);
    expect(await toolNames(host.client)).toContain('gone__echo');

    const keepPid = pidOf(pid('keep'));
    const gonePid = pidOf(pid('gone'));
    const editPid = pidOf(pid('edit'));
    await host.client.subscribeResource({ uri: 'fixture://keep/a' });
    const started = () => readAudit(config.audit).filter((r) => r.type === 'call_start').length;
    const before = started();
    const goneCall = host.client.callTool({ name: 'gone__sleep', arguments: { ms: 60_000 } });
    const editCall = host.client.callTool({ name: 'edit__sleep', arguments: { ms: 60_000 } });
    // Both calls are at their servers before the edit.
    await expect.poll(started).toBe(before + 2);

    const listed = changes.next();
    config.write({
      // Moved first: its line in the file changes, its entry does not.
      added: entry(['--name', 'added']),
      keep,
      edit: entry(['--pid-file', pid('edit')], ', env: { GENERATION: "2" }'),
    });
    await listed;

    const goneAnswer = await goneCall;
    expect(goneAnswer.isError).toBe(true);
    expect(textOf(goneAnswer)).toMatch(/"gone".*removed from the config/);
    const editAnswer = await editCall;
    expect(editAnswer.isError).toBe(true);
    expect(textOf(editAnswer)).toMatch(/"edit".*entry in the config file changed/);

    await expect.poll(() => toolNames(host.client)).toContain('added__echo');
    expect(await toolNames(host.client)).not.toContain('gone__echo');
    expect(await waitForExit(gonePid, 5000)).toBe(true);
    expect(await waitForExit(editPid, 5000)).toBe(true);
    await expect.poll(() => pidOf(pid('edit'))).not.toBe(editPid);
    await expect
      .poll(async () =>
        textOf(await host.client.callTool({ name: 'edit__env', arguments: { name: 'GENERATION' } })),
      )
      .toBe('2');

    // The unchanged server is the same process, still subscribed.
    expect(pidOf(pid('keep'))).toBe(keepPid);
    expect(isAlive(keepPid)).toBe(true);
    const updated = new Promise<string>((resolve) =>
      host.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)),
    );
    const said = await host.client.callTool({
      name: 'keep__update_resource',
      arguments: { uri: 'fixture://keep/a' },
    });
    expect(textOf(said)).toBe('notified');
    expect(await updated).toBe('fixture://keep/a');

    await reloads(host, 1);
    expect(host.stderr()).toMatch(
      /reloaded: started added; stopped gone; restarted edit \(entry changed\); 1 unchanged/,
    );
    const record = readAudit(config.audit).find((r) => r.type === 'config_reload');
    expect(record).toMatchObject({ applied: true, added: ['added'], removed: ['gone'], changed: ['edit'] });
  });

  it('an edit that changes no server tells the host nothing', async () => {
    const dir = tempDir();
    const config = yamlConfig(dir, { one: entry([]) });
    const { host, changes } = await serve(config.file);
    await toolNames(host.client);
    const before = changes.count;
    writeFileSync(config.file, `# a comment\n${readFileSync(config.file, 'utf8')}`);
    await reloads(host, 1);
    expect(host.stderr()).toContain('reloaded: no server changed; 1 unchanged');
    expect(changes.count).toBe(before);
  });
});

describe('settings a running gateway cannot change', () => {
  it('are named as needing a restart, while the rest of the edit applies', async () => {
    const dir = tempDir();
    const config = yamlConfig(dir, { one: entry([]) });
    const { host } = await serve(config.file);
    await toolNames(host.client);
    const text = readFileSync(config.file, 'utf8');
    writeFileSync(
      config.file,
      text.replace(/^gateway: \{/, 'gateway: { naming: { separator: "--" }, log: { level: debug },') +
        `  two: ${entry([])}\n`,
    );
    await expect.poll(() => toolNames(host.client)).toContain('two__echo');
    expect(host.stderr()).toMatch(
      /gateway\.naming changed, but it cannot change in a running gateway .*restart needed for gateway\.naming/,
    );
    expect(host.stderr()).toContain('restart needed for gateway.log');
    const record = readAudit(config.audit).find((r) => r.type === 'config_reload');
    expect(record).toMatchObject({
      applied: true,
      added: ['two'],
      restartNeeded: ['gateway.naming', 'gateway.log'],
    });
  });

  it('gateway.reload: false in the file leaves edits for the next start', async () => {
    const dir = tempDir();
    const config = yamlConfig(dir, { one: entry([]) });
    writeFileSync(
      config.file,
      readFileSync(config.file, 'utf8').replace(/^gateway: \{/, 'gateway: { reload: false,'),
    );
    const { host } = await serve(config.file);
    await toolNames(host.client);
    writeFileSync(config.file, `${readFileSync(config.file, 'utf8')}  two: ${entry([])}\n`);
    await host.waitForStderr(/changed, but gateway\.reload is false[^]*restart needed/);
    expect((await toolNames(host.client)).some((n) => n.startsWith('two__'))).toBe(false);
  });
});

describe('a broken edit', () => {
  it('keeps the config in force, says where the problem is, and a fixed edit then applies', async () => {
    const dir = tempDir();
    const config = yamlConfig(dir, { one: entry([]) });
    const { host } = await serve(config.file);
    await toolNames(host.client);
    const good = readFileSync(config.file, 'utf8');

    config.writeRaw(`${good}  two: { command: [unclosed\n`);
    await host.waitForStderr(
      /changed but cannot be used; the config in force stays:\n\S+proxy\.config\.yaml:\d+:\d+/,
    );
    // A schema error and a server that cannot start are refused whole too.
    config.writeRaw(`${good}  two: ${entry([], ', colour: blue')}\n`);
    await host.waitForStderr(/cannot be used[^]*colour/);
    const unset = ', env: { X: "$' + '{NOT_SET_ANYWHERE}" }';
    config.writeRaw(`${good}  two: ${entry([], unset)}\n`);
    await host.waitForStderr(/cannot be used[^]*NOT_SET_ANYWHERE/);
    expect(await toolNames(host.client)).toEqual(await toolNames(host.client));
    expect((await toolNames(host.client)).some((n) => n.startsWith('two__'))).toBe(false);
    expect(textOf(await host.client.callTool({ name: 'one__echo', arguments: { text: 'still' } }))).toBe(
      'still',
    );

    config.write({ one: entry([]), two: entry([]) });
    await expect.poll(() => toolNames(host.client)).toContain('two__echo');
    const reloadsAudited = readAudit(config.audit).filter((r) => r.type === 'config_reload');
    expect(reloadsAudited.map((r) => r.applied)).toEqual([false, false, false, true]);
    expect(String(reloadsAudited[0]!.error)).toMatch(/proxy\.config\.yaml:\d+:\d+/);
  });
});

describe('an env file edit', () => {
  it('restarts the server that names it, and only that one', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'a.env'), 'GENERATION=1\n');
    const other = entry(['--pid-file', path.join(dir, 'other.pid')]);
    const config = yamlConfig(dir, { withenv: entry([], ', envFile: ./a.env'), other });
    const { host, changes } = await serve(config.file);
    await toolNames(host.client);
    const otherPid = pidOf(path.join(dir, 'other.pid'));
    const env = async () =>
      textOf(await host.client.callTool({ name: 'withenv__env', arguments: { name: 'GENERATION' } }));
    expect(await env()).toBe('1');

    const listed = changes.next();
    writeFileSync(path.join(dir, 'a.env'), 'GENERATION=2\n');
    await listed;
    await expect.poll(env).toBe('2');
    expect(pidOf(path.join(dir, 'other.pid'))).toBe(otherPid);
    expect(host.stderr()).toContain('restarted withenv (entry changed); 1 unchanged');
  });
});

describe('under managed settings', () => {
  function managed(yaml: string) {
    const dir = tempDir('warden-managed-');
    writeFileSync(path.join(dir, 'managed.yaml'), yaml);
    return { MCP_WARDEN_MANAGED_DIR: dir };
  }

  it('a server the edit adds that the managed settings deny is not started', async () => {
    const dir = tempDir();
    const config = yamlConfig(dir, { one: entry([]) });
    const deniedArgs = [FIXTURE, '--name', 'denied'];
    const env = managed(
      `servers:\n  deny:\n    - command: ${JSON.stringify(NODE)}\n      args: ${JSON.stringify(deniedArgs)}\n`,
    );
    const { host } = await serve(config.file, env);
    await toolNames(host.client);

    config.write({ one: entry([]), denied: entry(['--name', 'denied']), two: entry([]) });
    await expect.poll(() => toolNames(host.client)).toContain('two__echo');
    expect((await toolNames(host.client)).some((n) => n.startsWith('denied__'))).toBe(false);
    expect(host.stderr()).toMatch(/server "denied" is not started, it is blocked by managed settings/);
    const blocked = readAudit(config.audit).filter((r) => r.type === 'server_blocked');
    expect(blocked.map((r) => r.server)).toEqual(['denied']);
    // The model is told why, as a tool result, rather than a protocol error it cannot read.
    const refused = await host.client.callTool({ name: 'denied__echo', arguments: { text: 'x' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/server "denied" is not available: it is blocked by managed settings/);
  });

  it('an administrator who locks reload off keeps the config in force until a restart', async () => {
    const dir = tempDir();
    const config = yamlConfig(dir, { one: entry([]) });
    const { host } = await serve(config.file, managed('lock:\n  gateway:\n    reload: false\n'));
    await toolNames(host.client);
    config.write({ one: entry([]), two: entry([]) });
    await host.waitForStderr(/changed, but gateway\.reload is false[^]*restart needed/);
    expect((await toolNames(host.client)).some((n) => n.startsWith('two__'))).toBe(false);
  });
});

describe('behind the HTTP listener', () => {
  it("every connected host is told; the shared pool and the principal's own processes both follow the edit", async () => {
    const dir = tempDir();
    const ownPid = path.join(dir, 'own.pid');
    const own = (n: number) => entry(['--pid-file', ownPid], `, env: { GENERATION: "${n}" }`);
    // It serves resources from the start, so the hosts are told the gateway has resources.
    const common = entry(['--resources', '--name', 'common'], ', shared: true');
    const config = yamlConfig(dir, { common, own: own(1) });
    const gateway = await each.http(config.file, {
      env: { MCP_WARDEN_MANAGED_DIR: tempDir('warden-no-managed-') },
    });
    const hosts: { host: HttpHost; changes: ReturnType<typeof listChanges>; resources: Promise<void> }[] = [];
    for (const name of ['first', 'second']) {
      let changes!: ReturnType<typeof listChanges>;
      let resources!: Promise<void>;
      const host = each.track(
        await connectHttpHost(gateway.url, {
          name,
          beforeConnect: (client) => {
            changes = listChanges(client);
            resources = new Promise((resolve) =>
              client.setNotificationHandler(ResourceListChangedNotificationSchema, () => resolve()),
            );
          },
        }),
      );
      hosts.push({ host, changes, resources });
      await toolNames(host.client);
      // A host is told of changes to the lists it has fetched.
      await host.client.listResources();
    }
    const generation = async (client: Client) =>
      textOf(await client.callTool({ name: 'own__env', arguments: { name: 'GENERATION' } }));
    expect(await generation(hosts[0]!.host.client)).toBe('1');
    const firstOwn = pidOf(ownPid);

    const told = hosts.map((h) => h.changes.next());
    config.write({
      common,
      own: own(2),
      two: entry([], ', shared: true'),
      files: entry(['--resources', '--name', 'files'], ', shared: true'),
    });
    await Promise.all(told);
    // A server with resources joined: the resource lists changed too.
    await Promise.all(hosts.map((h) => h.resources));
    for (const { host } of hosts) await expect.poll(() => toolNames(host.client)).toContain('two__echo');
    await expect.poll(() => generation(hosts[1]!.host.client)).toBe('2');
    expect(await waitForExit(firstOwn, 5000)).toBe(true);
  });
});
