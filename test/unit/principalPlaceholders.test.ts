import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText, type Env } from '../../src/config/load.js';
import type { ServerConfig, StdioServerConfig } from '../../src/config/types.js';
import { principalId, principalKey, type Principal } from '../../src/core/principal.js';
import type { Logger } from '../../src/core/logger.js';
import { forPrincipal } from '../../src/core/upstreams/principalServers.js';
import { UpstreamPool } from '../../src/core/upstreams/upstreamPool.js';
import { thrownIssues } from './configIssues.js';

const DIR = path.resolve('/srv/warden');
const FILE = path.join(DIR, 'team.yaml');
const HOMES = '/var/state/principals';

const token = (subject: string, extra: Partial<Principal> = {}): Principal => ({
  source: 'token',
  subject,
  issuer: 'https://idp.example',
  ...extra,
});

function load(lines: readonly string[], options: { env?: Env; listening?: boolean } = {}) {
  return parseConfigText(lines.join('\n'), {
    file: FILE,
    env: options.env ?? {},
    ...(options.listening !== undefined && { listening: options.listening }),
  }).config;
}

const serverOf = (lines: readonly string[], name = 'notes'): StdioServerConfig =>
  load(lines, { env: { HOME: '/home/me' } }).servers.find((s) => s.name === name) as StdioServerConfig;

const TEAM = [
  'listen:',
  '  http: 127.0.0.1:8080',
  'auth:',
  '  issuer: https://idp.example',
  '  audience: warden',
  '  claims: [email, groups]',
];

describe('principalId', () => {
  it('is the readable subject and 16 hex digits of the hash of issuer and subject', () => {
    expect(principalId(token('alice'))).toMatch(/^alice-[0-9a-f]{16}$/);
    expect(principalId(token('Alice@Example.COM'))).toMatch(/^alice_example.com-[0-9a-f]{16}$/);
  });

  it('is stable, and differs for the same subject at another issuer or in another case', () => {
    expect(principalId(token('alice'))).toBe(principalId(token('alice')));
    const ids = new Set([
      principalId(token('alice')),
      principalId(token('Alice')),
      principalId(token('alice', { issuer: 'https://other.example' })),
      principalId({ source: 'os', subject: 'alice', hostname: 'laptop' }),
    ]);
    expect(ids.size).toBe(4);
    expect(principalKey(token('alice'))).not.toBe(principalKey(token('Alice')));
  });

  it('is one safe path segment whatever the subject: no separator, no dot or dash first, bounded', () => {
    for (const subject of [
      '../../etc/passwd',
      '-rf',
      '..',
      '.hidden',
      '$(rm -rf ~)',
      'a b;c|d',
      '',
      '日本語',
      'x'.repeat(500),
    ]) {
      const id = principalId(token(subject));
      expect(id).toMatch(/^[a-z0-9][a-z0-9._-]{0,31}-[0-9a-f]{16}$/);
      expect(id).not.toContain('/');
      expect(id).not.toContain('..');
    }
    expect(principalId(token('../../etc/passwd'))).toMatch(/^etc_passwd-/);
    expect(principalId(token('日本語'))).toMatch(/^principal-/);
  });
});

