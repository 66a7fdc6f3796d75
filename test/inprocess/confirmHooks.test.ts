/**
 * The shipped confirmation hooks (examples/), run by the gateway served in-process exactly as a
 * user's config would run them, with a stub zenity or osascript first on PATH that records what
 * it was asked and answers as told.
 */
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  FAST_GATEWAY,
  fixture,
  ROOT,
  runProcess,
  tempDir,
  textOf,
  writeConfig,
} from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

const HOOKS = ['confirm-zenity.sh', 'confirm-osascript.sh'] as const;
const DIALOG: Record<(typeof HOOKS)[number], string> = {
  'confirm-zenity.sh': 'zenity',
  'confirm-osascript.sh': 'osascript',
};

/** A folder holding a stub dialog program that writes its arguments, one per line, and exits as told. */
function stubDialog(program: string): { bin: string; asked: string } {
  const bin = tempDir('warden-stub-');
  const asked = path.join(bin, 'asked.txt');
  const stub = path.join(bin, program);
  writeFileSync(
    stub,
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > "${asked}"\nexit "\${STUB_EXIT:-1}"\n`,
  );
  chmodSync(stub, 0o755);
  return { bin, asked };
}

const served = servedPerTest();

describe.each(HOOKS)('examples/%s', (hook) => {
  const script = path.join(ROOT, 'examples', hook);

  it('is executable', () => {
    expect(statSync(script).mode & 0o111).toBe(0o111);
  });

  it.each([
    ['0', false],
    ['1', true],
  ])('run by the gateway: the dialog shows the call, and its exit %s decides', async (exit, denied) => {
    const { bin, asked } = stubDialog(DIALOG[hook]);
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'rules:\n  - id: ask-echo\n    match: { tool: echo }\n    action: confirm\n    reason: Echo needs a human.\n',
    );
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: ['policy.yaml'],
        confirmation: { methods: ['command'], command: { command: script, env: { STUB_EXIT: exit } } },
        servers: { up: fixture() },
      },
      dir,
    );
    const host = await served.connect(config, { env: { PATH: `${bin}:${process.env.PATH ?? ''}` } });
    const result = await host.client.callTool({ name: 'up__echo', arguments: { text: '<b>hi</b> & bye' } });
    expect(Boolean(result.isError)).toBe(denied);
    if (!denied) expect(textOf(result)).toContain('<b>hi</b> & bye');
    const question = readFileSync(asked, 'utf8');
    expect(question).toContain('Allow the tool "echo" of the server "up" to run?');
    expect(question).toContain('Why you are asked: Echo needs a human.');
    // zenity reads markup, so the arguments are escaped for it; osascript shows them as they are.
    expect(question).toContain(
      hook === 'confirm-zenity.sh'
        ? '"text": "&lt;b&gt;hi&lt;/b&gt; &amp; bye"'
        : '"text": "<b>hi</b> & bye"',
    );
  });

  it('says no to input that is not a call, without asking', async () => {
    const { bin, asked } = stubDialog(DIALOG[hook]);
    for (const input of ['not json', '{"arguments": {}}']) {
      const run = await runProcess('sh', ['-c', `printf '%s' '${input}' | "${script}"`], {
        env: { PATH: `${bin}:${process.env.PATH ?? ''}`, STUB_EXIT: '0' },
      });
      expect(run.code).not.toBe(0);
      expect(existsSync(asked)).toBe(false);
    }
  });
});
