#!/usr/bin/env node
/**
 * The `mcp-warden` binary: parses the arguments, finds the command in the table
 * (src/commands/table.ts), runs it, and turns how it ended into a message and an exit code. The
 * only module that calls `process.exit`. Human-facing output of subcommands goes to stdout; in
 * serve mode stdout carries JSON-RPC only and everything else goes to stderr.
 */
import { parseArgs } from 'node:util';
import {
  CommandError,
  colour,
  EXIT_USAGE,
  UsageError,
  version,
  type CommandValues,
} from './commands/support.js';
import { COMMANDS, commandNamed, USAGE, usageOf, type Command } from './commands/table.js';
import { MissingPackageError } from './lib/optionalPackage.js';

// Every other module is imported where it is needed (measured): `--version` loads none of them,
// `check` only the config's, and serving spawns the upstreams before it loads the gateway's.

/** Options a command that does not read them refuses, saying which command does; others ignore the rest. */
const REFUSED_ELSEWHERE: Readonly<Record<string, string>> = {
  all: '--all applies to pins accept only',
  managed: '--managed applies to check and managed show only',
};

/** Every command's options, and those that mean the same everywhere. */
const OPTIONS = Object.assign(
  {
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean', short: 'v' },
  } as const,
  ...COMMANDS.map((command) => command.options),
) as NonNullable<Parameters<typeof parseArgs>[0]>['options'];

/** Prints `mcp-warden: message` (its first line in red on a terminal) and exits. */
function fail(message: string, code = EXIT_USAGE): never {
  const [first = '', ...rest] = message.split('\n');
  process.stderr.write(`${[colour.err.red(`mcp-warden: ${first}`), ...rest].join('\n')}\n`);
  process.exit(code);
}

/** Writes to stdout and waits until it is handed to the OS: we exit next. */
function flushed(): Promise<void> {
  return new Promise((resolve) => process.stdout.write('', () => resolve()));
}

/** Exits with `message`, then the help of the command `name` (the general usage for none). */
function usageFail(message: string, name: string | undefined): never {
  fail(`${message}\n\n${usageOf(name)}`);
}

/** The command `argv` names and what to run it with; help and version are answered here. */
function parse(argv: string[]): { command: Command; values: CommandValues; args: string[] } | undefined {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    usageFail(
      (error as Error).message,
      argv.find((arg) => !arg.startsWith('-')),
    );
  }
  const values = parsed.values as CommandValues & Readonly<Record<string, unknown>>;
  const { positionals } = parsed;
  if (values.help === true || positionals[0] === 'help') {
    // `mcp-warden check --help` (or `mcp-warden help check`): that command's own help.
    process.stdout.write(`${usageOf(values.help === true ? positionals[0] : positionals[1])}\n`);
    return undefined;
  }
  if (values.version === true) {
    process.stdout.write(`${version()}\n`);
    return undefined;
  }
  const [name = 'serve', ...args] = positionals;
  const command = commandNamed(name);
  for (const [option, message] of Object.entries(REFUSED_ELSEWHERE))
    if (values[option] !== undefined && !(command !== undefined && option in command.options))
      usageFail(message, name);
  if (command === undefined) fail(`unknown command "${name}"\n\n${USAGE}`);
  return { command, values, args };
}

async function main(argv: string[]): Promise<number | undefined> {
  const raw = commandNamed(argv[0]);
  // A command that reads its own options is handed everything after its name.
  const parsed = raw?.rawArgs === true ? { command: raw, values: {}, args: argv.slice(1) } : parse(argv);
  if (parsed === undefined) return undefined;
  try {
    return await parsed.command.run({ values: parsed.values, args: parsed.args });
  } catch (error) {
    if (error instanceof UsageError)
      usageFail(error.message, error.help === 'general' ? undefined : parsed.command.name);
    if (error instanceof CommandError) fail(error.message, error.code);
    throw error;
  }
}

/** How every command ends: its exit code, or a message and the code its error carries. */
main(process.argv.slice(2)).then(
  async (code) => {
    if (code === undefined) return;
    await flushed();
    process.exit(code);
  },
  (error: unknown) => {
    // A feature the config turns on needs a package that is not installed: nothing is started.
    if (error instanceof MissingPackageError) fail(error.message);
    process.stderr.write(
      `mcp-warden: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