describe('${principal.…} in a config', () => {
  it('survives loading as written, with the parts to fill in when a principal starts its process', () => {
    const notes = serverOf([
      ...TEAM,
      'servers:',
      '  notes:',
      '    command: notes-server',
      '    args: ["--user=${principal.id}", "--root", "${HOME}/x", "$${principal.id}"]',
      '    env:',
      '      NOTES_FILE: ${principal.home}/notes-${principal.claims.email}.json',
      '      PLAIN: ${HOME}',
    ]);
    // Shown as written; a literal "$${" is no placeholder, nor is a variable's value.
    expect(notes.args).toEqual(['--user=${principal.id}', '--root', '/home/me/x', '${principal.id}']);
    expect(notes.perPrincipal).toEqual({
      args: { 0: ['--user=', { principal: 'id' }] },
      env: { NOTES_FILE: [{ principal: 'home' }, '/notes-', { principal: 'claims.email' }, '.json'] },
      cwd: [{ principal: 'home' }],
    });
    expect(notes.cwd).toBe('${principal.home}');
  });

  it("fills them in for one principal: id, home, a safe claim; the default cwd is the principal's folder", () => {
    const notes = serverOf([
      ...TEAM,
      'servers:',
      '  notes:',
      '    command: ./bin/notes',
      '    args: ["${principal.id}", "$${principal.id}"]',
      '    env:',
      '      F: ${principal.home}/${principal.claims.email}',
    ]);
    // A relative program still means the one beside the config, though the process works elsewhere.
    expect(notes.command).toBe(path.join(DIR, 'bin/notes'));
    const alice = token('alice', { claims: { email: 'alice@example.com' } });
    const resolved = forPrincipal(notes, alice, HOMES) as StdioServerConfig;
    const home = path.join(HOMES, principalId(alice));
    expect(resolved.args).toEqual([principalId(alice), '${principal.id}']);
    expect(resolved.env).toEqual({ F: `${home}/alice@example.com` });
    expect(resolved.cwd).toBe(home);
    expect(resolved.principalHome).toBe(home);
    expect(resolved.perPrincipal).toBeUndefined();
    expect(resolved.cannotStart).toBeUndefined();
    // Filling in is done once: a filled-in entry comes back as it is.
    expect(forPrincipal(resolved, alice, HOMES)).toBe(resolved);
  });

  it('resolves a relative cwd naming the principal against the config folder, and makes no folder it does not use', () => {
    const notes = serverOf([
      ...TEAM,
      'servers:',
      '  notes:',
      '    command: notes',
      '    cwd: data/${principal.id}',
    ]);
    const resolved = forPrincipal(notes, token('bob'), HOMES) as StdioServerConfig;
    expect(resolved.cwd).toBe(path.join(DIR, 'data', principalId(token('bob'))));
    expect(resolved.principalHome).toBeUndefined();
  });

  it('refuses a claim that is missing, a list, or unsafe in a path or argument, naming server and claim', () => {
    const notes = serverOf([
      ...TEAM,
      'servers:',
      '  notes:',
      '    command: notes',
      '    args: ["--who=${principal.claims.email}"]',
    ]);
    const attempt = (claims: Record<string, unknown> | undefined) =>
      (forPrincipal(notes, token('alice', claims === undefined ? {} : { claims }), HOMES) as ServerConfig)
        .cannotStart;
    expect(attempt(undefined)).toBe(
      'its process for alice@https://idp.example cannot start: ${principal.claims.email} has no value: the principal\'s token carries no "email" claim',
    );
    expect(attempt({ email: ['a', 'b'] })).toMatch(/\$\{principal\.claims\.email\} is a list in the token/);
    for (const unsafe of ['../../etc', 'a/b', '-rf', '.ssh', 'a b', '$(id)', 'a;b', '`id`', 'x'.repeat(129)])
      expect(attempt({ email: unsafe })).toMatch(
        /\$\{principal\.claims\.email\} would be ".*"…?, and a claim may stand in a path or an argument only when/,
      );
    expect(attempt({ email: 'alice+work@example.com' })).toBeUndefined();
  });

  it('is an error, naming file, line and key, where no principal is known', () => {
    const issues = (lines: readonly string[], listening?: boolean) =>
      thrownIssues(() => load(lines, listening === undefined ? {} : { listening }));
    const entry = ['    command: notes', '    env:', '      F: ${principal.home}/f'];
    expect(issues([...TEAM, 'servers:', '  notes:', '    shared: true', ...entry])).toEqual([
      `${FILE}:12:10: servers.notes.env.F: server "notes" has "shared: true", so one process serves every principal and \${principal.id}, \${principal.home} or \${principal.claims.NAME} have no value; leave out "shared: true" to run one process per principal`,
    ]);
    // Served over stdio (no listen: and no --http): one process for the one host.
    expect(issues(['servers:', '  notes:', ...entry], false)).toEqual([
      `${FILE}:5:10: servers.notes.env.F: server "notes" runs once for everyone: without an HTTP listener ("listen:" in the config, or --http) the gateway serves one host and starts no process per principal`,
    ]);
    // With --http on the command line, the same file is fine.
    expect(() => load(['servers:', '  notes:', ...entry], { listening: true })).not.toThrow();
    expect(
      issues([
        ...TEAM,
        'servers:',
        '  remote:',
        '    url: https://x.example/mcp',
        '    headers:',
        '      X-User: ${principal.id}',
      ]),
    ).toEqual([
      `${FILE}:11:15: servers.remote.headers.X-User: server "remote" is an HTTP server: the principal's values exist only for a stdio server's process started for one principal (its args, env and cwd)`,
    ]);
    expect(
      issues([
        ...TEAM,
        'gateway:',
        '  log:',
        '    file: /var/log/${principal.id}.log',
        'servers:',
        '  notes:',
        '    command: notes',
      ]),
    ).toEqual([
      `${FILE}:9:11: gateway.log.file: \${principal.id}, \${principal.home} or \${principal.claims.NAME} have a value only in a stdio server's args, env and cwd, when its process starts for one principal`,
    ]);
    expect(
      issues([
        ...TEAM,
        'servers:',
        '  notes:',
        '    command: notes',
        '    args: ["${principal.claims.sub}", "${principal.name}"]',
      ]),
    ).toEqual([
      `${FILE}:10:12: servers.notes.args[0]: \${principal.claims.sub}: "sub" is not listed in auth.claims, and only the claims listed there are kept of a token; add it to auth.claims`,
      `${FILE}:10:39: servers.notes.args[1]: unknown placeholder "\${principal.name}": the principal's values are \${principal.id}, \${principal.home} or \${principal.claims.NAME} (no default may follow them)`,
    ]);
  });
});

