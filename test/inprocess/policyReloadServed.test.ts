/**
 * Policy reload under the file operations that broke it, served in-process (`startServing` on
 * the config file and its watchers): the policy folder deleted and created again, and a file
 * written in two steps whose first half is itself a valid policy. The folder renamed away and
 * replaced, and the rules remembered per tool, are in test/inprocess/policyReload.test.ts.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRecord } from '../fixtures/fixtureProcess.js';
import { FAST_GATEWAY, fixture, tempDir, textOf, writeConfig } from '../integration/harness.js';
import { ALLOW_ALL, NO_ECHO, version } from '../integration/policyTexts.js';
import { servedPerTest } from './perTest.js';

const served = servedPerTest();

function setup(policy: string) {
  const dir = tempDir();
  const policies = path.join(dir, 'policies');
  mkdirSync(policies);
  const policyFile = path.join(policies, 'main.yaml');
  writeFileSync(policyFile, policy);
  const record = path.join(dir, 'record.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      policies: ['policies/main.yaml'],
      audit: { file: './audit.jsonl' },
      servers: { up: fixture(['--record', record]) },
    },
    dir,
  );
  const echoes = () =>
    readRecord(record).filter((m) => m.method === 'tools/call' && m.params?.name === 'echo').length;
  const policyLoads = () =>
    readFileSync(path.join(dir, 'audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; sha256?: string })
      .filter((r) => r.type === 'policy_load')
      .map((r) => r.sha256?.slice(0, 12));
  return { dir, policies, policyFile, config, echoes, policyLoads };
}

describe('the policy folder replaced', () => {
  it('deleted and created again with a stricter policy: the next call is denied', async () => {
    const { policies, policyFile, config, echoes } = setup(ALLOW_ALL);
    const host = await served.connect(config);
    expect(textOf(await host.client.callTool({ name: 'up__echo', arguments: { text: 'before' } }))).toBe(
      'before',
    );

    rmSync(policies, { recursive: true });
    // The files are gone: reported, and the policies in force stay.
    await host.waitForStderr('a policy change was rejected; the previous policies stay in force');
    mkdirSync(policies);
    writeFileSync(policyFile, NO_ECHO);
    await host.waitForStderr(`in force: main.yaml sha256:${version(NO_ECHO)}`);

    const denied = await host.client.callTool({ name: 'up__echo', arguments: { text: 'after' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('Echo is off for now.');
    expect(echoes()).toBe(1);
  });
});

describe('a policy file written in two steps', () => {
  it('the first half, although a valid policy, is never in force', async () => {
    const { policyFile, config, policyLoads } = setup(ALLOW_ALL);
    const host = await served.connect(config);
    // Between the two writes, a call through the gateway: its event loop has turned since the
    // first half was written (a gateway reading on the first event would read that half), and
    // the call must still be decided by the policy in force before. The exact timing against
    // the stability window, with a pause longer than a plain debounce, is proven with a fake
    // clock in test/unit/policyWatcher.test.ts; here the pause is whatever the call takes, and
    // an attempt whose pause outlasted the window (a file left alone that long is read, as it
    // should be) proves nothing and is made again.
    const WINDOW_MS = 400;
    for (let attempt = 1; attempt <= 5; attempt++) {
      const half = `default: deny\n# attempt ${attempt}\n`; // valid on its own, and it would deny echo
      const full = `${half}rules:
  - id: echo-only
    match: { tool: echo }
    action: allow
`;
      const started = performance.now();
      const fd = openSync(policyFile, 'w');
      writeSync(fd, half);
      const during = await host.client.callTool({ name: 'up__echo', arguments: { text: 'during' } });
      const pause = performance.now() - started;
      writeSync(fd, full.slice(half.length));
      closeSync(fd);
      expect(readFileSync(policyFile, 'utf8')).toBe(full);
      await host.waitForStderr(`in force: main.yaml sha256:${version(full)}`);
      if (pause >= WINDOW_MS) continue;

      expect(textOf(during)).toBe('during');
      expect(host.stderr()).not.toContain(version(half));
      // A round trip first: the policy_load record is written at the end of the turn that logged.
      expect(textOf(await host.client.callTool({ name: 'up__echo', arguments: { text: 'whole' } }))).toBe(
        'whole',
      );
      expect(policyLoads()).not.toContain(version(half));
      expect(policyLoads()).toContain(version(full));
      return;
    }
    throw new Error(`each call between the two writes took longer than the ${WINDOW_MS} ms window`);
  });
});
