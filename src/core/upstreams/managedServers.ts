/**
 * Which configured servers the managed settings let start: a server the deny list matches, or
 * (when there is an allow list) one it does not match, is blocked. Matching is done on what
 * would actually run, resolved the way the gateway starts servers:
 *
 * - a `command` rule names an executable; both it and the server's command are resolved (PATH
 *   lookup, symlinks followed), so `/tmp/x/npx` is not `npx` however it is named;
 * - an `npm` / `pypi` rule names the package a launcher runs. The launcher must be the real one:
 *   the file the gateway's own PATH finds for that name, not one the server's `env` or a path
 *   puts in its place. An argument list the parser does not understand matches no package;
 * - a `url` rule matches an HTTP server by origin and path prefix (whole segments);
 * - a `sha256` rule matches the hash of the resolved executable file.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { describeRule, type ManagedSettings, type ServerRule } from '../../config/managed.js';
import type { ServerConfig, StdioServerConfig } from '../../config/types.js';
import { resolveCommand } from '../transports/childProcess.js';
import { stdioSpawnOptions } from './childEnvironment.js';

/** The package a launcher command runs, as far as its arguments can be read. */
export interface LaunchedPackage {
  readonly registry: 'npm' | 'pypi';
  readonly name: string;
  readonly version?: string;
}

/**
 * The servers with `blockedByManaged` set where the managed settings block them. Disabled
 * servers and servers that already failed at load are left as they are (they never start).
 */
export async function applyServerRules(
  servers: readonly ServerConfig[],
  managed: ManagedSettings,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): Promise<ServerConfig[]> {
  return Promise.all(
    servers.map(async (server) => {
      if (server.disabled || server.failedAtLoad !== undefined) return server;
      const reason = await blockReason(server, managed, gatewayEnv);
      return reason === undefined ? server : { ...server, blockedByManaged: reason };
    }),
  );
}

/** Why the managed settings block `server`, or undefined when it may start. */
export async function blockReason(
  server: ServerConfig,
  managed: ManagedSettings,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): Promise<string | undefined> {
  const facts = await factsOf(server, gatewayEnv);
  for (const rule of managed.deny)
    if (await matches(rule, facts, gatewayEnv)) return `denied by ${describeRule(rule, managed)}`;
  if (managed.allow === undefined) return undefined;
  for (const rule of managed.allow) if (await matches(rule, facts, gatewayEnv)) return undefined;
  return `not on the allow list of ${managed.file} (servers.allow)`;
}

/** What a server would run, found once and compared with every rule. */
interface ServerFacts {
  readonly server: ServerConfig;
  /** The executable, resolved and with symlinks followed; undefined when it cannot be found. */
  readonly executable?: string;
  readonly args: readonly string[];
  /** The package, when the command is a genuine launcher whose arguments could be read. */
  readonly launched?: LaunchedPackage;
}

async function factsOf(
  server: ServerConfig,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): Promise<ServerFacts> {
  if (server.transport !== 'stdio') return { server, args: [] };
  const options = stdioSpawnOptions(server as StdioServerConfig);
  const executable = await resolved(options.command, options.env, options.cwd);
  const launched = await launchedPackage(server as StdioServerConfig, executable, gatewayEnv);
  return { server, args: server.args, ...(executable && { executable }), ...(launched && { launched }) };
}

async function matches(
  rule: ServerRule,
  facts: ServerFacts,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): Promise<boolean> {
  const { server } = facts;
  if (rule.url !== undefined) return server.transport === 'http' && urlUnder(server.url, rule.url);
  if (server.transport !== 'stdio' || facts.executable === undefined) return false;
  if (rule.command !== undefined) {
    const wanted = await resolved(rule.command, pathEnv(gatewayEnv), '/');
    if (wanted === undefined || wanted !== facts.executable) return false;
    return rule.args === undefined || JSON.stringify(rule.args) === JSON.stringify(facts.args);
  }
  if (rule.sha256 !== undefined) return (await fileSha256(facts.executable)) === rule.sha256;
  const wanted =
    rule.npm !== undefined
      ? parseSpec('npm', rule.npm)
      : rule.pypi !== undefined
        ? parseSpec('pypi', rule.pypi)
        : undefined;
  const got = facts.launched;
  if (
    wanted === undefined ||
    got === undefined ||
    got.registry !== wanted.registry ||
    got.name !== wanted.name
  )
    return false;
  return wanted.version === undefined || wanted.version === got.version;
}

/** `https://h/a` is under `https://h/a` and `https://h/a/b`, not `https://h/ab` nor another origin. */
export function urlUnder(serverUrl: string, ruleUrl: string): boolean {
  let server: URL, rule: URL;
  try {
    server = new URL(serverUrl);
    rule = new URL(ruleUrl);
  } catch {
    return false;
  }
  if (server.origin !== rule.origin) return false;
  const prefix = rule.pathname.endsWith('/') ? rule.pathname : `${rule.pathname}/`;
  return (
    server.pathname === rule.pathname ||
    `${server.pathname}/` === prefix ||
    server.pathname.startsWith(prefix)
  );
}

/** The command resolved as the spawner would, symlinks followed; undefined when not found. */
async function resolved(
  command: string,
  env: Readonly<Record<string, string>>,
  cwd: string,
): Promise<string | undefined> {
  try {
    return await realpath(await resolveCommand(command, env, cwd));
  } catch {
    return undefined;
  }
}

function pathEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const PATH = env.PATH ?? env.Path;
  return PATH === undefined ? {} : { PATH };
}

async function fileSha256(file: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', () => resolve(undefined))
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/**
 * How each launcher takes its package: the words before it (`npm exec`, `uv tool run`), the
 * options that take a value (so the value is not taken for the package), the option naming the
 * package outright, and those that make the command line unreadable (a shell string).
 */
interface Launcher {
  readonly registry: 'npm' | 'pypi';
  readonly subcommand: readonly string[];
  readonly withValue: readonly string[];
  readonly packageOption: readonly string[];
  readonly unreadable: readonly string[];
}

const NPM_VALUE_OPTIONS = [
  '--cache',
  '--registry',
  '--userconfig',
  '--node-options',
  '--loglevel',
  '-w',
  '--workspace',
  '--prefix',
  '--script-shell',
];
const NPM_LAUNCHER: Omit<Launcher, 'subcommand'> = {
  registry: 'npm',
  withValue: NPM_VALUE_OPTIONS,
  packageOption: ['-p', '--package'],
  unreadable: ['-c', '--call'],
};
const UV_LAUNCHER: Omit<Launcher, 'subcommand'> = {
  registry: 'pypi',
  withValue: [
    '--with',
    '--python',
    '-p',
    '--index-url',
    '--extra-index-url',
    '--index',
    '--default-index',
    '--with-requirements',
    '--constraints',
    '--overrides',
    '--directory',
    '--project',
    '--config-file',
    '--cache-dir',
    '--python-preference',
    '--env-file',
  ],
  packageOption: ['--from'],
  unreadable: [],
};
const LAUNCHERS: Readonly<Record<string, Launcher>> = {
  npx: { ...NPM_LAUNCHER, subcommand: [] },
  npm: { ...NPM_LAUNCHER, subcommand: ['exec'] },
  pnpx: { ...NPM_LAUNCHER, subcommand: [] },
  pnpm: { ...NPM_LAUNCHER, subcommand: ['dlx'] },
  yarn: { ...NPM_LAUNCHER, subcommand: ['dlx'] },
  bunx: { ...NPM_LAUNCHER, subcommand: [] },
  bun: { ...NPM_LAUNCHER, subcommand: ['x'] },
  uvx: { ...UV_LAUNCHER, subcommand: [] },
  uv: { ...UV_LAUNCHER, subcommand: ['tool', 'run'] },
  pipx: {
    registry: 'pypi',
    subcommand: ['run'],
    withValue: ['--python', '--pip-args', '--index-url'],
    packageOption: ['--spec'],
    unreadable: [],
  },
};

/**
 * The package a stdio server's launcher runs, when its command is a genuine launcher (the file
 * the gateway's own PATH finds under that name) and its arguments can be read.
 */
async function launchedPackage(
  server: StdioServerConfig,
  executable: string | undefined,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): Promise<LaunchedPackage | undefined> {
  const name = path.basename(server.command).replace(/\.(cmd|exe|bat)$/i, '');
  const launcher = LAUNCHERS[name];
  if (launcher === undefined || executable === undefined) return undefined;
  const genuine = await resolved(name, pathEnv(gatewayEnv), '/');
  if (genuine !== executable) return undefined;
  return readLauncherArgs(launcher, server.args);
}

/** The package named by a launcher's arguments, or undefined when they cannot be read safely. */
export function readLauncherArgs(launcher: Launcher, args: readonly string[]): LaunchedPackage | undefined {
  const rest = [...args];
  for (const word of launcher.subcommand) if (rest.shift() !== word) return undefined;
  let named: string | undefined;
  while (rest.length > 0) {
    const arg = rest.shift()!;
    if (arg === '--') break;
    if (!arg.startsWith('-')) {
      rest.unshift(arg);
      break;
    }
    const [option, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    if (launcher.unreadable.includes(option)) return undefined;
    const takesValue = launcher.withValue.includes(option) || launcher.packageOption.includes(option);
    const value = takesValue ? (inline ?? rest.shift()) : undefined;
    if (takesValue && value === undefined) return undefined;
    // A second package option means several packages: which one runs is not for us to guess.
    if (launcher.packageOption.includes(option)) {
      if (named !== undefined) return undefined;
      named = value;
    }
  }
  const spec = named ?? rest[0];
  return spec === undefined ? undefined : parseSpec(launcher.registry, spec);
}

/** `@scope/name@1.2` → name and version (npm); `Name[extra]==1.2` → normalized name and version (PyPI). */
export function parseSpec(registry: 'npm' | 'pypi', spec: string): LaunchedPackage | undefined {
  if (registry === 'npm') {
    const at = spec.lastIndexOf('@');
    const [name, version] = at > 0 ? [spec.slice(0, at), spec.slice(at + 1)] : [spec, undefined];
    if (name === '' || /^(\.|\/|~|file:|git\+|https?:)/.test(name)) return undefined;
    return { registry, name: name.toLowerCase(), ...(version && { version }) };
  }
  const match = /^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(?:(?:==|@)\s*([^\s;,]+))?$/.exec(spec.trim());
  if (match === null) return undefined;
  const name = match[1]!.toLowerCase().replace(/[-_.]+/g, '-');
  return { registry, name, ...(match[3] && { version: match[3] }) };
}
