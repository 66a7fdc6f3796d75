import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { reloadedFiles, serialRunner } from '../../src/commands/configReload.js';
import { diffServers, restartNeeded } from '../../src/config/configDiff.js';
import { parseConfigText } from '../../src/config/load.js';
import { setImmediate as turn } from 'node:timers/promises';
import { Deferred } from '../../src/lib/deferred.js';

const FILE = '/srv/warden/proxy.config.yaml';
const parse = (text: string, file = FILE) => parseConfigText(text, { file, env: {} }).config;

describe('diffServers', () => {
  it('sorts servers into added, removed, changed and unchanged, whatever their place in the file', () => {
    const before = parse(
      'servers:\n  a: { command: a }\n  b: { command: b }\n  c: { command: c, args: [x] }\n  d: { url: "https://d.example/mcp" }\n',
    );
    const after = parse(
      [
        '# a comment moves every line',
        'servers:',
        '  e: { command: e }',
        '  a: { command: a }',
        '  c: { command: c, args: [y] }',
        '  d: { url: "https://d.example/mcp", headers: { X: "1" } }',
        '',
      ].join('\n'),
    );
    expect(diffServers(before.servers, after.servers)).toEqual({
      added: ['e'],
      removed: ['b'],
      changed: ['c', 'd'],
      unchanged: ['a'],
    });
  });

  it('sees an env file edit as a change of the server that names it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'warden-reload-'));
    const file = path.join(dir, 'proxy.config.yaml');
    const text = 'servers:\n  a: { command: a, envFile: ./a.env }\n  b: { command: b }\n';
    writeFileSync(path.join(dir, 'a.env'), 'X=1\n');
    const before = parse(text, file);
    writeFileSync(path.join(dir, 'a.env'), 'X=2\n');
    const after = parse(text, file);
    expect(diffServers(before.servers, after.servers)).toMatchObject({ changed: ['a'], unchanged: ['b'] });
    expect(reloadedFiles(after)).toEqual([file, path.join(dir, 'a.env')]);
  });

  it('sees a change of tool filters, timeouts or managed blocking as a change', () => {
    const before = parse('servers:\n  a: { command: a }\n');
    const filtered = parse('servers:\n  a: { command: a, tools: { exclude: [rm] } }\n');
    const timed = parse('servers:\n  a: { command: a, timeout: 10s }\n');
    expect(diffServers(before.servers, filtered.servers).changed).toEqual(['a']);
    expect(diffServers(before.servers, timed.servers).changed).toEqual(['a']);
    const blocked = [{ ...before.servers[0]!, blockedByManaged: 'denied' }];
    expect(diffServers(before.servers, blocked).changed).toEqual(['a']);
  });
});

describe('restartNeeded', () => {
  it('names the settings a running gateway cannot take, and not the ones it can', () => {
    const before = parse('servers: { a: { command: a } }\n');
    const after = parse(
      'gateway: { naming: { separator: "--" }, timeout: 1m, log: { level: debug } }\nconfirmation: { timeout: 10s }\nservers: { a: { command: a } }\n',
    );
    expect(restartNeeded(before, after).map((r) => r.key)).toEqual(['gateway.naming', 'gateway.log']);
    expect(restartNeeded(before, before)).toEqual([]);
  });
  it('flow.trifecta and server labels apply while serving: neither needs a restart', () => {
    const before = parse('servers: { a: { command: a } }\n');
    const denying = parse('flow: { trifecta: deny }\nservers: { a: { command: a, labels: [private] } }\n');
    expect(restartNeeded(before, denying)).toEqual([]);
    expect(restartNeeded(before, parse('flow: {}\nservers: { a: { command: a } }\n'))).toEqual([]);
  });
});

describe('serialRunner', () => {
  it('runs one at a time, and many requests during a run cost one more run', async () => {
    const runs: Deferred<void>[] = [];
    const runner = serialRunner(() => {
      const run = new Deferred<void>();
      runs.push(run);
      return run.promise;
    });
    const first = runner.request();
    await turn();
    expect(runs).toHaveLength(1);
    const later = Array.from({ length: 49 }, () => runner.request());
    expect(new Set(later).size).toBe(1);
    expect(runs).toHaveLength(1);
    runs[0]!.resolve();
    await first;
    await turn();
    expect(runs).toHaveLength(2);
    runs[1]!.resolve();
    await later[0];
    expect(runs).toHaveLength(2);
  });

  it('goes on after a run that failed', async () => {
    let calls = 0;
    const runner = serialRunner(async () => {
      calls++;
      if (calls === 1) throw new Error('boom');
    });
    await expect(runner.request()).rejects.toThrow('boom');
    await runner.request();
    expect(calls).toBe(2);
  });
});
