/**
 * Every subcommand of `mcp-warden`, one entry each: its name, the lines the general usage shows
 * for it, its own help, the options it reads and its run function. The run functions load their
 * modules when called, so `--version` or `check` load none of the others (measured: start-up
 * time is what a host waits for).
 */
import type { ParseArgsConfig } from 'node:util';
import { SERVER_HELP } from './serverHelp.js';
import type { CommandInput, CommandOutcome } from './support.js';

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

export interface Command {
  readonly name: string;
  /** Its lines in the general usage (`mcp-warden --help`), as printed. */
  readonly summary: string;
  /** What `mcp-warden NAME --help` prints; without one, the general usage. */
  readonly help?: string;
  /** The options it reads, beside `--config`'s, `--help`'s and `--version`'s meaning everywhere. */
  readonly options: OptionSpecs;
  /**
   * Whether it reads its arguments itself, because its options are its own (its `--help` too):
   * `args` is then everything after its name, and `values` is empty.
   */
  readonly rawArgs?: boolean;
  run(input: CommandInput): Promise<CommandOutcome>;
}

const CONFIG = { type: 'string', short: 'c' } as const;

/** `mcp-warden init`: a starter config from the host's MCP servers; it reads its own options. */
async function runInit(args: readonly string[]): Promise<number> {
  const [{ runInit: init, terminalChooser }, { homedir }, { openCommandCredentials }] = await Promise.all([
    import('./init.js'),
    import('node:os'),
    import('./loading.js'),
  ]);
  return init([...args], {
    home: homedir(),
    platform: process.platform,
    env: process.env,
    cwd: process.cwd(),
    execPath: process.execPath,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    choose: terminalChooser(process.stdin, process.stderr),
    credentials: openCommandCredentials,
  });
}

