/**
 * The shipped locked-down-org.yaml in front of the real filesystem server, served in-process
 * (`startServing` on the config file) with the SDK Client as host: no spelling of a path, no
 * list of paths, no symlink and no listing from above gets anything out of the credential
 * folders, and each refusal names its rule. HOME is a temp folder holding the credentials,
 * shared by the gateway (set in this process while it serves) and the server.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  FAST_GATEWAY,
  NODE,
  ROOT,
  serverBin,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const KEY = 'PRIVATE-KEY-MATERIAL';
const AWS = 'AWS-SECRET-ACCESS-KEY';

describe('locked-down-org.yaml with the real filesystem server', () => {
  let host: HostSession;
  let home: string;

  beforeAll(async () => {
    const dir = tempDir();
    home = path.join(dir, 'home');
    mkdirSync(path.join(home, '.ssh'), { recursive: true });
    writeFileSync(path.join(home, '.ssh', 'id_rsa'), `${KEY}\n`);
    mkdirSync(path.join(home, '.aws'));
    writeFileSync(path.join(home, '.aws', 'credentials'), `${AWS}\n`);
    mkdirSync(path.join(home, 'notes'));
    writeFileSync(path.join(home, 'notes', 'todo.md'), 'ordinary notes\n');
    symlinkSync(path.join(home, '.ssh'), path.join(home, 'keys'));
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: [path.join(ROOT, 'policies/locked-down-org.yaml')],
        servers: { fs: { command: NODE, args: [serverBin('filesystem'), home], env: { HOME: home } } },
      },
      dir,
    );
    host = await shared.connect(config, { env: { HOME: home } });
  });
  const shared = servedPerTest({ closeAfter: 'all' });

  const tricks: [
    what: string,
    tool: string,
    args: (home: string) => Record<string, unknown>,
    rule: string,
  ][] = [
    ['the key by ~', 'read_text_file', () => ({ path: '~/.ssh/id_rsa' }), 'no-credential-files'],
    [
      'both files in one list',
      'read_multiple_files',
      (h) => ({ paths: [path.join(h, '.ssh/id_rsa'), path.join(h, '.aws/credentials')] }),
      'no-credential-paths',
    ],
    [
      'the key through a symlink',
      'read_text_file',
      (h) => ({ path: path.join(h, 'keys/id_rsa') }),
      'no-credential-paths',
    ],
    [
      'a relative symlink in a list',
      'read_multiple_files',
      () => ({ paths: ['keys/id_rsa'] }),
      'no-credential-paths',
    ],
    ['the tree of home', 'directory_tree', (h) => ({ path: h }), 'no-credential-trees'],
    ['a search from home', 'search_files', (h) => ({ path: h, pattern: '**/id_rsa' }), 'no-credential-trees'],
    ['a listing of .ssh', 'list_directory', (h) => ({ path: path.join(h, '.ssh') }), 'no-credential-files'],
    [
      'a listing of .ssh by its symlink',
      'list_directory',
      (h) => ({ path: path.join(h, 'keys') }),
      'no-credential-paths',
    ],
    [
      'the info of the key',
      'get_file_info',
      (h) => ({ path: `file://${h}/keys/id_rsa` }),
      'no-credential-paths',
    ],
  ];

  it.each(tricks)('refuses %s (%s), naming the rule', async (_what, tool, args, rule) => {
    const result = await host.client.callTool({ name: `fs__${tool}`, arguments: args(home) });
    const text = textOf(result);
    expect(result.isError).toBe(true);
    expect(text).toContain(`policy rule "${rule}"`);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(AWS);
    expect(text).not.toContain('id_rsa');
  });

  it('still reads an ordinary file, and lists home (names only, not inside .ssh)', async () => {
    const file = await host.client.callTool({
      name: 'fs__read_text_file',
      arguments: { path: path.join(home, 'notes/todo.md') },
    });
    expect([file.isError ?? false, textOf(file)]).toEqual([false, expect.stringContaining('ordinary notes')]);
    const listing = await host.client.callTool({ name: 'fs__list_directory', arguments: { path: home } });
    expect(listing.isError ?? false).toBe(false);
    expect(textOf(listing)).toContain('notes');
    expect(textOf(listing)).not.toContain('id_rsa');
  });
});
