/**
 * The policy files shipped in policies/: each one loads, and decides a table of representative
 * calls as its comments promise. Annotations are those the reference servers really send
 * (@modelcontextprotocol/server-filesystem marks read tools with readOnlyHint alone).
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { mkdir, mkdtemp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ETC_SPELLINGS } from './pathTricks.js';
import { describe, expect, it } from 'vitest';
import {
  createPolicyEngine,
  type PolicyCallInput,
  type PolicyEngine,
} from '../../src/features/policy/engine.js';
import { loadPolicies, parsePolicyText } from '../../src/features/policy/loadPolicies.js';
import type { Effect } from '../../src/features/policy/types.js';

const POLICIES = path.resolve('policies');

async function engineFor(...names: string[]): Promise<PolicyEngine> {
  return createPolicyEngine(await loadPolicies(names.map((name) => path.join(POLICIES, name))));
}

const FS_READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const FS_WRITE: ToolAnnotations = {
  readOnlyHint: false,
  idempotentHint: true,
  destructiveHint: true,
  openWorldHint: false,
};
const FS_MKDIR: ToolAnnotations = {
  readOnlyHint: false,
  idempotentHint: true,
  destructiveHint: false,
  openWorldHint: false,
};

type Row = [
  server: string,
  tool: string,
  trusted: boolean,
  annotations: ToolAnnotations | undefined,
  args: unknown,
];

/** One table row: the decision, its rule, and whether the tool is hidden from tools/list. */
async function expectRow(file: string, row: Row, expected: [Effect, string | null, boolean]): Promise<void> {
  const engine = await engineFor(file);
  const call = input(row);
  const decision = engine.decide(call);
  expect([decision.effect, decision.ruleId, engine.isHiddenFromList(call)]).toEqual(expected);
}

function input([server, tool, trusted, annotations, args]: Row): PolicyCallInput {
  return { server, tool, trusted, annotations, arguments: args as Record<string, unknown> | undefined };
}

it('every shipped policy file is covered below', async () => {
  const files = (await readdir(POLICIES)).filter((name) => name.endsWith('.yaml')).sort();
  expect(files).toEqual(['default.yaml', 'locked-down-org.yaml', 'read-only-workstation.yaml']);
});

