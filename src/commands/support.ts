/**
 * What every command's run function shares: its typed errors (the command line turns them into
 * a message and an exit code, in one place), colour, and the small ways of talking to a person.
 */
import { formatConfigIssue, type ConfigIssue } from '../config/issues.js';
import type { ClosableLogger } from '../core/logger.js';
import { paletteFor, type Palette } from '../lib/colour.js';
import { ownPackage } from '../lib/ownPackage.js';

/** Exit codes: 0 ok, 1 a check or command found problems, 2 bad usage, an invalid or missing file. */
export const EXIT_USAGE = 2;

/** A command stops with this message (`mcp-warden: message` on stderr) and exit code. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly code: number = EXIT_USAGE,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}

/**
 * The command was used wrongly: the message is followed by the command's own help (or, with
 * `general`, the usage of every command), and the exit code is 2.
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly help: 'command' | 'general' = 'command',
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** What a command's run function is handed: its options and its remaining arguments. */
export interface CommandInput {
  readonly values: CommandValues;
  /** The positional arguments after the command's name. */
  readonly args: readonly string[];
}

/** Every option of every command, as parsed (a command reads its own). */
export interface CommandValues {
  readonly config?: string;
  readonly json?: boolean;
  readonly all?: boolean;
  readonly live?: boolean;
  readonly managed?: string;
  readonly html?: string;
  readonly key?: string;
  readonly anchor?: string;
  readonly out?: string;
  readonly http?: string;
  readonly principal?: string;
  readonly claim?: string[];
  readonly session?: string;
}

/**
 * A command's outcome: an exit code to exit with now, or undefined to let the process end by
 * itself once its output is written (and, for `serve`, once `Shutdown` ends it).
 */
export type CommandOutcome = number | undefined;

export function version(): string {
  return ownPackage().version;
}

/** Colour for what goes to stdout and to stderr, each judged on its own stream. */
export const colour = {
  out: paletteFor(process.stdout, process.env),
  err: paletteFor(process.stderr, process.env),
};

/** Writes to stdout and waits until it is handed to the OS: a report can be long, and we exit next. */
export function print(text: string): Promise<void> {
  return new Promise((resolve) => process.stdout.write(text, () => resolve()));
}

/** One line per config warning, as the subcommands print them (stdout for `check`, else stderr). */
export function warningLines(warnings: readonly ConfigIssue[], palette: Palette = colour.err): string {
  return warnings.map((warning) => `${palette.yellow('warning:')} ${formatConfigIssue(warning)}\n`).join('');
}

export async function closeLogger(logger: ClosableLogger): Promise<void> {
  await Promise.race([logger.close(), new Promise((r) => setTimeout(r, 500).unref())]);
}

/** Asks a yes/no question on the terminal (stderr); only y or yes is yes. */
export async function confirm(question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${colour.err.bold(question)} [y/N] `);
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}

/** Throws the usage error for positional arguments beyond those the command takes. */
export function noMore(args: readonly string[]): void {
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"`);
}
