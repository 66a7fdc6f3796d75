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
    if (await matches('deny', rule, facts, gatewayEnv)) return `denied by ${describeRule(rule, managed)}`;
  if (managed.allow === undefined) return undefined;
  for (const rule of managed.allow) if (await matches('allow', rule, facts, gatewayEnv)) return undefined;
  const why = facts.launch !== undefined && 'unproven' in facts.launch ? `: ${facts.launch.unproven}` : '';
  return `not on the allow list of ${managed.file} (servers.allow)${why}`;
}

/** What a server would run, found once and compared with every rule. */
interface ServerFacts {
  readonly server: ServerConfig;
  /** The executable, resolved and with symlinks followed; undefined when it cannot be found. */
  readonly executable?: string;
  readonly args: readonly string[];
  /** When the command is a launcher: the package it surely runs, or why that is not known. */
  readonly launch?: LaunchReading;
}

async function factsOf(
  server: ServerConfig,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): Promise<ServerFacts> {
  if (server.transport !== 'stdio') return { server, args: [] };
  const options = stdioSpawnOptions(server as StdioServerConfig);
  const executable = await resolved(options.command, options.env, options.cwd);
  const launch = await launchedPackage(server as StdioServerConfig, executable, gatewayEnv);
  return { server, args: server.args, ...(executable && { executable }), ...(launch && { launch }) };
}