describe('policies/default.yaml', () => {
  const table: [...Row, Effect, string | null][] = [
    // Trusted servers: their annotations decide.
    ['fs', 'read_text_file', true, FS_READ, { path: 'a' }, 'allow', null],
    ['fs', 'write_file', true, FS_WRITE, { path: 'a' }, 'confirm', 'confirm-destructive-tools'],
    ['fs', 'create_directory', true, FS_MKDIR, { path: 'a' }, 'allow', null],
    ['fs', 'rename_quietly', true, FS_MKDIR, undefined, 'allow', null],
    ['memory', 'create_entities', true, undefined, undefined, 'confirm', 'confirm-destructive-tools'],
    // Untrusted servers: names decide, whatever the annotations claim.
    ['fs', 'read_text_file', false, FS_READ, undefined, 'allow', null],
    ['fs', 'list_directory', false, FS_READ, undefined, 'allow', null],
    ['fs', 'write_file', false, FS_WRITE, undefined, 'confirm', 'confirm-destructive-names'],
    ['fs', 'edit_file', false, FS_MKDIR, undefined, 'confirm', 'confirm-destructive-names'],
    ['fs', 'move_file', false, FS_MKDIR, undefined, 'confirm', 'confirm-destructive-names'],
    ['fs', 'create_directory', false, FS_MKDIR, undefined, 'allow', null],
    ['memory', 'delete_entities', false, undefined, undefined, 'confirm', 'confirm-destructive-names'],
    ['memory', 'create_entities', false, undefined, undefined, 'allow', null],
    ['memory', 'read_graph', false, undefined, undefined, 'allow', null],
    ['everything', 'echo', false, undefined, undefined, 'allow', null],
  ];
  it.each(table)('%s %s (trusted: %s)', async (server, tool, trusted, annotations, args, effect, ruleId) => {
    const engine = await engineFor('default.yaml');
    const decision = engine.decide(input([server, tool, trusted, annotations, args]));
    expect([decision.effect, decision.ruleId]).toEqual([effect, ruleId]);
    // decide takes a cached fast path; explain evaluates every rule: they must agree.
    expect(engine.explain(input([server, tool, trusted, annotations, args])).decision).toEqual(decision);
    expect(engine.decide(input([server, tool, trusted, annotations, args]))).toBe(decision);
  });

  it('recognises destructive names in the usual spellings, and not inside other words', async () => {
    const engine = await engineFor('default.yaml');
    const effectOf = (tool: string): Effect =>
      engine.decide(input(['x', tool, false, undefined, undefined])).effect;
    const asked = [
      'delete',
      'deleteFile',
      'DeleteFile',
      'bulk_delete',
      'remove-item',
      'unlink',
      'truncate_table',
      'purgeQueue',
      'overwrite_file',
      'str_replace',
      'rename',
      'terminate_instance',
      'execute_sql',
      'exec',
      'exec_command',
      'container.exec',
      'runShell',
      'shell',
      'kill_process',
      'killProcess',
      'process.kill',
      'drop_table',
      'DropTable',
      'wipe',
      'reset_db',
      'clearCache',
      'clear',
      'rm',
      'rm_rf',
      'git_rm',
      'git-rm-cached',
      'rmdir',
      'move',
      'moveFile',
      'edit',
      'edit_file',
      'applyEdit',
      'write',
      'writeFile',
    ];
    const notAsked = [
      'list_skills',
      'get_movie',
      'search_reddit',
      'dropbox_list',
      'get_preset',
      'nuclear_facts',
      'confirm_order',
      'format_date',
      'shellfish_prices',
      'executive_summary',
      'editor_info',
      'create_entities',
      'update_issue',
      'echo',
    ];
    expect(asked.filter((tool) => effectOf(tool) !== 'confirm')).toEqual([]);
    expect(notAsked.filter((tool) => effectOf(tool) !== 'allow')).toEqual([]);
  });

  it('hides nothing', async () => {
    const engine = await engineFor('default.yaml');
    for (const row of table) expect(engine.isHiddenFromList(input(row.slice(0, 5) as Row))).toBe(false);
  });
});

describe('policies/read-only-workstation.yaml', () => {
  const table: [...Row, Effect, string | null, boolean][] = [
    ['fs', 'read_text_file', true, FS_READ, { path: 'a' }, 'allow', 'allow-trusted-read-only', false],
    ['fs', 'write_file', true, FS_WRITE, { path: 'a' }, 'deny', 'read-only-workstation', true],
    ['fs', 'create_directory', true, FS_MKDIR, { path: 'a' }, 'deny', 'read-only-workstation', true],
    ['memory', 'read_graph', true, undefined, undefined, 'deny', 'read-only-workstation', true],
    ['fs', 'read_text_file', false, FS_READ, { path: 'a' }, 'confirm', 'confirm-untrusted-read-names', false],
    ['fs', 'directory_tree', false, FS_READ, undefined, 'confirm', 'confirm-untrusted-read-names', false],
    ['memory', 'search_nodes', false, undefined, undefined, 'confirm', 'confirm-untrusted-read-names', false],
    ['fs', 'write_file', false, FS_WRITE, undefined, 'deny', 'read-only-workstation', true],
    ['slack', 'thread_reply', false, undefined, undefined, 'deny', 'read-only-workstation', true],
    ['everything', 'echo', false, FS_READ, undefined, 'deny', 'read-only-workstation', true],
  ];
  it.each(table)(
    '%s %s (trusted: %s)',
    async (server, tool, trusted, annotations, args, effect, ruleId, hidden) =>
      expectRow(
        'read-only-workstation.yaml',
        [server, tool, trusted, annotations, args],
        [effect, ruleId, hidden],
      ),
  );

  it('tells the model why a change is refused', async () => {
    const engine = await engineFor('read-only-workstation.yaml');
    expect(engine.decide(input(['fs', 'write_file', true, FS_WRITE, {}])).reason).toMatch(
      /^This workstation is read-only, and this tool may change something/,
    );
  });
});

