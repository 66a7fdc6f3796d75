import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { parseManagedText } from '../../src/config/managed.js';
import type { StdioServerConfig } from '../../src/config/types.js';
import { describeGrants, sandboxGrants, type PolicyRules } from '../../src/features/sandbox/grants.js';
import { thrownIssues } from './configIssues.js';

const DIR = path.resolve('/srv/warden');
const FILE = path.join(DIR, 'proxy.config.yaml');
const servers = (text: string) => parseConfigText(text, { file: FILE, env: {} }).config.servers;
const stdio = (text: string, name = 'fs') => servers(text).find((s) => s.name === name) as StdioServerConfig;

describe('sandbox: in the config', () => {
  it('reads the grants, expanding ~ and resolving relative folders against the file', () => {
    const server = stdio(
      'servers:\n  fs:\n    command: x\n    sandbox:\n      filesystem: { read: [~/projects], write: [./out] }\n      network: { allow: [API.github.com, "*.linear.app"] }\n',
    );
    expect(server.sandbox).toEqual({
      auto: false,
      filesystem: { read: [path.join(os.homedir(), 'projects')], write: [path.join(DIR, 'out')] },
      network: { allow: ['api.github.com', '*.linear.app'] },
    });
  });

  it('takes true, auto and false, and the gateway default unless a server opts out', () => {
    const text =
      'gateway: { sandbox: auto }\nservers:\n  fs: { command: x }\n  open: { command: x, sandbox: false }\n  shut: { command: x, sandbox: true }\n';
    expect(stdio(text).sandbox).toMatchObject({ auto: true, network: false });
    expect(stdio(text, 'open').sandbox).toBeUndefined();
    expect(stdio(text, 'shut').sandbox).toEqual({
      auto: false,
      filesystem: { read: [], write: [] },
      network: false,
    });
  });

  it('names a domain that cannot be one, and a sandbox on an HTTP server, with file:line', () => {
    expect(
      thrownIssues(() =>
        servers(
          'servers:\n  fs:\n    command: x\n    sandbox:\n      network:\n        allow: [https://api.github.com, "*"]\n  web: { url: "https://x.example/mcp", sandbox: true }\n',
        ),
      ),
    ).toEqual([
      `${FILE}:6:17: servers.fs.sandbox.network.allow[0]: "https://api.github.com" is not a host name: write one such as api.github.com, or *.example.com for the names under example.com (no scheme, path or port)`,
      `${FILE}:6:41: servers.fs.sandbox.network.allow[1]: "*" would allow every host; leave "network" as { allow: [...] } of the hosts the server needs`,
      `${FILE}:7:40: servers.web.sandbox: "sandbox" applies only to stdio servers (with "command"), and this one has "url"`,
    ]);
  });
});

describe('sandbox: auto grants', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'warden-grants-'));
  mkdirSync(path.join(work, 'project'));
  const server = (args: string[], env: Record<string, string> = {}) =>
    ({
      ...stdio('servers:\n  fs: { command: x, sandbox: auto }\n'),
      args,
      env,
      cwd: work,
    }) as StdioServerConfig;

  it('grants the folders in its arguments, the policy folders allowed it, and the hosts of its URLs', () => {
    const policies: PolicyRules = {
      files: [
        {
          rules: [
            { action: 'allow', match: { server: ['f*'], paths: { spec: { under: ['/data/shared'] } } } },
            { action: 'deny', match: { server: null, paths: { spec: { under: ['/etc'] } } } },
            { action: 'allow', match: { server: ['other'], paths: { spec: { under: ['/data/other'] } } } },
          ],
        },
      ],
    };
    const fs = server(['-y', 'pkg', 'project', '--url=https://api.example.com/v1'], {
      API: 'https://Hooks.Example.org:8443/x',
    });
    const grants = sandboxGrants(fs, fs.sandbox!, { policies });
    expect(grants).toEqual({
      read: [],
      write: ['/data/shared', path.join(work, 'project')],
      network: { allow: ['api.example.com', 'hooks.example.org'] },
    });
    expect(describeGrants(grants)).toBe(
      `read nothing; write /data/shared, ${path.join(work, 'project')}; network only api.example.com, hooks.example.org`,
    );
  });

  it('grants nothing derived without auto', () => {
    const fs = { ...server(['project']), sandbox: { ...server([]).sandbox!, auto: false } };
    expect(describeGrants(sandboxGrants(fs, fs.sandbox))).toBe('read nothing; write nothing; network off');
  });
});

describe('managed sandbox settings', () => {
  const MANAGED = '/etc/mcp-warden/managed.yaml';
  const managed = parseManagedText(
    'sandbox:\n  require: [gh*]\n  maxWrite: [/work]\n  maxNetwork: ["*.github.com"]\n',
    MANAGED,
  );
  const load = (text: string) => parseConfigText(text, { file: FILE, env: {}, managed });

  it('sandboxes a required server the user left unsandboxed, saying so, and leaves others alone', () => {
    const loaded = load('servers:\n  ghub: { command: x, sandbox: false }\n  other: { command: x }\n');
    const [ghub, other] = loaded.config.servers as StdioServerConfig[];
    expect(ghub!.sandbox).toMatchObject({ auto: true, network: false });
    expect(other!.sandbox).toBeUndefined();
    expect(loaded.refusals.map((r) => `${r.line}: ${r.path}: ${r.message}`)).toEqual([
      `2: servers.ghub.sandbox: ${MANAGED}:2 sandbox.require requires a sandbox for this server; it runs with sandbox: auto`,
    ]);
  });

  it('cuts the grants to the limits, naming what it left out', () => {
    const server = load(
      'servers:\n  ghub:\n    command: x\n    sandbox:\n      filesystem: { write: [/work/repo, /home/me] }\n      network: { allow: [api.github.com, evil.example] }\n',
    ).config.servers[0] as StdioServerConfig;
    const grants = sandboxGrants(server, server.sandbox!);
    expect(grants).toMatchObject({ read: [], write: ['/work/repo'], network: { allow: ['api.github.com'] } });
    expect(grants.refused).toEqual([
      `network evil.example (beyond ${MANAGED}:2 sandbox.require, ${MANAGED}:3 sandbox.maxWrite, ${MANAGED}:4 sandbox.maxNetwork)`,
      `write /home/me (beyond ${MANAGED}:2 sandbox.require, ${MANAGED}:3 sandbox.maxWrite, ${MANAGED}:4 sandbox.maxNetwork)`,
    ]);
  });

  it('names a mistake in the managed section with its line', () => {
    expect(
      thrownIssues(() => parseManagedText('sandbox:\n  maxNetwork: ["https://x"]\n  mode: on\n', MANAGED)),
    ).toEqual([
      `${MANAGED}:2:16: sandbox.maxNetwork[0]: "https://x" is not a host name: write one such as api.github.com, or *.example.com for the names under example.com (no scheme, path or port)`,
      `${MANAGED}:3:3: sandbox.mode: unknown key "mode"; sandbox has require, maxRead, maxWrite, maxNetwork`,
    ]);
  });
});