describe("a pool of one principal's processes", () => {
  const quiet = { error() {}, warn() {}, info() {}, debug() {}, child: () => quiet } as unknown as Logger;
  const config = load([
    ...TEAM,
    'servers:',
    '  notes:',
    '    command: notes',
    '    disabled: true',
    '    args: ["${principal.home}/notes.json"]',
    '  mail:',
    '    command: mail',
    '    args: ["--as", "${principal.claims.email}"]',
  ]);
  const poolFor = (principal: Principal) =>
    new UpstreamPool({
      config,
      logger: quiet,
      clientInfo: { name: 'test', version: '1' },
      onListsChanged: () => {},
      principal,
      homes: HOMES,
    });

  it('fills in its entries for its principal, and keeps them through a reload that leaves them as they were', async () => {
    const alice = token('alice', { claims: { email: 'alice@example.com' } });
    const pool = poolFor(alice);
    const [notes, mail] = pool.upstreams;
    expect((notes!.config as StdioServerConfig).args).toEqual([
      path.join(HOMES, principalId(alice), 'notes.json'),
    ]);
    expect((mail!.config as StdioServerConfig).args).toEqual(['--as', 'alice@example.com']);
    await pool.apply(config.servers, { changed: 'changed', removed: 'removed' });
    expect(pool.upstreams[0]).toBe(notes);
    expect(pool.upstreams[1]).toBe(mail);
    await pool.stop();
  });

  it('never starts a process whose claim is missing, and says why', async () => {
    const pool = poolFor(token('bob'));
    const mail = pool.upstreams[1]!;
    expect(mail.state).toBe('failed');
    expect(mail.lastError).toMatch(
      /its process for bob@https:\/\/idp.example cannot start: \$\{principal.claims.email\} has no value/,
    );
    await pool.stop();
  });
});