async function matches(
  list: 'allow' | 'deny',
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
  if (wanted === undefined) return false;
  if (list === 'deny') return namesPackage([server.command, ...server.args], wanted);
  const got = facts.launch !== undefined && 'launched' in facts.launch ? facts.launch.launched : undefined;
  if (got === undefined || got.registry !== wanted.registry || got.name !== wanted.name) return false;
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
 * options known to change nothing about what runs (with or without a value), and the option
 * naming the package outright. Any other option is refused: it may pick another registry, an
 * interpreter, extra packages or a shell string, and what we cannot read we cannot allow.
 */
interface Launcher {
  readonly registry: 'npm' | 'pypi';
  readonly subcommands: readonly (readonly string[])[];
  readonly flags: readonly string[];
  readonly withValue: readonly string[];
  readonly packageOption: readonly string[];
}

const NPM_LAUNCHER: Omit<Launcher, 'subcommands'> = {
  registry: 'npm',
  flags: ['-y', '--yes', '-q', '--quiet', '-s', '--silent', '--no-install', '--prefer-online'],
  withValue: ['--loglevel'],
  packageOption: ['-p', '--package'],
};
const UV_LAUNCHER: Omit<Launcher, 'subcommands'> = {
  registry: 'pypi',
  flags: ['-q', '--quiet', '--isolated', '--no-progress', '--refresh', '--no-cache'],
  withValue: ['--python', '-p'],
  packageOption: [],
};
const LAUNCHERS: Readonly<Record<string, Launcher>> = {
  npx: { ...NPM_LAUNCHER, subcommands: [[]] },
  npm: { ...NPM_LAUNCHER, subcommands: [['exec'], ['x']] },
  pnpx: { ...NPM_LAUNCHER, subcommands: [[]] },
  pnpm: { ...NPM_LAUNCHER, subcommands: [['dlx']] },
  yarn: { ...NPM_LAUNCHER, subcommands: [['dlx']] },
  bunx: { ...NPM_LAUNCHER, subcommands: [[]] },
  bun: { ...NPM_LAUNCHER, subcommands: [['x']] },
  uvx: { ...UV_LAUNCHER, subcommands: [[]] },
  uv: { ...UV_LAUNCHER, subcommands: [['tool', 'run']] },
  pipx: {
    registry: 'pypi',
    subcommands: [['run']],
    flags: ['-q', '--quiet'],
    withValue: ['--python'],
    packageOption: [],
  },
};

/** Why the options a launcher is given are refused, where a reason says more than "unknown". */
const OPTION_REASONS: Readonly<Record<string, string>> = {
  '--registry': 'fetches the package from another registry',
  '--userconfig': 'reads registry settings from another file',
  '--node-options': 'runs node with options of its own (--require can load any code)',
  '-c': 'runs a shell string',
  '--call': 'runs a shell string',
  '--cache': 'takes the package from a cache folder of its choosing',
  '--prefix': 'runs from another install folder',
  '--script-shell': 'runs scripts with a shell of its choosing',
  '--from': 'installs another package under the command name',
  '--with': 'installs extra packages next to it',
  '--with-editable': 'installs a local folder next to it',
  '--with-requirements': 'installs extra packages next to it',
  '--index-url': 'fetches packages from another index',
  '--extra-index-url': 'fetches packages from another index',
  '--index': 'fetches packages from another index',
  '--default-index': 'fetches packages from another index',
  '--find-links': 'takes packages from other places',
  '-f': 'takes packages from other places',
  '--spec': 'installs another package under the command name',
  '--pip-args': 'passes pip options of its own',
  '--directory': 'runs in a project folder of its choosing',
  '--project': 'runs in a project folder of its choosing',
  '--config-file': 'reads settings from another file',
  '--env-file': 'reads environment from a file',
};

/** What `name args` (a launcher by its command name) runs; undefined when `name` is no launcher. */
export function readLaunch(name: string, args: readonly string[]): LaunchReading | undefined {
  const launcher = LAUNCHERS[name];
  return launcher === undefined ? undefined : readLauncherArgs(launcher, args);
}

/** What was read from a launcher's arguments: the package it surely runs, or why that is unknown. */
export type LaunchReading = { readonly launched: LaunchedPackage } | { readonly unproven: string };

/**
 * The package a stdio server's launcher runs, when its command is a genuine launcher (the file
 * the gateway's own PATH finds under that name), its arguments can be read, and its `env`
 * changes nothing about what runs. Undefined when the command is no launcher at all.
 */
async function launchedPackage(
  server: StdioServerConfig,
  executable: string | undefined,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): Promise<LaunchReading | undefined> {
  const name = path.basename(server.command).replace(/\.(cmd|exe|bat)$/i, '');
  const launcher = LAUNCHERS[name];
  if (launcher === undefined || executable === undefined) return undefined;
  const genuine = await resolved(name, pathEnv(gatewayEnv), '/');
  if (genuine !== executable)
    return {
      unproven: `"${server.command}" is not the ${name} the gateway's PATH finds (${genuine ?? 'none'})`,
    };
  const envProblem = environmentProblem(launcher.registry, server.env, gatewayEnv);
  if (envProblem !== undefined) return { unproven: envProblem };
  return readLauncherArgs(launcher, server.args);
}

/**
 * Why the server entry's `env` could change what its launcher runs: the launcher's and the
 * runtime's own settings (registry, index, interpreter, preloaded code), or a PATH that finds
 * another `node` or `python` than the gateway's.
 */
export function environmentProblem(
  registry: 'npm' | 'pypi',
  env: Readonly<Record<string, string>>,
  gatewayEnv: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const patterns =
    registry === 'npm'
      ? [/^npm_config_/i, /^NODE_/i, /^(YARN|PNPM|BUN|COREPACK)_/i]
      : [/^UV_/i, /^PIP_/i, /^PIPX_/i, /^PYTHON/i, /^VIRTUAL_ENV$/i, /^CONDA_/i];
  for (const key of Object.keys(env)) {
    if (/^(LD_|DYLD_)/i.test(key)) return `its env sets ${key}, which loads other code into every program`;
    if (patterns.some((p) => p.test(key)))
      return `its env sets ${key}, which can change which package or code runs`;
    if (/^path$/i.test(key) && env[key] !== (gatewayEnv.PATH ?? gatewayEnv.Path))
      return `its env sets ${key}, so the launcher may run another ${registry === 'npm' ? 'node' : 'python'}`;
  }
  return undefined;
}

/** The package named by a launcher's arguments, or why it cannot be known for sure. */
function readLauncherArgs(launcher: Launcher, args: readonly string[]): LaunchReading {
  const sub = launcher.subcommands.find((words) => words.every((word, i) => args[i] === word));
  if (sub === undefined)
    return {
      unproven: `the arguments do not start with ${launcher.subcommands.map((w) => w.join(' ')).join(' or ')}`,
    };
  const rest = args.slice(sub.length);
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
    if (launcher.flags.includes(option) && inline === undefined) continue;
    const known = launcher.withValue.includes(option) || launcher.packageOption.includes(option);
    if (!known)
      return {
        unproven: `the launcher option ${option} ${OPTION_REASONS[option] ?? 'is not one known to leave the package as named'}`,
      };
    const value = inline ?? rest.shift();
    if (value === undefined) return { unproven: `the launcher option ${option} has no value` };
    if (
      (option === '--python' || option === '-p') &&
      launcher.registry === 'pypi' &&
      !/^\d+(\.\d+){0,2}$/.test(value)
    )
      return {
        unproven: `--python ${value} may run an interpreter of its choosing (only a version such as 3.12 is allowed)`,
      };
    if (launcher.packageOption.includes(option)) {
      if (named !== undefined)
        return { unproven: 'several packages are named: which one runs cannot be known' };
      named = value;
    }
  }
  const spec = named ?? rest[0];
  if (spec === undefined) return { unproven: 'no package is named' };
  const launched = parseSpec(launcher.registry, spec);
  if (launched === undefined)
    return {
      unproven: `"${spec}" is not a ${launcher.registry} package name with a version (a path, URL, git, file:, alias or direct reference runs other code)`,
    };
  // With a package option, the word after it is a command: only the package's own (its name
  // without scope) is surely the package's; any other (`node evil.js`) runs what it likes.
  if (named !== undefined) {
    const command = rest[0];
    const own = launched.name.replace(/^@[^/]+\//, '');
    if (command !== own)
      return {
        unproven:
          `${named === spec ? 'the package option' : ''} names ${launched.name} but runs the command "${command ?? ''}", which need not be the package's`.trim(),
      };
  }
  return { launched };
}

/** A version an npm spec may carry: a range of plain versions, never an alias, path, URL or tag with a colon. */
const NPM_VERSION = /^[\w.^~<>=|*+ -]+$/;
const NPM_NAME = /^(@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/;
/** `==1.2`, `@1.2` (uv's own form) or nothing; a PEP 508 direct reference (`@ https://...`) is not a version. */
const PYPI_SPEC = /^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9._, -]*\])?(?:(?:==|@)([0-9A-Za-z.+!*-]+))?$/;

