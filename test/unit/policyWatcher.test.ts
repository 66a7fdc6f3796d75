/**
 * A policy file written in two steps, with the clock in the test's hands: the file events are
 * real (the kernel's), the timers of the stability window are vitest's fake ones, so the pause
 * between the two writes is exactly what the test says, however loaded the machine is.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { policyVersion, watchPolicies, type PolicyWatcher } from '../../src/features/policy/policyWatcher.js';

const linux = process.platform === 'linux';

const FULL = `default: deny
rules:
  - id: echo-only
    match: { tool: echo }
    action: allow
`;
/** Valid on its own, and it would deny echo. */
const HALF = 'default: deny\n';

let watcher: PolicyWatcher | undefined;
let dir: string | undefined;
afterEach(() => {
  watcher?.close();
  watcher = undefined;
  vi.useRealTimers();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Lets real I/O run (file events, reads) without moving the fake clock. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup() {
  dir = mkdtempSync(path.join(tmpdir(), 'warden-policy-watch-'));
  const file = path.join(dir, 'main.yaml');
  writeFileSync(file, 'default: allow\n');
  // Only the timers are fake: setImmediate and the file events stay real.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
  // The watcher starts its stability wait with a setTimeout when an event arrives: counting them
  // tells the test that the kernel's event for a write has reached the watcher.
  const armed = vi.spyOn(globalThis, 'setTimeout');
  const loaded: { version: string; echo: string }[] = [];
  const rejected: string[] = [];
  watcher = watchPolicies({
    files: [file],
    onReload: (engine, set) => {
      const decision = engine.decide({
        server: 'up',
        tool: 'echo',
        annotations: undefined,
        trusted: false,
        arguments: {},
      });
      loaded.push({ version: policyVersion(set), echo: decision.effect });
    },
    onReject: (message) => void rejected.push(message),
  });
  const eventSeen = async () => {
    const before = armed.mock.calls.length;
    while (armed.mock.calls.length === before) await turn();
  };
  const reloaded = async (count: number) => {
    // The read after the window is real I/O: let it finish.
    while (loaded.length < count && rejected.length === 0) await turn();
  };
  return { file, loaded, rejected, eventSeen, reloaded };
}

const versionOf = (text: string) =>
  `main.yaml sha256:${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;

/** Writes `HALF`, waits `pause` ms on the fake clock, then the rest; returns what was loaded. */
async function writeInTwoSteps(pause: number) {
  const { file, loaded, rejected, eventSeen, reloaded } = setup();
  const fd = openSync(file, 'w');
  const firstEvent = eventSeen();
  writeSync(fd, HALF);
  await firstEvent;
  await vi.advanceTimersByTimeAsync(pause);
  // Past the window, the first half is read: let that read finish before the rest is written.
  if (pause >= 400) await reloaded(1);
  const secondEvent = eventSeen();
  writeSync(fd, FULL.slice(HALF.length));
  closeSync(fd);
  await secondEvent;
  // Well past any window: whatever is going to be loaded is.
  await vi.advanceTimersByTimeAsync(2_000);
  await reloaded(pause < 400 ? 1 : 2);
  return { loaded, rejected };
}

describe.runIf(linux)('a policy file written in two steps', () => {
  it('a pause longer than a plain debounce but inside the stability window: only the whole is ever in force', async () => {
    // The window is two looks 200 ms apart that see the same file: 300 ms after the first half,
    // a plain 200 ms debounce would have read it.
    const { loaded, rejected } = await writeInTwoSteps(300);
    expect(rejected).toEqual([]);
    expect(loaded.map((l) => l.version)).not.toContain(versionOf(HALF));
    expect(loaded.at(-1)).toEqual({ version: versionOf(FULL), echo: 'allow' });
    // The first half, in force, would have denied echo.
    expect(loaded.every((l) => l.echo === 'allow')).toBe(true);
  });

  it('a pause longer than the window: the first half is read, as a file left alone that long is', async () => {
    const { loaded, rejected } = await writeInTwoSteps(450);
    expect(rejected).toEqual([]);
    expect(loaded.map((l) => l.version)).toEqual([versionOf(HALF), versionOf(FULL)]);
    expect(loaded[0]!.echo).toBe('deny');
  });
});