export const COMMANDS: readonly Command[] = [
  {
    name: 'serve',
    summary: `  mcp-warden --config FILE            serve MCP on stdio (what a desktop host runs)
  mcp-warden --config FILE --http HOST:PORT
                                      serve MCP over HTTP at /mcp (team mode)`,
    help: `Usage: mcp-warden [serve] --config FILE [--http HOST:PORT]

Serves MCP on stdio: what a desktop host runs. stdout carries JSON-RPC only; the log goes to
stderr (or gateway.log.file). A server whose entry cannot be used (an unset \${VAR}, an
unreadable envFile, type: sse) is left out and reported failed; the others serve.

  --http HOST:PORT   serve MCP Streamable HTTP at http://HOST:PORT/mcp instead of stdio (as
                     the config's listen.http does; the flag wins). A host other than a
                     loopback address needs an auth: section. Port 0 picks a free port; the
                     log says which (listening on http://...).

Exit codes: 0 the host closed the connection; 1 an internal error; 2 an invalid config, policy
or pins file (nothing is started).`,
    options: { config: CONFIG, http: { type: 'string' } },
    run: async (input) => (await import('./serve.js')).serve(input),
  },
  {
    name: 'check',
    summary: `  mcp-warden check --config FILE      validate the config, its policy files and pins file`,
    help: `Usage: mcp-warden check --config FILE [--live] [--managed FILE]

Validates the config file, its policy files and its pins file without starting any server.
For each server with start: lazy it says whether its cached listing is valid (it is then listed
without starting) or it would start once to be listed. Every problem is printed as FILE:LINE:COLUMN: KEY: message. Policy rules that can never match
are errors: a server glob that names no configured server, a tool or prompt glob written as the
name the host sees (fs__read_file) instead of the server's own (read_file). Warnings (ignored
keys, a stdio command not found on PATH) are printed too but do not fail the check.

  --live     also start the servers (as tools --live does, lazy ones too) and warn about tool,
             prompt and resource globs that match nothing they offer, and about tools no rule
             decides
  --managed FILE
             check against this managed settings file instead of the machine's (to try one
             before rolling it out); the layers in force are printed either way

Exit codes: 0 valid (warnings allowed); 2 invalid, with every problem on stderr.`,
    options: { config: CONFIG, live: { type: 'boolean' }, managed: { type: 'string' } },
    run: async (input) => (await import('./checkCommand.js')).runCheck(input),
  },
  {
    name: 'tools',
    summary: `  mcp-warden tools --config FILE      start the upstreams, print the merged tool catalog, exit`,
    help: `Usage: mcp-warden tools --config FILE [--live] [--json]

Starts the upstream servers as serving would, waits for them (each up to its startupTimeout),
prints the merged tool catalog as the host would see it, and stops them. A server with
start: lazy that has a valid cached listing is not started: its tools are listed from that
listing and it is marked cached, with the listing's age. On a terminal, progress goes to stderr
while the servers start. Each server that is not ready is listed with why; tools the policy
hides and tools blocked by their pin are counted.

  --live     start lazy servers too, and keep their fresh listing as the cached one
  --json     the catalog as JSON

Exit codes: 0 every enabled server is ready (or listed from its cached listing); 1 some server
failed or was still starting;
2 an invalid config, policy or pins file.`,
    options: { config: CONFIG, json: { type: 'boolean' }, live: { type: 'boolean' } },
    run: async (input) => (await import('./toolsCommand.js')).runTools(input),
  },
  {
    name: 'policy',
    summary: `  mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON]
                                      which policy rule decides a call of TOOL, and why
  mcp-warden policy explain --config FILE --session ID
                                      replay a session's flow decisions from the audit trail`,
    help: `Usage: mcp-warden policy explain --config FILE TOOL [ARGUMENTS-JSON] [--json]
                                 [--principal SUBJECT [--claim NAME=VALUE ...]]
       mcp-warden policy explain --config FILE --session ID [--json]

Says which policy rule decides a call of TOOL (its exposed name, e.g. fs__write_file) with the
given arguments, and why. With --session, replays the audit trail of one gateway run (the
session field of its records): which requests brought which flow labels into each host session,
and why each call that would have completed the lethal trifecta was asked about, refused or
only recorded, naming the earlier records behind it.

  --principal SUBJECT   explain the call as made by this token subject (rules may match on the
                        principal); default: the OS user, as on stdio
  --claim NAME=VALUE    a claim of that principal, such as groups=admins (repeatable)

  --session ID          replay the flow decisions of the gateway run with this audit session id

Exit codes: 0 explained; 1 TOOL is not offered by any server, or no record of the session;
2 bad usage or an invalid config.`,
    options: {
      config: CONFIG,
      json: { type: 'boolean' },
      session: { type: 'string' },
      principal: { type: 'string' },
      claim: { type: 'string', multiple: true },
    },
    run: async (input) => (await import('./policyCommand.js')).runPolicy(input),
  },
  {
    name: 'pins',
    summary: `  mcp-warden pins diff|accept|list --config FILE [SERVER[/TOOL] ...]
                                      review tool definitions against their pins`,
    help: `Usage: mcp-warden pins diff|accept|list --config FILE [SERVER[/TOOL] ...]

  diff       start the upstreams and show each tool whose definition differs from its pin
             (- lines as pinned, + lines as listed now)
  accept     pin the current definitions of the named tools (or all of a SERVER's). With no
             SERVER[/TOOL], it shows every change and asks [y/N] on a terminal; elsewhere it
             needs --all. Each acceptance is written to the audit log when the config has one.
  list       what the pins file holds (no upstreams started)

  --all      accept every change without asking (pins accept)

Exit codes: diff: 0 everything matches, 1 something differs or a server was not available;
accept: 0 pinned (or nothing to pin), 1 declined, a server was not available or a tool could
not be pinned; list: 0. All: 2 bad usage or an invalid config or pins file.`,
    options: { config: CONFIG, all: { type: 'boolean' } },
    run: async (input) => (await import('./pinsCommand.js')).runPins(input),
  },
  {
    name: 'auth',
    summary: `  mcp-warden auth login|status|logout [SERVER] --config FILE
                                      sign in to HTTP servers that ask for OAuth, see or end it`,
    help: `Usage: mcp-warden auth login SERVER --config FILE
       mcp-warden auth status --config FILE [--json]
       mcp-warden auth logout SERVER --config FILE

  login      sign in to the HTTP server SERVER through its OAuth authorization server: prints
             the address to open, opens it with $BROWSER when set (the address as its last
             argument) or the system's opener, waits for the browser to come back (5 minutes
             at most), keeps the tokens in the credential store and says who signed in
  status     per HTTP server: signed in or not, as whom, the scopes, when the access token
             expires and whether it can be renewed (never a token)
  logout     revoke SERVER's tokens at the authorization server where it offers that
             (RFC 7009) and forget them

  --json     status as JSON

Tokens live in the OS credential store, else in a file only you can read (see
MCP_WARDEN_CREDENTIALS); never in the config, the log or the audit trail. Sign-ins and
sign-outs are audited when the config has audit:.

Exit codes: 0 done; 1 the sign-in failed or was refused; 2 bad usage, an invalid config or a
SERVER that is not an HTTP server of the config.`,
    options: { config: CONFIG, json: { type: 'boolean' } },
    run: async (input) => (await import('./authCommand.js')).runAuth(input),
  },
  {
    name: 'audit',
    summary: `  mcp-warden audit verify|summary FILE
                                      check an audit log's hash chain, or summarize it
  mcp-warden audit report FILE --html OUT.html
                                      a self-contained page of charts and tables of the log
  mcp-warden audit keygen [--out PREFIX]
                                      make the key pair for signed audit checkpoints`,
    help: `Usage: mcp-warden audit verify FILE [--key PUB [--anchor CHECKPOINT]]
       mcp-warden audit summary FILE|SPOOL
       mcp-warden audit report FILE --html OUT.html
       mcp-warden audit keygen [--out PREFIX]

  verify     check the audit log's hash chain, rotated files (FILE.1, FILE.2, ...) included
  summary    calls per tool and per principal, denials, errors, p50/p95 duration, records
             waiting for a sink; given the spool folder of a trail without a local file
             (audit.file: false, audit.spool), the records waiting there for each sink
  report     write OUT.html, one self-contained page (no network needed to open it): calls
             over time, decisions by effect and rule, top tools and servers, denials and
             errors each with its record, principals, and whether the hash chain is intact
  keygen     write PREFIX.key (private, for audit.checkpoints.key) and PREFIX.pub;
             PREFIX defaults to ./audit-checkpoint

  --key PUB            also check the signed checkpoints with this public key: every record up
                       to the last checkpoint is as written, and none follows it unsigned
  --anchor CHECKPOINT  a checkpoint kept elsewhere (its JSON line, inline or in a file, e.g.
                       from the SIEM): the trail must still contain it

Exit codes: verify: 0 intact, 1 broken or tampered with; summary: 0; report: 0 written (a
broken chain is shown on the page and said on stderr); keygen: 0 written, 1 a key file exists.
All: 2 when there is no audit log at FILE (nor rotated files), an unusable key or anchor, or
bad usage.`,
    options: {
      html: { type: 'string' },
      key: { type: 'string' },
      anchor: { type: 'string' },
      out: { type: 'string' },
    },
    run: async (input) => (await import('./auditCommand.js')).runAudit(input),
  },
  {
    name: 'init',
    summary: `  mcp-warden init [--from HOST-FILE ...] [--policy NAME] [--config FILE] [--force]
                                      write a starter config from your hosts' MCP servers
  mcp-warden init --install claude-desktop|claude-code|cursor|vscode
                                      and put mcp-warden in that host in place of its servers`,
    options: {},
    rawArgs: true,
    run: ({ args }) => runInit(args),
  },
  {
    name: 'server',
    summary: `  mcp-warden server add NAME [--config FILE] -- COMMAND ARGS... | --url URL
  mcp-warden server remove|enable|disable NAME | list [--json]
                                      add, remove, turn on and off, and list the config's servers`,
    help: SERVER_HELP,
    options: {},
    rawArgs: true,
    run: async ({ args }) => (await import('./serverCommand.js')).runServer(args),
  },
  {
    name: 'managed',
    summary: `  mcp-warden managed show [--managed FILE]
                                      the organisation's managed settings in force, and where from`,
    help: `Usage: mcp-warden managed show [--managed FILE]

Prints the organisation's managed settings in force on this machine: the file they come from
(/etc/mcp-warden/managed.yaml on Linux, /Library/Application Support/mcp-warden/ on macOS,
%ProgramData%\\mcp-warden\\ on Windows, or the folder MCP_WARDEN_MANAGED_DIR names), their
policy files, the server allow and deny lists, the audit minimums and the locked settings.

  --managed FILE   show this file instead (validated the same way)

Exit codes: 0 shown (or there are none); 2 the managed file is invalid, or bad usage.`,
    options: { managed: { type: 'string' } },
    run: async (input) => (await import('./managedCommand.js')).runManaged(input),
  },
  {
    name: 'secret',
    summary: `  mcp-warden secret set|delete NAME | secret list
                                      keep a secret the config reads as \${keychain:NAME}`,
    help: `Usage: mcp-warden secret set NAME
       mcp-warden secret delete NAME
       mcp-warden secret list

Keeps secrets out of the config file: one stored as NAME is what \${keychain:NAME} in the
config stands for (in a stdio server's env, an HTTP server's headers, anywhere a value goes).
They live in the OS credential store (macOS Keychain, Windows Credential Manager, the Secret
Service on Linux), or, where none is reachable, in a file readable by you only in your config
folder (a warning names it). MCP_WARDEN_CREDENTIALS=keyring|file chooses instead.

  set NAME      read the value from stdin: typed without being shown on a terminal, or piped
                (a final line break is taken off), and store it; an existing one is replaced
  delete NAME   forget it
  list          the names stored (never the values)

Exit codes: 0 done; 1 delete: there was no such secret; 2 bad usage, no value given, or the
credential store cannot be used.`,
    options: {},
    run: async (input) => (await import('./secretCommand.js')).runSecret(input),
  },
];

/** The general usage: every command's lines, then what applies to all of them. */
export const USAGE = `Usage:
${COMMANDS.map((command) => command.summary).join('\n')}
  mcp-warden COMMAND --help           that command's options and exit codes
  mcp-warden --version | --help

The config file may also be given as MCP_WARDEN_CONFIG.
Exit codes: 0 ok; 1 the command ran and found problems (see each command); 2 bad usage, an
invalid config, policy or pins file, or a file that does not exist.
Colour: on when the output is a terminal; NO_COLOR=1 turns it off, FORCE_COLOR=1 forces it on.`;

export function commandNamed(name: string | undefined): Command | undefined {
  return COMMANDS.find((command) => command.name === name);
}

/** The help of `name` (its own when it has one): what usage errors point to. */
export function usageOf(name: string | undefined): string {
  return commandNamed(name)?.help ?? USAGE;
}