describe('policies/locked-down-org.yaml', () => {
  const table: [...Row, Effect, string, boolean][] = [
    [
      'fs',
      'read_text_file',
      false,
      FS_READ,
      { path: '/home/me/notes.md' },
      'allow',
      'approved-file-reads',
      false,
    ],
    [
      'fs',
      'read_text_file',
      true,
      FS_READ,
      { path: '/home/me/.ssh/id_ed25519' },
      'deny',
      'no-credential-files',
      false,
    ],
    [
      'fs',
      'read_media_file',
      false,
      FS_READ,
      { path: '.aws/credentials' },
      'deny',
      'no-credential-files',
      false,
    ],
    [
      'fs',
      'list_directory',
      false,
      FS_READ,
      { path: '/home/me/.kube' },
      'deny',
      'no-credential-files',
      false,
    ],
    [
      'fs',
      'read_text_file',
      false,
      FS_READ,
      { path: '/home/me/.sshd_notes' },
      'allow',
      'approved-file-reads',
      false,
    ],
    [
      'fs',
      'write_file',
      false,
      FS_WRITE,
      { path: '/srv/shared/plan.md' },
      'confirm',
      'confirm-shared-writes',
      false,
    ],
    ['fs', 'write_file', true, FS_WRITE, { path: '/etc/hosts' }, 'deny', 'not-approved', false],
    ...[
      '/srv/shared/../../etc/cron.d/evil',
      '/srv/shared/../shared/../../etc/cron.d/evil',
      '/srv/shared/./../../etc/cron.d/evil',
      'file:///srv/shared/%2e%2e/%2e%2e/etc/cron.d/evil',
      '/srv//shared/../../etc/cron.d/evil',
      'srv/shared/plan.md',
    ].map((escape): [...Row, Effect, string, boolean] => [
      'fs',
      'write_file',
      false,
      FS_WRITE,
      { path: escape, content: 'x' },
      'deny',
      'not-approved',
      false,
    ]),
    [
      'fs',
      'edit_file',
      false,
      FS_WRITE,
      { path: '//srv/./shared//plan.md', edits: [] },
      'confirm',
      'confirm-shared-writes',
      false,
    ],
    [
      'fs',
      'write_file',
      false,
      FS_WRITE,
      { path: '/etc/cron.d/evil', content: '/srv/shared/decoy' },
      'deny',
      'not-approved',
      false,
    ],
    ['fs', 'write_file', false, FS_WRITE, undefined, 'deny', 'not-approved', false],
    [
      'fs',
      'move_file',
      false,
      FS_WRITE,
      { source: '/srv/shared/a', destination: '/tmp/a' },
      'deny',
      'not-approved',
      true,
    ],
    ['memory', 'read_graph', false, undefined, undefined, 'allow', 'approved-memory-reads', false],
    ['memory', 'delete_entities', false, undefined, undefined, 'deny', 'not-approved', true],
    ['everything', 'echo', true, FS_READ, { message: 'hi' }, 'deny', 'not-approved', true],
  ];
  it.each(table)(
    '%s %s (trusted: %s) %j',
    async (server, tool, trusted, annotations, args, effect, ruleId, hidden) =>
      expectRow('locked-down-org.yaml', [server, tool, trusted, annotations, args], [effect, ruleId, hidden]),
  );

  it('listed first, keeps later files from widening what the organisation allows', async () => {
    const engine = await engineFor('locked-down-org.yaml', 'default.yaml');
    // default.yaml alone would allow echo and only ask about delete_entities.
    expect(engine.decide(input(['everything', 'echo', false, undefined, undefined])).effect).toBe('deny');
    expect(engine.decide(input(['memory', 'delete_entities', false, undefined, undefined])).ruleId).toBe(
      'not-approved',
    );
    expect(engine.decide(input(['fs', 'read_text_file', false, FS_READ, { path: '/a' }])).effect).toBe(
      'allow',
    );
  });
});

