/**
 * One user's own process of a stdio server, called one request at a time over two gateway
 * replicas that share a real `redis-server`. Each replica runs its own copy of alice's
 * server-memory on one file (storage both replicas mount, as the team guide tells operators to
 * set up): server-memory reads the whole file, changes it and writes it back on every write, so
 * two writes at once lose one of them. With the turn taken in the store (the default), every
 * entity of a burst spread over both replicas is in the graph afterwards; the same burst on a
 * server with `acrossReplicas: parallel` loses some. Bob's requests are not held up by alice's
 * turn, a request that waits too long says that another replica is using the process, and the
 * turn of a replica killed while it held it comes back when its lease runs out. A task alice's
 * call starts holds her turn until it ends, whether or not her host asks for its result.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fixture,
  NODE,
  readAudit,
  ROOT,
  runCli,
  serverBin,
  tempDir,
  textOf,
  type AuditRecord,
} from './harness.js';
import { connectHttpHost, suiteIssuer, type HttpGateway, type HttpHost } from './httpHarness.js';
import { hasRedis, startRedis, startStoreReplica, storeKeys } from './redis.js';

const TITLE = hasRedis
  ? "one user's own server process, one request at a time over two replicas"
  : "one user's own server process, one request at a time over two replicas (skipped: redis-server is not installed)";
const PASSWORD = 'redis-password-for-the-turns-test';
const AUDIENCE = 'https://warden.test/mcp';
/** Each store operation's bound; a lease lives five of them without renewal (2.5 s). */
const STORE_TIMEOUT = '500ms';
/** Writes each replica sends at once in the burst. */
const BURST = 12;
const SLOW = 90_000;
/** How long a task of the task server works before it is done. */
const TASK_MS = 2_000;

