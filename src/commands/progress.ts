import type { Upstream } from '../core/upstreams/upstream.js';
import type { UpstreamPoolOptions } from '../core/upstreams/upstreamPool.js';
import type { Palette } from '../lib/colour.js';
import { launcherOf } from '../lib/launchers.js';
import { plural } from '../lib/plural.js';

/** What `tools`, `check --live` and `pins` tell a person at a terminal while the servers start. */
export interface StartupProgress {
  /**
   * The servers being started (not the disabled ones, nor those whose entry failed to load),
   * each with the package launcher that starts it, if one does (its first start may install).
   */
  starting(servers: readonly { readonly name: string; readonly launcher?: string }[]): void;
  ready(server: string, tools: number): void;
  /** A failed attempt (it may be retried) or an entry that cannot be used at all. */
  failed(server: string, error: string): void;
  /** Start-up is over (every server settled, or the waiting stopped). */
  done(): void;
}

/** How often the lines of the servers still starting are redrawn with their time so far. */
const TICK_MS = 1000;

/** Moves the cursor up `lines` lines, to the start of the line, and clears everything below. */
function rewind(lines: number): string {
  return lines === 0 ? '' : `\u001b[${lines}A\r\u001b[J`;
}

/**
 * Progress of the servers' start-up for a person at a terminal (`tools`, `check --live`,
 * `pins diff`, `pins accept`): which servers are starting, then each one as it is ready or fails,
 * and below those one line per server still starting with how long it has taken so far
 * (redrawn in place each second), so a cold `npx` install of 20 s is not silence. Undefined
 * when `stream` is not a terminal: pipes and logs get the result only.
 */
export function terminalProgress(stream: NodeJS.WriteStream, palette: Palette): StartupProgress | undefined {
  if (stream.isTTY !== true) return undefined;
  // A server that keeps crashing while it starts fails the same way at each restart: once is enough.
  const lastFailure = new Map<string, string>();
  /** The servers still starting, with what launches them (for the wording) and since when. */
  const pending = new Map<string, { launcher: string | undefined; since: number }>();
  /** How many live lines are on the screen below the permanent ones. */
  let drawn = 0;
  let timer: NodeJS.Timeout | undefined;

  const draw = (): void => {
    const now = Date.now();
    const lines = [...pending].map(([name, { launcher, since }]) => {
      const doing = launcher === undefined ? 'starting' : `installing or starting (${launcher})`;
      return `  ${palette.dim(`${name} ${doing}… ${Math.floor((now - since) / 1000)} s`)}\n`;
    });
    stream.write(rewind(drawn) + lines.join(''));
    drawn = lines.length;
  };
  /** A line that stays, written above the live ones. */
  const say = (line: string): void => {
    stream.write(`${rewind(drawn)}${line}\n`);
    drawn = 0;
    if (timer !== undefined) draw();
  };

  return {
    starting(servers) {
      if (servers.length === 0) return;
      say(
        palette.dim(
          `starting ${plural(servers.length, 'server')}: ${servers.map((s) => s.name).join(', ')}…`,
        ),
      );
      const since = Date.now();
      for (const server of servers) pending.set(server.name, { launcher: server.launcher, since });
      timer = setInterval(draw, TICK_MS);
      timer.unref();
    },
    ready(server, tools) {
      pending.delete(server);
      say(`  ${palette.green(server)} ready (${plural(tools, 'tool')})`);
    },
    failed(server, error) {
      if (lastFailure.get(server) === error) return;
      lastFailure.set(server, error);
      say(`  ${palette.red(server)} failed: ${error}`);
    },
    done() {
      clearInterval(timer);
      timer = undefined;
      pending.clear();
      stream.write(rewind(drawn));
      drawn = 0;
    },
  };
}

/** The pool's hooks that report each server's start to `progress`. */
export function progressHooks(
  progress: StartupProgress,
): Pick<UpstreamPoolOptions, 'onReady' | 'onLifecycle'> {
  return {
    onReady: (upstream) => progress.ready(upstream.name, upstream.tools.length),
    onLifecycle: (event) => {
      if (event.type === 'upstream_failed' || (event.type === 'upstream_exit' && !event.expected))
        progress.failed(event.server, event.error ?? 'exited');
    },
  };
}

/**
 * Tells `progress` which servers cannot start at all, and which are starting now (before or just
 * after the pool's start: a lazy server listed from its cached listing is asleep, not starting).
 */
export function announceStart(upstreams: readonly Upstream[], progress: StartupProgress): void {
  for (const u of upstreams) if (u.state === 'failed') progress.failed(u.name, u.lastError ?? 'failed');
  progress.starting(
    upstreams
      .filter((u) => u.state === 'idle' || u.state === 'connecting')
      .map((u) => {
        const launcher =
          u.config.transport === 'stdio' ? launcherOf(u.config.command, u.config.args) : undefined;
        return { name: u.name, ...(launcher !== undefined && { launcher }) };
      }),
  );
}