/**
 * `@scope/name@1.2` → name and version (npm); `Name[extra]==1.2` → normalized name and version
 * (PyPI). Undefined for anything else a launcher would take: a path, a URL, a git or `file:`
 * spec, a tarball, an npm alias (`name@npm:other`), a PEP 508 direct reference or marker.
 */
export function parseSpec(registry: 'npm' | 'pypi', spec: string): LaunchedPackage | undefined {
  if (registry === 'npm') {
    const at = spec.lastIndexOf('@');
    const [name, version] = at > 0 ? [spec.slice(0, at), spec.slice(at + 1)] : [spec, undefined];
    const lower = name.toLowerCase();
    if (!NPM_NAME.test(lower) || /\.(tgz|tar|tar\.gz)$/.test(lower)) return undefined;
    if (version !== undefined && (version === '' || !NPM_VERSION.test(version))) return undefined;
    return { registry, name: lower, ...(version && { version }) };
  }
  const match = PYPI_SPEC.exec(spec);
  if (match === null) return undefined;
  const name = match[1]!.toLowerCase().replace(/[-_.]+/g, '-');
  return { registry, name, ...(match[3] && { version: match[3] }) };
}

/**
 * Whether a denied package is named anywhere on the command line, in whatever form: behind a
 * shell (`sh -c "npx evil"`), `env`, an alias (`x@npm:evil`), a package option. A deny rule errs
 * on the side of matching: a false match blocks a server, a missed one runs the denied package.
 */
export function namesPackage(words: readonly string[], wanted: LaunchedPackage): boolean {
  return words
    .flatMap((word) => word.split(/[\s;&|()`'"=:<>$]+/))
    .some((token) => {
      const found = parseSpec(wanted.registry, token);
      return found !== undefined && found.name === wanted.name;
    });
}