describe('policies/locked-down-org.yaml: credential folders, however a path names them', () => {
  /** A home with credentials, a symlink to them and an ordinary file; HOME points at it. */
  async function withHome(): Promise<{ home: string; engine: PolicyEngine }> {
    const home = await mkdtemp(path.join(os.tmpdir(), 'warden-home-'));
    await mkdir(path.join(home, '.ssh'));
    await writeFile(path.join(home, '.ssh', 'id_rsa'), 'key');
    await mkdir(path.join(home, '.aws'));
    await writeFile(path.join(home, 'notes.md'), 'notes');
    await symlink(path.join(home, '.ssh'), path.join(home, 'keys'));
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      return { home, engine: await engineFor('locked-down-org.yaml') };
    } finally {
      process.env.HOME = saved;
    }
  }

  // The older pattern rule still comes first and catches the plain spellings; the path rules
  // catch what it cannot: lists of paths, symlinks, and folders above the credentials.
  const refused: [tool: string, args: (home: string) => Record<string, unknown>, rule: string][] = [
    ['read_text_file', () => ({ path: '~/.ssh/id_rsa' }), 'no-credential-files'],
    ['read_file', (h) => ({ path: `${h}//.ssh/./id_rsa` }), 'no-credential-files'],
    [
      'read_multiple_files',
      (h) => ({ paths: [`${h}/notes.md`, '~/.aws/credentials'] }),
      'no-credential-paths',
    ],
    ['read_text_file', (h) => ({ path: `${h}/keys/id_rsa` }), 'no-credential-paths'],
    ['read_media_file', (h) => ({ path: `file://${h}/.ssh/id_rsa` }), 'no-credential-files'],
    ['list_directory', () => ({ path: '~/.ssh' }), 'no-credential-files'],
    ['list_directory_with_sizes', () => ({ path: '~/keys' }), 'no-credential-paths'],
    ['get_file_info', () => ({ path: '~/.gnupg' }), 'no-credential-files'],
    ['directory_tree', () => ({ path: '~' }), 'no-credential-trees'],
    ['directory_tree', (h) => ({ path: `${h}/.aws/../` }), 'no-credential-files'],
    ['search_files', (h) => ({ path: h, pattern: '**/id_*' }), 'no-credential-trees'],
    ['search_files', () => ({ path: '/', pattern: 'credentials' }), 'no-credential-trees'],
    ['write_file', () => ({ path: '~/.config/gcloud/creds.json', content: '{}' }), 'no-credential-paths'],
    ['edit_file', () => ({ path: '~/.kube/config', edits: [] }), 'no-credential-files'],
    ['create_directory', () => ({ path: '~/.ssh/new' }), 'no-credential-files'],
    [
      'move_file',
      () => ({ source: '/srv/shared/a', destination: '~/.ssh/authorized_keys' }),
      'no-credential-paths',
    ],
    ['move_file', (h) => ({ source: h, destination: '/srv/shared/home' }), 'no-credential-trees'],
  ];
  it.each(refused)('refuses %s %s', async (tool, args, rule) => {
    const { home, engine } = await withHome();
    const decision = engine.decide(input(['fs', tool, false, FS_READ, args(home)]));
    expect([decision.effect, decision.ruleId]).toEqual(['deny', rule]);
    expect(engine.explain(input(['fs', tool, false, FS_READ, args(home)])).decision).toEqual(decision);
  });

  it('still reads and lists what is not a credential folder, and hides no read tool', async () => {
    const { home, engine } = await withHome();
    for (const [tool, args] of [
      ['read_text_file', { path: `${home}/notes.md` }],
      ['list_directory', { path: home }],
      ['directory_tree', { path: `${home}/notes` }],
    ] as const) {
      const call = input(['fs', tool, false, FS_READ, args]);
      expect([engine.decide(call).effect, engine.isHiddenFromList(call)]).toEqual(['allow', false]);
    }
  });
});

describe('policies/README.md', () => {
  it('shows a format example that loads and decides as its comments say', async () => {
    const readme = await readFile(path.join(POLICIES, 'README.md'), 'utf8');
    const example = /## The format\n\n```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const engine = createPolicyEngine({ files: [parsePolicyText(example ?? '', '/p/example.yaml')] });
    const del = (args: unknown): PolicyCallInput => input(['fs', 'delete_file', false, undefined, args]);
    expect(engine.decide(del({ path: '/etc/passwd' }))).toMatchObject({
      effect: 'deny',
      ruleId: 'no-etc-deletes',
      reason: 'Deleting under /etc is not allowed here.',
    });
    expect(engine.decide(del({ path: '/tmp/x' }))).toMatchObject({ effect: 'confirm', ruleId: null });
    // The spellings a pattern on the raw text would let through.
    for (const trick of ETC_SPELLINGS) {
      expect(engine.decide(del({ path: trick })).ruleId).toBe('no-etc-deletes');
    }
  });
});
