/**
 * The CLI as a person at a terminal sees it, driven in a real pseudo-terminal through tmux:
 * progress while the servers start, colour (and none with NO_COLOR), and the [y/N] question of
 * `pins accept`, answered with keys. tmux is a Debian package that .ci/run installs; these tests
 * are skipped, saying so, only where it is not installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, FIXTURE, NODE, pinsAndAuditConfig, tempDir, writeConfig } from './harness.js';

const hasTmux = spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0;
/** Matches any escape sequence that sets a colour or attribute. */
const SGR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`);
/** The escape code that turns green on, and spaces and a `+` after it: an added line of a diff. */
const GREEN_ADDED = new RegExp(`${String.fromCharCode(27)}\\[32m\\s+\\+ `);

/** One tmux server of our own (its own socket), so that tests never touch a user's sessions. */
class Terminal {
  private readonly socket = `warden-test-${process.pid}-${Math.random().toString(36).slice(2)}`;
  private started = false;
  /** Where the server's socket is: tmux leaves the file behind when the server is killed. */
  private socketPath: string | undefined;

  /** Runs `args` (the CLI's) in a fresh 200x50 terminal, with `env` added and nothing inherited about colour. */
  start(args: readonly string[], env: Readonly<Record<string, string>> = {}): void {
    const assignments = Object.entries(env).map(([name, value]) => `${name}=${shellQuote(value)}`);
    // After the command, its exit code is printed and the shell waits, so the screen stays.
    const command = [
      'env -u NO_COLOR -u FORCE_COLOR',
      ...assignments,
      shellQuote(NODE),
      shellQuote(CLI),
      ...args.map(shellQuote),
      '; echo "[exit $?]"; exec sleep 600',
    ].join(' ');
    this.tmux(['-f', '/dev/null', 'new-session', '-d', '-x', '200', '-y', '50', '-s', 'cli', command]);
    this.started = true;
    this.socketPath = this.tmux(['display-message', '-p', '#{socket_path}']).trim();
  }

  /** The screen as it is now, with the escape codes of its colours. */
  screen(): string {
    return this.tmux(['capture-pane', '-p', '-e', '-J', '-S', '-', '-t', 'cli']);
  }

  /**
   * Resolves with the screen once `pattern` is on it (the text, colour codes left out); fails,
   * showing the screen, after `timeoutMs`.
   */
  async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.screen();
      if (pattern.test(screen.replace(new RegExp(SGR.source, 'g'), ''))) return screen;
      if (Date.now() > deadline)
        throw new Error(`the terminal never showed ${String(pattern)}; it shows:\n${screen}`);
      // Polling the screen is the only way to observe it: tmux has no "screen changed" event.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  keys(...keys: string[]): void {
    this.tmux(['send-keys', '-t', 'cli', ...keys]);
  }

  stop(): void {
    if (this.started) spawnSync('tmux', ['-L', this.socket, 'kill-server'], { stdio: 'ignore' });
    if (this.socketPath !== undefined) rmSync(this.socketPath, { force: true });
    this.started = false;
    this.socketPath = undefined;
  }

  private tmux(args: readonly string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
  }
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

let terminal: Terminal | undefined;
afterEach(() => {
  terminal?.stop();
  terminal = undefined;
});

describe.skipIf(!hasTmux)('at a terminal (tmux)', () => {
  it('tools shows progress while the servers start, in colour', async () => {
    terminal = new Terminal();
    terminal.start(['tools', '--config', pinsAndAuditConfig().config]);
    const screen = await terminal.waitFor(/\[exit \d+\]/);
    expect(screen).toContain('starting 1 server: fx…');
    expect(screen).toMatch(/fx\S* ready \(\d+ tools\)/);
    expect(screen).toContain('[exit 0]');
    expect(screen).toMatch(SGR);
  });

  it('tools with NO_COLOR: the same progress, no colour', async () => {
    terminal = new Terminal();
    terminal.start(['tools', '--config', pinsAndAuditConfig().config], { NO_COLOR: '1' });
    const screen = await terminal.waitFor(/\[exit \d+\]/);
    expect(screen).toMatch(/^ {2}fx ready \(\d+ tools\)$/m);
    expect(screen).not.toMatch(SGR);
  });

  it('tools counts the seconds of a server still installing through npx, on a line of its own, then clears it', async () => {
    const dir = tempDir();
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    // A fake npx whose install takes 4 s, then the fixture server.
    writeFileSync(path.join(bin, 'npx'), `#!/bin/sh\nsleep 4\nexec "${NODE}" "${FIXTURE}" --name slow\n`);
    chmodSync(path.join(bin, 'npx'), 0o755);
    const config = writeConfig('servers:\n  slow:\n    command: npx\n    args: [-y, slow-mcp]\n', dir);
    terminal = new Terminal();
    terminal.start(['tools', '--config', config], {
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
      NO_COLOR: '1',
    });
    await terminal.waitFor(/^ {2}slow installing or starting \(npx\)… [1-9]\d* s$/m);
    const screen = await terminal.waitFor(/\[exit \d+\]/);
    expect(screen).toMatch(/^ {2}slow ready \(\d+ tools\)$/m);
    // The counting line is gone once the server is ready: redrawn in place, not left behind.
    expect(screen).not.toContain('installing or starting');
    expect(screen).toContain('[exit 0]');
  });

  it('pins accept with no arguments shows the changes, asks [y/N], and y accepts them', async () => {
    const { config, pinsFile, auditFile } = pinsAndAuditConfig();
    terminal = new Terminal();
    terminal.start(['pins', 'accept', '--config', config]);
    const asked = await terminal.waitFor(/accept \d+ changes shown above\? \[y\/N\]/);
    // The new tools' definitions are shown as added lines, in green.
    expect(asked).toMatch(GREEN_ADDED);
    expect(existsSync(pinsFile)).toBe(false);
    terminal.keys('y', 'Enter');
    const screen = await terminal.waitFor(/\[exit \d+\]/);
    expect(screen).toMatch(/\d+ tools pinned in /);
    expect(screen).toContain('[exit 0]');
    expect(Object.keys(JSON.parse(readFileSync(pinsFile, 'utf8')).pins.fx).length).toBeGreaterThan(0);
    expect(readFileSync(auditFile, 'utf8')).toContain('"how":"accepted"');
  });

  it('pins accept: anything but y accepts nothing, exit 1', async () => {
    const { config, pinsFile } = pinsAndAuditConfig();
    terminal = new Terminal();
    terminal.start(['pins', 'accept', '--config', config]);
    await terminal.waitFor(/\[y\/N\]/);
    terminal.keys('Enter');
    const screen = await terminal.waitFor(/\[exit \d+\]/);
    expect(screen).toContain('nothing accepted');
    expect(screen).toContain('[exit 1]');
    expect(existsSync(pinsFile)).toBe(false);
  });
});

describe.skipIf(!hasTmux)('secret set at a terminal (tmux)', () => {
  it('asks for the value without showing what is typed, and stores it', async () => {
    const file = path.join(tempDir(), 'credentials.json');
    terminal = new Terminal();
    terminal.start(['secret', 'set', 'API_KEY'], {
      MCP_WARDEN_CREDENTIALS: 'file',
      MCP_WARDEN_CREDENTIALS_FILE: file,
    });
    await terminal.waitFor(/Value for secret "API_KEY" \(not shown\): /);
    terminal.keys('-l', 'hunter2-typed');
    terminal.keys('Enter');
    const screen = await terminal.waitFor(/\[exit \d+\]/);
    expect(screen).toContain('stored secret "API_KEY"');
    expect(screen).toContain('[exit 0]');
    expect(screen).not.toContain('hunter2');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      version: 1,
      secrets: { 'secret:API_KEY': 'hunter2-typed' },
    });
  });
});

describe.skipIf(hasTmux)('at a terminal', () => {
  // Reported as skipped, with the reason, rather than as a test that passed.
  it('needs tmux', (context) => context.skip('tmux is not installed (.ci/run installs it with apt-get)'));
});
