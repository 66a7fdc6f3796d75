/**
 * `mcp-warden init`: writes a starter config from the servers a user already has in a host
 * (hostConfigs.ts), copies in a shipped policy, checks the result as `mcp-warden check` would,
 * and prints what to put in the host so that it runs mcp-warden instead. Never overwrites a
 * file unless told to with `--force`.
 *
 * Longer than most modules because it is one user-facing flow (find, choose, convert, write,
 * check, print) whose steps share the conversion's state; the host-file readers live apart in
 * hostConfigs.ts.
 */
import { canSandboxHere, proposeSandboxes } from './initSandbox.js';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Document, isMap, isScalar } from 'yaml';
import { DEFAULTS } from '../config/defaults.js';
import { ConfigError, formatConfigIssue } from '../config/issues.js';
import { secretAccount } from '../config/keychain.js';
import type { CredentialStore } from '../lib/credentials/index.js';
import { workspaceFolder } from '../config/hostVariables.js';
import { interpolate } from '../config/interpolate.js';
import { loadConfig } from '../config/load.js';
import { createRedactor, RedactorConfigError } from '../features/audit/redact.js';
import { loadPolicies } from '../features/policy/loadPolicies.js';
import { readPinFile } from '../features/pins/pinFile.js';
import {
  candidateFiles,
  convertServers,
  type ConvertedServer,
  HOST_NAMES,
  HostConfigError,
  hostOfFile,
  readHostServers,
  type HostKind,
  type HostServers,
  type Machine,
} from './hostConfigs.js';
import {
  installInto,
  installReport,
  installTarget,
  mergeServers,
  WARDEN_ENTRY,
  type MergedServer,
} from './hostInstall.js';

/** The installed package's folder: dist/.. when built, src/.. under the tests. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const POLICIES = path.join(PACKAGE_ROOT, 'policies');
const CLI = path.join(PACKAGE_ROOT, 'dist', 'cli.js');

export const INIT_USAGE = `Usage: mcp-warden init [--config FILE] [--from HOST-FILE ...] [--policy NAME] [--host HOST]
                       [--install HOST] [--force]

Writes a starter mcp-warden config holding the servers of your host's MCP config, with audit and
tool pinning on, and prints what to put in the host to run mcp-warden instead.

  --config FILE     the config to write (default ./proxy.config.yaml)
  --from FILE       the host config to take servers from (default: the one found; asked on a
                    terminal when several are found). Repeat it to merge several: a name
                    taken by an earlier file keeps that file's server; a later server of that
                    name is left out when it is the same, else added as NAME_HOST (said)
  --policy NAME     shipped policy copied next to the config: default, read-only-workstation,
                    locked-down-org, or none (default: default)
  --host HOST       whose entry to print: claude-desktop, claude-code, cursor, vscode, generic
                    (default: the host whose file was read)
  --install HOST    put mcp-warden into that host's own config file (claude-desktop,
                    claude-code, cursor or vscode) and take out the servers it now runs,
                    after a timestamped backup of the file; prints what it changed and how to
                    undo it. With a config that exists (and no --force), only registers it.
                    A second run changes nothing.
  --force           overwrite files that exist

Exit codes: 0 written and valid, 1 written but not valid yet (fix what is listed, then run
mcp-warden check), 2 bad usage, nothing found to choose from without a terminal, or a file
that exists without --force.`;

/** What `runInit` is given instead of reaching for the process: tests pass their own. */
export interface InitIo extends Machine {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Asks the user to pick one of `choices` (1-based answer); undefined when there is no terminal. */
  readonly choose?: (question: string, choices: readonly string[]) => Promise<number | undefined>;
  /** The Node.js that runs us, written into the host entry. */
  readonly execPath: string;
  /**
   * Opens the credential store, where secret header values of remote servers are moved.
   * Without it (or when it cannot be used) the config reads them from environment variables.
   */
  readonly credentials?: () => Promise<CredentialStore>;
}

/** A usage problem or a refusal: printed, exit 2. */
class InitUsageError extends Error {}

const HOSTS = Object.keys(HOST_NAMES) as HostKind[];