describe.skipIf(!hasRedis)(TITLE, () => {
  const issuer = suiteIssuer(AUDIENCE);
  let redis: ChildProcess | undefined;
  let redisPort = 0;
  const replicas: HttpGateway[] = [];
  const audits: string[] = [];
  const hosts: HttpHost[] = [];
  let memoryDir: string;
  /** What both of alice's task servers were asked, and when each task's work ended, in order. */
  let taskRecord: string;

  /** Starts one replica with the suite's servers; every replica of the suite has the same config. */
  async function replica(): Promise<HttpGateway> {
    const { replica, audit } = await startStoreReplica({
      redisPort,
      password: PASSWORD,
      storeTimeout: STORE_TIMEOUT,
      config: {
        auth: { issuer: issuer.url(), audience: AUDIENCE },
        servers: {
          memory: {
            command: NODE,
            args: [serverBin('memory')],
            env: { MEMORY_FILE_PATH: `${memoryDir}/\${principal.id}.jsonl` },
          },
          loose: {
            command: NODE,
            args: [serverBin('memory')],
            env: { MEMORY_FILE_PATH: `${memoryDir}/loose-\${principal.id}.jsonl` },
            acrossReplicas: 'parallel',
          },
          slow: fixture([], { tools: { timeouts: { echo: '1500ms' } } }),
          tasks: {
            command: NODE,
            args: [
              path.join(ROOT, 'test/fixtures/task-server.mjs'),
              '--task-ms',
              String(TASK_MS),
              '--record',
              taskRecord,
            ],
          },
        },
      },
    });
    replicas.push(replica);
    audits.push(audit);
    return replica;
  }

  async function host(gateway: HttpGateway, user: string): Promise<HttpHost> {
    const connected = await connectHttpHost(gateway.url, { token: await issuer.token(user), name: user });
    hosts.push(connected);
    return connected;
  }

  const calls = (): AuditRecord[] =>
    audits.flatMap((file) => readAudit(file)).filter((r) => r.type === 'call');

  beforeAll(async () => {
    memoryDir = realpathSync(tempDir('warden-turns-memory-'));
    taskRecord = path.join(memoryDir, 'tasks.jsonl');
    const started = await startRedis(PASSWORD);
    redis = started.process;
    redisPort = started.port;
    await replica();
    await replica();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.close().catch(() => {})));
    await Promise.all(replicas.map((r) => r.stop()));
    redis?.kill('SIGTERM');
  });

  /** Alice's burst of writes to `server`, half through each replica, all at once; the names written. */
  async function burst(server: string, label: string): Promise<string[]> {
    const [one, two] = [await host(replicas[0]!, 'alice'), await host(replicas[1]!, 'alice')];
    const names: string[] = [];
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < BURST; i++)
      for (const [side, h] of [one, two].entries()) {
        const name = `${label}-${side}-${i}`;
        names.push(name);
        writes.push(
          h.client
            .callTool({
              name: `${server}__create_entities`,
              arguments: { entities: [{ name, entityType: 'note', observations: [`${name} was written`] }] },
            })
            .then((result) => expect(result.isError ?? false, textOf(result)).toBe(false)),
        );
      }
    await Promise.all(writes);
    return names;
  }

  /** The entity names in alice's graph of `server`, read through the first replica. */
  async function graph(server: string): Promise<string[]> {
    const h = await host(replicas[0]!, 'alice');
    const text = textOf(await h.client.callTool({ name: `${server}__read_graph`, arguments: {} }));
    return (JSON.parse(text) as { entities: { name: string }[] }).entities.map((e) => e.name);
  }

  it(
    'keeps every write of a burst spread over both replicas, each waiting for its turn',
    async () => {
      const names = await burst('memory', 'kept');
      expect((await graph('memory')).sort()).toEqual(names.sort());
      // Calls that found another one running waited for it, and their records say how long.
      await expect
        .poll(
          () => calls().filter((r) => r.server === 'memory' && r.tool === 'memory__create_entities').length,
        )
        .toBe(2 * BURST);
      for (const file of audits)
        expect(
          readAudit(file).some(
            (r) => r.type === 'call' && r.server === 'memory' && typeof r.leaseWaitMs === 'number',
          ),
        ).toBe(true);
    },
    SLOW,
  );

  it(
    'loses writes of the same burst on a server whose processes run in parallel (acrossReplicas: parallel)',
    async () => {
      const names = await burst('loose', 'lost');
      const kept = await graph('loose');
      expect(kept.length).toBeLessThan(names.length);
      expect(calls().some((r) => r.server === 'loose' && r.leaseWaitMs !== undefined)).toBe(false);
    },
    SLOW,
  );

  it(
    "serves bob while alice's request holds her turn, and ends alice's waiting request with her timeout",
    async () => {
      const aliceHere = await host(replicas[0]!, 'alice');
      const aliceThere = await host(replicas[1]!, 'alice');
      const bobThere = await host(replicas[1]!, 'bob');
      // Alice's processes are started, so what follows waits on turns only.
      await aliceHere.client.callTool({ name: 'slow__add', arguments: { a: 1, b: 1 } });
      await aliceThere.client.callTool({ name: 'slow__add', arguments: { a: 1, b: 1 } });
      let asleep = true;
      const sleeping = aliceHere.client
        .callTool({ name: 'slow__sleep', arguments: { ms: 6_000 } })
        .finally(() => (asleep = false));
      await expect.poll(() => leases(), { timeout: 10_000 }).toHaveLength(1);
      const bob = await bobThere.client.callTool({ name: 'slow__echo', arguments: { text: 'bob here' } });
      expect(textOf(bob)).toBe('bob here');
      expect(asleep).toBe(true);
      const waiting = await aliceThere.client.callTool({ name: 'slow__echo', arguments: { text: 'alice' } });
      expect(waiting.isError).toBe(true);
      expect(textOf(waiting)).toMatch(
        /Tool "echo" on server "slow" timed out after 1\.5 ?s without running: another replica is using alice@\S+'s own process of server "slow", which runs one request at a time/,
      );
      expect(asleep).toBe(true);
      expect(textOf(await sleeping)).toBe('slept 6000');
    },
    SLOW,
  );

  it(
    "gives alice's turn to another replica once the replica holding it is killed and its lease runs out",
    async () => {
      const doomed = await replica();
      const aliceDoomed = await host(doomed, 'alice');
      const aliceThere = await host(replicas[1]!, 'alice');
      void aliceDoomed.client.callTool({ name: 'slow__hang', arguments: {} }).catch(() => {});
      await expect.poll(() => leases(), { timeout: 20_000 }).toHaveLength(1);
      const killedAt = Date.now();
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      const after = await aliceThere.client.callTool({ name: 'slow__sleep', arguments: { ms: 1 } });
      expect(textOf(after)).toBe('slept 1');
      // It ran once the dead replica's lease had run out, not before.
      expect(Date.now() - killedAt).toBeGreaterThan(1_000);
    },
    SLOW,
  );

  it(
    "holds alice's turn for the whole run of her task, though her host never asks for its result, and audits the gateway's own polls as hers",
    async () => {
      const here = await host(replicas[0]!, 'alice');
      const there = await host(replicas[1]!, 'alice');
      // Alice's processes are started, so what follows waits on turns only.
      await here.client.callTool({ name: 'tasks__report', arguments: { n: 1 } });
      await there.client.callTool({ name: 'tasks__report', arguments: { n: 1 } });
      const created = await here.client.request(
        {
          method: 'tools/call',
          params: { name: 'tasks__report', arguments: { n: 2 }, task: { ttl: 60_000 } },
        },
        CreateTaskResultSchema,
      );
      // The task's own request is answered while the task holds the turn.
      const handle = created.task.taskId;
      expect((await here.client.experimental.tasks.getTask(handle)).status).toBe('working');
      const written = await there.client.callTool({ name: 'tasks__report', arguments: { n: 7 } });
      expect(textOf(written)).toContain('"total":14');
      // Alice's write through the other replica reached her server after her task's work ended.
      const steps = readFileSync(taskRecord, 'utf8')
        .trim()
        .split('\n')
        .map(
          (line) => JSON.parse(line) as { method?: string; params?: { arguments?: unknown }; ended?: string },
        )
        .flatMap((entry) =>
          entry.ended !== undefined
            ? [`ended ${entry.ended}`]
            : entry.method === 'tools/call'
              ? [`call ${JSON.stringify(entry.params?.arguments)}`]
              : [],
        );
      expect(steps.slice(-3)).toEqual(['call {"n":2}', 'ended task-1', 'call {"n":7}']);
      const waited = calls().find((r) => r.server === 'tasks' && (r.args as { n?: number }).n === 7);
      expect(waited?.leaseWaitMs).toEqual(expect.any(Number));
      // The gateway asked how the task stood until it ended: each of its polls has a record of
      // its own, under alice, saying the gateway asked; the host's own tasks/get says nothing so.
      const polls = readAudit(audits[0]!).filter((r) => r.type === 'request' && r.method === 'tasks/get');
      const own = polls.filter((r) => r.origin === 'gateway');
      expect(own.length).toBeGreaterThan(0);
      for (const poll of own)
        expect(poll).toMatchObject({
          principal: { subject: 'alice' },
          server: 'tasks',
          direction: 'to_upstream',
          args: { taskId: expect.any(String) },
          outcome: 'ok',
        });
      expect(polls.filter((r) => r.origin === undefined)).toHaveLength(1);
      for (const file of audits) expect((await runCli(['audit', 'verify', file])).code).toBe(0);
    },
    SLOW,
  );

  /** The turns held in the store now (their keys). */
  function leases(): Promise<string[]> {
    return storeKeys(redisPort, PASSWORD, 'mcp-warden:lease:*');
  }
});
