/**
 * Package launchers: commands such as `npx` and `uvx` that may download and install a package
 * before the program in it starts. Their first start can take far longer than any server's own
 * start-up, they must not be killed mid-install (that leaves a half-written package in their
 * cache, which then fails on every later start), and when their cache is broken the fix is a
 * command of theirs the user has to be told.
 */
import path from 'node:path';

/** Commands that are launchers whatever their arguments. */
const LAUNCHERS = new Set(['npx', 'pnpx', 'bunx', 'uvx']);

/** Commands that are launchers when their first argument (or two) is one of these. */
const LAUNCHING_SUBCOMMANDS: Readonly<Record<string, readonly string[]>> = {
  pnpm: ['dlx'],
  yarn: ['dlx'],
  npm: ['exec', 'x'],
  bun: ['x'],
  uv: ['tool run'],
  pipx: ['run'],
};

/** The launcher's name (`npx`, `pnpm dlx`, ...) when `command args` starts one, else undefined. */
export function launcherOf(command: string, args: readonly string[]): string | undefined {
  const base = path.basename(command.replace(/\\/g, '/')).replace(/\.(cmd|exe|bat|ps1)$/i, '');
  if (LAUNCHERS.has(base)) return base;
  const words = args.slice(0, 2).join(' ');
  const sub = LAUNCHING_SUBCOMMANDS[base]?.find((s) => words === s || words.startsWith(`${s} `));
  return sub === undefined ? undefined : `${base} ${sub}`;
}

/**
 * What to tell the user when a launcher's output shows its cache is broken (a package half
 * installed by an earlier start that was cut short), or undefined when it does not.
 */
export function brokenCacheHint(output: readonly string[]): string | undefined {
  const text = output.join('\n');
  const npx = /((?:[A-Za-z]:)?[^\s'"`(]*[/\\]_npx[/\\][0-9a-f]+)/.exec(text)?.[1];
  if (npx !== undefined && /ERR_MODULE_NOT_FOUND|Cannot find (module|package)|ENOENT/.test(text))
    return (
      `npx's cache looks broken (a package there is incomplete, as when an install was cut short): ` +
      `remove that package's folder with rm -rf ${npx} (or clear the whole cache with npm cache clean --force), then start again`
    );
  if (
    /[/\\]uv[/\\](archive-v\d+|builds-v\d+|wheels-v\d+)[/\\]/.test(text) &&
    /ModuleNotFoundError|No such file or directory|not found|failed to/i.test(text)
  )
    return `uv's cache looks broken (a package there is incomplete): clear it with uv cache clean, then start again`;
  return undefined;
}