/** The shipped policies, by name (file name without `.yaml`). */
export function shippedPolicies(): string[] {
  return readdirSync(POLICIES)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

/** Runs `mcp-warden init ARGS`; resolves to the exit code. */
export async function runInit(argv: readonly string[], io: InitIo): Promise<number> {
  try {
    return await init(argv, io);
  } catch (error) {
    if (error instanceof InitUsageError || error instanceof HostConfigError) {
      io.stderr(`mcp-warden init: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

async function init(argv: readonly string[], io: InitIo): Promise<number> {
  const values = initOptions(argv);
  if (values.help) {
    io.stdout(`${INIT_USAGE}\n`);
    return 0;
  }
  const { policy, install } = checkedChoices(values);
  const configFile = path.resolve(io.cwd, values.config ?? 'proxy.config.yaml');
  const policyFile =
    policy === 'none' ? undefined : path.join(path.dirname(configFile), `${policy}.policy.yaml`);
  const existing = [configFile, policyFile].filter((f): f is string => f !== undefined && existsSync(f));
  // Registering a config written before: nothing is read or written but the host's file.
  if (install !== undefined && existsSync(configFile) && !values.force)
    return registerOnly(install, configFile, io);
  if (existing.length > 0 && !values.force)
    throw new InitUsageError(
      `${existing.join(' and ')} already exist${existing.length === 1 ? 's' : ''}; nothing was written (add --force to overwrite)`,
    );

  const sources = await chooseSources(values.from ?? [], io);
  // Where several files were merged, messages name them all.
  const source =
    sources.length <= 1 ? sources[0] : { ...sources[0]!, file: sources.map((s) => s.file).join(' and ') };
  const host = (values.host as HostKind | undefined) ?? source?.host ?? 'generic';
  const gathered = await gatherServers(sources, io);
  const { merged, notes, remote } = gathered;
  const { servers, proposed, deferred } = proposeSandboxes(gathered.servers, canSandboxHere());

  mkdirSync(path.dirname(configFile), { recursive: true });
  if (policyFile !== undefined) writeFileSync(policyFile, policyText(policy));
  writeConfig(configFile, renderConfig({ servers, source, policyFile, remote, sandboxed: proposed }));

  io.stdout(`Wrote ${configFile}\n`);
  if (policyFile !== undefined)
    io.stdout(`Wrote ${policyFile} (a copy of the shipped ${policy} policy; edit it freely)\n`);
  if (source === undefined)
    io.stdout(
      'No host config was found, so the config holds one example server (memory); add yours under servers:.\n',
    );
  reportServers(merged, notes, io);
  if (deferred.length > 0)
    io.stdout(
      `${deferred.join(', ')} could run sandboxed (sandbox: auto) on a machine with bubblewrap and socat; see docs/guides/sandboxed-servers.md\n`,
    );
  if (source !== undefined && Object.keys(servers).length === 0)
    io.stdout('None of them could be used, so the config holds one example server (memory) instead.\n');

  const problems = await check(configFile, io);
  if (problems.length > 0) {
    io.stdout(
      `\n${configFile} is not valid yet; fix these, then run mcp-warden check --config ${configFile}:\n`,
    );
    for (const problem of problems) io.stdout(`  ${problem}\n`);
    return 1;
  }
  io.stdout(`\nChecked: ${configFile} is valid.\n\n`);
  const variables = variablesRead(servers, configFile);
  if (install === undefined) {
    io.stdout(hostInstructions(host, launcher(configFile, io), source, variables));
    return 0;
  }
  const file = installTarget(install, sources, io);
  const moved = new Map(
    merged
      .filter(
        (m) =>
          m.source.file === file &&
          ('entry' in m.converted || m.converted.skipped.startsWith('the same server')),
      )
      .map((m) => [m.original, m.source.servers[m.original]]),
  );
  registerIn(install, file, { configFile, moved, io });
  if (variables.length > 0)
    io.stdout(
      `The config reads ${variables.join(', ')}: add ${variables.length === 1 ? 'it' : 'them'} under "env" in the ${WARDEN_ENTRY} entry of ${file} (init never copies a secret there).\n`,
    );
  return 0;
}

/** The command line of `init`, read as `parseArgs` does; a bad option is a usage error. */
function initOptions(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      options: {
        config: { type: 'string', short: 'c' },
        from: { type: 'string', multiple: true },
        install: { type: 'string' },
        policy: { type: 'string' },
        host: { type: 'string' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    throw new InitUsageError(`${(error as Error).message}\n\n${INIT_USAGE}`);
  }
}

/** The policy, host and install target named on the command line, each one we ship or know. */
function checkedChoices(values: ReturnType<typeof initOptions>): {
  policy: string;
  install: HostKind | undefined;
} {
  const policies = shippedPolicies();
  const policy = values.policy ?? 'default';
  if (policy !== 'none' && !policies.includes(policy))
    throw new InitUsageError(
      `no shipped policy "${policy}"; choose one of ${[...policies, 'none'].join(', ')}`,
    );
  if (values.host !== undefined && !HOSTS.includes(values.host as HostKind))
    throw new InitUsageError(`unknown host "${values.host}"; choose one of ${HOSTS.join(', ')}`);
  const installable: readonly HostKind[] = HOSTS.filter((h) => h !== 'generic');
  const install = values.install as HostKind | undefined;
  if (install !== undefined && !installable.includes(install))
    throw new InitUsageError(`--install ${install}: choose one of ${installable.join(', ')}`);
  return { policy, install };
}

/**
 * The servers of every chosen host file, merged (see `mergeServers`), with what to say under
 * each, which of them are remote (they sign in through the gateway), and their secret headers
 * moved out of the config into the credential store.
 */
async function gatherServers(sources: readonly HostServers[], io: InitIo) {
  const { servers, merged } = mergeServers(sources, (from) =>
    convertServers(from.servers, { workspaceFolder: workspaceFolder(from.file) }),
  );
  const notes = new Map<string, string[]>();
  const remote: string[] = [];
  const kept: ConvertedServer[] = [];
  for (const { converted: server, clash } of merged) {
    if (!('entry' in server)) continue;
    notes.set(server.name, [...(clash === undefined ? [] : [clash]), ...server.notes]);
    if (server.remote === true) remote.push(server.name);
    kept.push(server);
  }
  await moveSecrets(kept, { servers, notes, io });
  return { servers, merged, notes, remote };
}

/** Says, per host file, which servers were taken (with their notes) and which were left out. */
function reportServers(
  merged: readonly MergedServer[],
  notes: ReadonlyMap<string, readonly string[]>,
  io: InitIo,
): void {
  let shownFrom: HostServers | undefined;
  for (const { source: from, converted: server } of merged) {
    if (from !== shownFrom) io.stdout(`Servers taken from ${from.file} (${HOST_NAMES[from.host]}):\n`);
    shownFrom = from;
    if ('skipped' in server) io.stdout(`  - ${server.name}: left out: ${server.skipped}\n`);
    else {
      io.stdout(`  + ${server.name}\n`);
      for (const note of notes.get(server.name) ?? []) io.stdout(`      ${note}\n`);
    }
  }
}

/** `init --install HOST` with a config already written: only the host's file is changed. */
function registerOnly(install: HostKind, configFile: string, io: InitIo): number {
  io.stdout(
    `Using the config that is there: ${configFile} (add --force to write it again from the host's servers)\n`,
  );
  registerIn(install, installTarget(install, [], io), { configFile, moved: new Map(), io });
  return 0;
}

/** Puts mcp-warden on `configFile` into the host file `file` in place of `moved`, and says what changed. */
function registerIn(
  install: HostKind,
  file: string,
  options: { configFile: string; moved: ReadonlyMap<string, unknown>; io: InitIo },
): void {
  const { configFile, moved, io } = options;
  const run = launcher(configFile, io);
  const installed = installInto({ file, host: install, run, moved, cwd: io.cwd, now: new Date() });
  io.stdout(installReport(install, installed));
}

/** The host files to read: those given, else the one found, or the one the user picks. */
async function chooseSources(given: readonly string[], io: InitIo): Promise<HostServers[]> {
  if (given.length > 0)
    return given.map((from) => {
      const file = path.resolve(io.cwd, from);
      const found = readHostServers(file, hostOfFile(file), io.cwd);
      if (found === undefined) throw new InitUsageError(`--from ${from}: no such file`);
      if (Object.keys(found.servers).length === 0)
        throw new InitUsageError(
          `--from ${from}: holds no MCP servers (no mcpServers, servers or mcp.servers)`,
        );
      return found;
    });
  const found: HostServers[] = [];
  for (const candidate of candidateFiles(io)) {
    let servers;
    try {
      servers = readHostServers(candidate.file, candidate.host, io.cwd);
    } catch (error) {
      // One unreadable file should not hide the others: say so and go on.
      if (!(error instanceof HostConfigError)) throw error;
      io.stderr(`mcp-warden init: skipped ${error.message}\n`);
      continue;
    }
    if (servers !== undefined && Object.keys(servers.servers).length > 0) found.push(servers);
  }
  if (found.length <= 1) return found.slice(0, 1);
  const labels = found.map((f) => `${HOST_NAMES[f.host]}: ${f.file} (${Object.keys(f.servers).join(', ')})`);
  const picked = await io.choose?.(
    'Several host configs hold MCP servers. Which one should mcp-warden front?',
    labels,
  );
  if (picked === undefined)
    throw new InitUsageError(
      `several host configs hold MCP servers; choose one with --from FILE:\n${labels.map((l) => `  ${l}`).join('\n')}`,
    );
  const chosen = found[picked - 1];
  if (chosen === undefined) throw new InitUsageError(`no choice ${picked}; nothing was written`);
  return [chosen];
}

/**
 * Stores each secret header value of a remote server in the credential store, under the name
 * its `${keychain:NAME}` says (another name when NAME already holds a different value), and
 * notes where it went. When there is no store to use, the entry reads the value from an
 * environment variable of that name instead: the secret is never written into the config.
 */
async function moveSecrets(
  converted: readonly ConvertedServer[],
  target: { servers: Record<string, Record<string, unknown>>; notes: Map<string, string[]>; io: InitIo },
): Promise<void> {
  const { servers, notes, io } = target;
  const moving = converted.flatMap((server) =>
    'entry' in server ? (server.secrets ?? []).map((secret) => ({ server: server.name, secret })) : [],
  );
  if (moving.length === 0) return;
  let store: CredentialStore | undefined;
  let unusable = 'no credential store was given';
  try {
    store = await io.credentials?.();
  } catch (error) {
    unusable = (error as Error).message;
  }
  for (const { server, secret } of moving) {
    const entry = servers[server]!;
    const said = notes.get(server)!;
    let name = secret.name;
    try {
      if (store === undefined) throw new Error(unusable);
      for (let n = 2; ; n++) {
        const held = await store.get(secretAccount(name));
        if (held === undefined || held === secret.value) break;
        name = `${secret.name}_${n}`;
      }
      await store.set(secretAccount(name), secret.value);
      rewriteHeader(entry, secret.header, `\${keychain:${secret.name}}`, `\${keychain:${name}}`);
      said.push(
        `header ${secret.header}: its value is kept in ${store.where} as ${name}, and the config reads it as \${keychain:${name}}`,
      );
    } catch (error) {
      rewriteHeader(entry, secret.header, `\${keychain:${secret.name}}`, `\${env:${name}}`);
      said.push(
        `header ${secret.header}: its value is not copied into the config, which reads it from the environment variable ${name} ` +
          `(it could not go to the credential store: ${(error as Error).message}); or store it with mcp-warden secret set ${name} and write \${keychain:${name}}`,
      );
    }
  }
}

function rewriteHeader(entry: Record<string, unknown>, header: string, from: string, to: string): void {
  const headers = entry.headers as Record<string, string>;
  headers[header] = headers[header]!.replace(from, to);
}

/** The shipped policy's text, its schema modeline pointed at the installed schema. */
function policyText(name: string): string {
  const text = readFileSync(path.join(POLICIES, `${name}.yaml`), 'utf8');
  return text.replace(
    /^# yaml-language-server: \$schema=.*$/m,
    `# yaml-language-server: $schema=${schemaPath('policy.schema.json')}`,
  );
}

function schemaPath(file: string): string {
  return path.join(PACKAGE_ROOT, 'schema', file);
}

/** Written readable by the user only: a host's server entries often carry tokens in `env`. */
function writeConfig(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** The starter config's text: commented, with audit and pins on. */
export function renderConfig(options: {
  servers: Record<string, Record<string, unknown>>;
  source: HostServers | undefined;
  policyFile: string | undefined;
  /** Remote servers: each gets a comment on how it signs in through the gateway. */
  remote?: readonly string[];
  /** Servers given `sandbox: auto`: each gets a comment saying what that grants. */
  sandboxed?: readonly string[];
}): string {
  const servers =
    Object.keys(options.servers).length > 0
      ? options.servers
      : { memory: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] } };
  const from = options.source ? ` from ${options.source.file}` : '';
  const document = {
    ...(options.policyFile !== undefined && { policies: [`./${path.basename(options.policyFile)}`] }),
    audit: { file: './audit.jsonl' },
    pins: { file: './tool-pins.json' },
    servers,
  };
  return [
    `# yaml-language-server: $schema=${schemaPath('proxy.config.schema.json')}`,
    '#',
    `# Written by mcp-warden init${from}.`,
    "# Relative paths are taken from this file's folder, which is also where each server runs.",
    '# Check it with: mcp-warden check --config <this file>',
    "# Every setting, with its default, is in the README's Configuration section.",
    '',
    ...(options.policyFile === undefined
      ? []
      : ['# policies: the rules deciding which calls run, are refused, or are asked about first.']),
    '# audit: one JSON line per call and event; mcp-warden audit summary|verify <file> read it.',
    '# pins: every tool is held to the definition it had when first seen; a changed tool is blocked',
    '#   until you review it (mcp-warden pins diff) and accept it (mcp-warden pins accept).',
    withServerComments(document, options.remote ?? [], options.sandboxed ?? []).trimEnd(),
    '',
  ].join('\n');
}

/**
 * The document as YAML, each remote server preceded by how it signs in (a server that asks for
 * OAuth is signed in to through the gateway, from the host or from a terminal), and each server
 * proposed a sandbox by what it grants.
 */
function withServerComments(
  document: object,
  remote: readonly string[],
  sandboxed: readonly string[],
): string {
  const yaml = new Document(document);
  const servers = yaml.get('servers', true);
  if (isMap(servers))
    for (const pair of servers.items) {
      const key = pair.key;
      if (isScalar(key) && typeof key.value === 'string' && sandboxed.includes(key.value))
        key.commentBefore =
          ' A server mcp-warden knows: it runs sandboxed, reading and writing only the folders its\n' +
          ' arguments name, with no network (see mcp-warden check). sandbox: false turns that off.';
      if (!isScalar(key) || typeof key.value !== 'string' || !remote.includes(key.value)) continue;
      const tool = `${key.value}${DEFAULTS.gateway.naming.separator}authorize`;
      key.commentBefore =
        ` A remote server. If it asks for a sign-in (OAuth), mcp-warden signs in for it: call the\n` +
        ` ${tool} tool from the host, or run: mcp-warden auth login ${key.value} --config <this file>`;
    }
  return yaml.toString({ lineWidth: 0 });
}

/** The command and arguments a host runs to start mcp-warden on `configFile`. */
export function launcher(
  configFile: string,
  io: Pick<InitIo, 'execPath'>,
): { command: string; args: string[] } {
  // Run through npx (`npx mcp-warden init`): the package sits in npx's cache, which may be
  // cleared, so the host asks npx again. Installed: name Node.js and our script by their paths,
  // since a host started from the desktop often has a shorter PATH than a terminal.
  if (/[/\\]_npx[/\\]/.test(CLI))
    return { command: 'npx', args: ['-y', 'mcp-warden', '--config', configFile] };
  return { command: io.execPath, args: [CLI, '--config', configFile] };
}

function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The environment variables the config reads without a default (`${NAME}`, `${env:NAME}`),
 * sorted: mcp-warden cannot start unless the host passes them, and a host started from the
 * desktop does not pass the terminal's variables.
 */
export function variablesRead(servers: Record<string, unknown>, configFile: string): string[] {
  const names = new Set<string>();
  interpolate(servers, {
    env: {},
    configFile,
    onVariable: (name, { hasDefault }) => {
      if (!hasDefault) names.add(name);
    },
  });
  return [...names].sort();
}

/** What a host entry holds for a variable the user must fill in; never a value init saw. */
function placeholder(name: string): string {
  return `<value of ${name}>`;
}

/** What to put in the host, and what to take out of it. */
export function hostInstructions(
  host: HostKind,
  run: { command: string; args: string[] },
  source: HostServers | undefined,
  variables: readonly string[] = [],
): string {
  const removeOld =
    source === undefined
      ? ''
      : `Remove the servers listed above from ${source.file}:\nmcp-warden starts them now, and the host would otherwise start them a second time.\n`;
  const fillIn =
    variables.length === 0
      ? ''
      : `The config reads ${variables.length === 1 ? 'the environment variable' : 'the environment variables'} ${variables.join(', ')}, and the host starts mcp-warden with only the environment it is given: replace each ${placeholder('…')} above with its value (init never copies a secret into the entry).\n`;
  if (host === 'claude-code') {
    const env = variables.flatMap((name) => ['-e', `${name}=${placeholder(name)}`]);
    const words = [
      'claude',
      'mcp',
      'add',
      '--scope',
      'user',
      'warden',
      ...env,
      '--',
      run.command,
      ...run.args,
    ];
    return `Add mcp-warden to Claude Code:\n\n  ${words.map(shellQuote).join(' ')}\n\n${fillIn}${removeOld}`;
  }
  const entry = {
    command: run.command,
    args: run.args,
    ...(variables.length > 0 && {
      env: Object.fromEntries(variables.map((name) => [name, placeholder(name)])),
    }),
  };
  const json =
    host === 'vscode'
      ? { servers: { warden: { type: 'stdio', ...entry } } }
      : { mcpServers: { warden: entry } };
  const where: Record<Exclude<HostKind, 'claude-code'>, string> = {
    'claude-desktop': 'claude_desktop_config.json (Settings > Developer > Edit Config)',
    cursor: "~/.cursor/mcp.json (or the project's .cursor/mcp.json)",
    vscode: '.vscode/mcp.json (or the MCP: Open User Configuration command)',
    generic: "your host's list of MCP servers",
  };
  const indented = JSON.stringify(json, null, 2).replace(/^/gm, '  ');
  const restart = host === 'claude-desktop' ? 'Then quit and restart Claude Desktop.\n' : '';
  return `Put this entry in ${where[host]}, merged with what is there:\n\n${indented}\n\n${fillIn}${removeOld}${restart}`;
}

/** Every problem `mcp-warden check` would report for the config just written, formatted. */
async function check(configFile: string, io: InitIo): Promise<string[]> {
  let loaded;
  try {
    loaded = await loadConfig(configFile, {
      env: io.env,
      ...(io.credentials && { credentials: io.credentials }),
    });
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map(formatConfigIssue);
    throw error;
  }
  const { config } = loaded;
  const problems: string[] = [];
  try {
    await loadPolicies(config.policies);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.issues.map(formatConfigIssue));
  }
  try {
    if (config.audit !== undefined)
      createRedactor({ secretKeys: config.audit.redact.keys, secretPatterns: config.audit.redact.patterns });
  } catch (error) {
    if (!(error instanceof RedactorConfigError)) throw error;
    problems.push(`${config.file}: audit.redact: ${error.message}`);
  }
  try {
    if (config.pins !== undefined) readPinFile(config.pins.file);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.issues.map(formatConfigIssue));
  }
  return problems;
}

/** Asks on the terminal which of `choices` to use; undefined when stdin or stderr is not one. */
export function terminalChooser(input: NodeJS.ReadStream, output: NodeJS.WriteStream): InitIo['choose'] {
  return async (question, choices) => {
    if (!input.isTTY || !output.isTTY) return undefined;
    output.write(`${question}\n${choices.map((c, i) => `  ${i + 1}) ${c}`).join('\n')}\n`);
    const rl = createInterface({ input, output });
    try {
      const answer = await new Promise<string>((resolve) =>
        rl.question(`Number [1-${choices.length}]: `, resolve),
      );
      const n = Number.parseInt(answer.trim(), 10);
      return Number.isInteger(n) ? n : 0;
    } finally {
      rl.close();
    }
  };
}
