/**
 * The managed layer: settings an organisation deploys to a machine (through MDM or a package)
 * that the user's own config cannot weaken. They live in a system folder ordinary users cannot
 * write, in `managed.yaml`:
 *
 * - `policies`: policy files loaded before the user's, so their rules decide first;
 * - `servers.allow` / `servers.deny`: which upstream servers may be started at all;
 * - `audit`: the least audit trail there must be (on, where, `onFailure`, `fsync`, and the
 *   shipping sinks that always get every record);
 * - `lock`: gateway settings fixed to the managed value, in the user config's own shape.
 *
 * This module reads and validates the file (file:line errors, like any config) and applies the
 * `audit` minimums and `lock` to the user's config data before that is normalized. Matching
 * servers against the allow and deny lists needs the file system and the spawner's PATH rules,
 * so it lives in core (`core/upstreams/managedServers.ts`).
 */
import { readManagedSandbox, type ManagedSandbox } from './managedSandbox.js';
import type { Stats } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type ConfigIssue } from './issues.js';
import { formatKeyPath, type KeyPath } from './interpolate.js';
import { deepFreeze } from '../lib/freeze.js';
import { parseByteSize } from './byteSize.js';
import { parseDuration } from './duration.js';
import type { AuditConfig } from './types.js';
import {
  parseYamlSource,
  requireTopLevelMapping,
  toPlainData,
  osReason,
  type YamlSource,
} from './yamlSource.js';

/** The file the managed folder holds. */
export const MANAGED_FILE_NAME = 'managed.yaml';

/**
 * The environment variable that moves the managed folder. Anyone can set it (in a host entry's
 * `env`, in a shell profile), so it is honoured only where it cannot switch managed settings off:
 * see `locateManaged`.
 */
export const MANAGED_DIR_VARIABLE = 'MCP_WARDEN_MANAGED_DIR';

/**
 * A system location a test puts in place of the real one, by code it loads into the gateway
 * before it starts (`node --import`). It is deliberately not an environment variable or a
 * command-line option: whoever can load code into the process controls it whatever we check.
 */
const TEST_SYSTEM_DIR = Symbol.for('mcp-warden.test.systemManagedDir');

/** The system folders managed settings are looked for in, most trusted first. */
function systemDirectories(
  env: Readonly<Record<string, string | undefined>>,
  platform: NodeJS.Platform,
): string[] {
  const injected = (globalThis as Record<symbol, unknown>)[TEST_SYSTEM_DIR];
  if (typeof injected === 'string') return [path.resolve(injected)];
  if (platform === 'darwin') return ['/Library/Application Support/mcp-warden'];
  if (platform === 'win32') {
    // %ProgramData% comes from the environment, which the user can change: the default place
    // is looked at first, so pointing the variable elsewhere cannot hide a file kept there.
    const fixed = 'C:\\ProgramData\\mcp-warden';
    const fromEnv = path.win32.join(env.ProgramData ?? env.PROGRAMDATA ?? 'C:\\ProgramData', 'mcp-warden');
    return fromEnv.toLowerCase() === fixed.toLowerCase() ? [fixed] : [fixed, fromEnv];
  }
  return ['/etc/mcp-warden'];
}

/** Where the managed settings are read from, and whether the variable was honoured or ignored. */
export interface ManagedLocation {
  readonly dir: string;
  /** The folder is the one `MCP_WARDEN_MANAGED_DIR` names. */
  readonly fromVariable: boolean;
  /** Why `MCP_WARDEN_MANAGED_DIR` was set and ignored: said to the user, never silent. */
  readonly ignored?: string;
}

/**
 * Where the managed folder is. The system folder of the operating system (/etc/mcp-warden,
 * /Library/Application Support/mcp-warden, C:\ProgramData\mcp-warden) unless
 * `MCP_WARDEN_MANAGED_DIR` names another and one of these holds:
 *
 * - there is no managed file in the system folder (nothing managed to escape: a machine without
 *   managed settings, a test, an administrator trying a file out);
 * - the folder it names, every folder above it, and the managed file in it belong to root and
 *   only root can change them (no write bit for others, for the group only when it is root's),
 *   so only an administrator can have put them there. The file must exist: an override may move
 *   the managed settings, never switch them off by pointing at an empty root-owned folder.
 *
 * Windows ownership (Administrators) is not checked here, so there an override is honoured only
 * when no system file exists. Otherwise the system folder is used and `ignored` says why.
 */
export async function locateManaged(
  env: Readonly<Record<string, string | undefined>>,
  platform: NodeJS.Platform = process.platform,
): Promise<ManagedLocation> {
  const systems = systemDirectories(env, platform);
  const withFile: string[] = [];
  for (const dir of systems) if (await mayExist(path.join(dir, MANAGED_FILE_NAME))) withFile.push(dir);
  const system = withFile[0] ?? systems[0]!;
  const set = env[MANAGED_DIR_VARIABLE];
  if (set === undefined || set === '') return { dir: system, fromVariable: false };
  const wanted = path.resolve(set);
  if (withFile.length === 0 || wanted === system) return { dir: wanted, fromVariable: true };
  const untrusted =
    platform === 'win32'
      ? 'on Windows a moved managed folder is honoured only while there is no system managed file'
      : await notAdministrators(wanted);
  if (untrusted === undefined) return { dir: wanted, fromVariable: true };
  return {
    dir: system,
    fromVariable: false,
    ignored: `${MANAGED_DIR_VARIABLE}=${set} is ignored: ${untrusted}; the managed settings in ${path.join(system, MANAGED_FILE_NAME)} are in force`,
  };
}

/** False only when the file is surely not there: a file we cannot look at may well exist. */
async function mayExist(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * Why `dir` could have been set up by someone other than an administrator, or undefined when
 * only root can have made it, its folders above and its managed file what they are.
 */
async function notAdministrators(dir: string): Promise<string | undefined> {
  let real: string;
  try {
    real = await realpath(dir);
  } catch (error) {
    return `${dir} cannot be used (${osReason(error)})`;
  }
  for (let at = real; ; at = path.dirname(at)) {
    let info: Stats;
    try {
      info = await stat(at);
    } catch (error) {
      return `${at} cannot be checked (${osReason(error)})`;
    }
    const found = writableByOthers(at, info, { sticky: at !== real });
    if (found !== undefined) return found;
    if (path.dirname(at) === at) break;
  }
  const file = path.join(real, MANAGED_FILE_NAME);
  try {
    return writableByOthers(file, await stat(file), { sticky: false });
  } catch {
    return `${dir} holds no ${MANAGED_FILE_NAME}, and a moved managed folder cannot switch managed settings off`;
  }
}

/**
 * Why a user other than root could change `file`: it is not root's, or its group (not root's)
 * or everyone may write it. A folder above with the sticky bit (/tmp) lets nobody rename or
 * delete what others own in it, so its write bits do not matter.
 */
function writableByOthers(file: string, info: Stats, options: { sticky: boolean }): string | undefined {
  if (info.uid !== 0) return `${file} belongs to uid ${info.uid}, not root`;
  if (options.sticky && (info.mode & 0o1000) !== 0) return undefined;
  if ((info.mode & 0o002) !== 0) return `${file} may be written by anyone`;
  if ((info.mode & 0o020) !== 0 && info.gid !== 0)
    return `${file} may be written by its group (gid ${info.gid})`;
  return undefined;
}

/**
 * One entry of `servers.allow` or `servers.deny`. Exactly one way of matching is set:
 * - `command` (with `args` when given): the executable, compared after both are resolved the
 *   way the gateway starts servers (so a lookalike of the same name elsewhere does not match);
 * - `npm` / `pypi`: the package a launcher (`npx`, `npm exec`, `pnpm dlx`, `yarn dlx`, `bunx`;
 *   `uvx`, `uv tool run`, `pipx run`) runs, optionally with a version (`name@1.2.3`, `name==1.2`);
 * - `url`: an HTTP server's URL, by origin and path prefix;
 * - `sha256`: the hash of the resolved executable file.
 */
export interface ServerRule {
  /** Where it is written: `servers.allow[2]`. */
  readonly key: string;
  readonly line: number;
  readonly command?: string;
  readonly args?: readonly string[];
  readonly npm?: string;
  readonly pypi?: string;
  readonly url?: string;
  readonly sha256?: string;
}

/** A setting fixed by `lock`: its key path in the user config's shape and the managed value. */
export interface LockedSetting {
  readonly path: readonly string[];
  readonly value: unknown;
  readonly line: number;
}

export interface ManagedAudit {
  /** The user config must have an audit trail; without one, `file` is used (required then). */
  readonly required: boolean;
  /** Absolute path the trail is written to, whatever the user config says. */
  readonly file?: string;
  /** `block`: the user cannot relax it to `continue`. */
  readonly onFailure?: 'block' | 'continue';
  /** `true`: the user cannot turn it off. */
  readonly fsync?: boolean;
  /**
   * The least the trail's rotation keeps (`retention: { maxSize, maxFiles }`): a user value
   * below it is refused and this one used; unset parts keep the default floor (50 MiB, 5 files).
   */
  readonly retention?: {
    readonly maxBytes?: number;
    readonly maxFiles?: number;
    /** The line of each of its keys, for messages. */
    readonly lines: Readonly<Record<string, number>>;
  };
  /**
   * Shipping sinks (syslog, OTLP logs) always added to the user's `audit.sinks`, in the user
   * config's own shape. The user cannot remove or change them: a user sink of the same name that
   * differs is refused and the managed one used.
   */
  readonly sinks: readonly ManagedSink[];
  /** The line of each key, for messages. */
  readonly lines: Readonly<Record<string, number>>;
}

/** One sink of `audit.sinks`: its entry as written, which the user config gets whole. */
export interface ManagedSink {
  readonly name: string;
  /** Where it is written: `audit.sinks[0]`. */
  readonly key: string;
  readonly line: number;
  readonly entry: Readonly<Record<string, unknown>>;
}

/** The managed settings in force, as read from `managed.yaml`. Frozen. */
export interface ManagedSettings {
  /** Absolute path of `managed.yaml`. */
  readonly file: string;
  /** Absolute paths, loaded before the user's policy files. */
  readonly policies: readonly string[];
  /** Absent: every server not denied may start. Present (even empty): only those it matches. */
  readonly allow?: readonly ServerRule[];
  readonly deny: readonly ServerRule[];
  readonly audit?: ManagedAudit;
  readonly lock: readonly LockedSetting[];
  /** Which stdio servers must run sandboxed, and the most users may grant them. */
  readonly sandbox?: ManagedSandbox;
}

/** Sections of the user config a lock may fix. The others have their own managed key, or none. */
const LOCKABLE_SECTIONS = ['gateway', 'confirmation', 'pins'] as const;
const RULE_KEYS = ['command', 'args', 'npm', 'pypi', 'url', 'sha256'] as const;
const TOP_KEYS = ['policies', 'servers', 'audit', 'lock', 'sandbox'] as const;

/**
 * Reads the managed settings from `dir` (or the file `file` when given, as `check --managed`
 * does). No `managed.yaml` in the folder: undefined, nothing is managed. A file that exists but
 * cannot be read or is invalid throws `ConfigError`: the gateway then refuses to start, since an
 * organisation's settings must never be skipped silently.
 */
export async function loadManagedSettings(options: {
  readonly dir?: string;
  readonly file?: string;
}): Promise<ManagedSettings | undefined> {
  const file = path.resolve(options.file ?? path.join(options.dir ?? '', MANAGED_FILE_NAME));
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (options.file === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError([
      { file, line: 0, column: 0, path: '', message: `cannot read managed settings: ${osReason(error)}` },
    ]);
  }
  return parseManagedText(text, file);
}

/** Parses `managed.yaml` text; throws `ConfigError` listing every problem. */
export function parseManagedText(text: string, file: string): ManagedSettings {
  const source = parseYamlSource(text, file, 'managed settings file');
  requireTopLevelMapping(source, {
    empty:
      'the managed settings file is empty; delete it, or give it policies, servers, audit, lock or sandbox',
    expectedKeys: `with keys among ${TOP_KEYS.join(', ')}`,
  });
  source.issues.throwIfAny();
  const data = asRecord(toPlainData(source)) ?? {};
  const { issues, locator } = source;
  const reader: ManagedReader = {
    issues,
    lineOf: (keyPath) => locator.position(keyPath, 'key').line,
    dir: path.dirname(file),
  };
  for (const key of Object.keys(data))
    if (!(TOP_KEYS as readonly string[]).includes(key))
      issues.add([key], 'key', `unknown key "${key}"; the managed settings file has ${TOP_KEYS.join(', ')}`);
  const policies = readPolicies(reader, data.policies);
  const { allow, deny } = readServerRules(reader, data.servers);
  const audit = data.audit === undefined ? undefined : readAudit(reader, data.audit);
  const lock = readLock(reader, data.lock);
  const sandbox = readManagedSandbox({ ...reader, file }, data.sandbox);
  issues.throwIfAny();
  return deepFreeze({
    file,
    policies,
    ...(allow && { allow }),
    deny,
    ...(audit && { audit }),
    lock,
    ...(sandbox && { sandbox }),
  });
}

/** What the readers of the managed file's sections share: where to report, and where keys are. */
interface ManagedReader {
  readonly issues: YamlSource['issues'];
  readonly lineOf: (keyPath: KeyPath) => number;
  /** The managed file's folder, which relative policy paths resolve against. */
  readonly dir: string;
}

function readPolicies({ issues, dir }: ManagedReader, value: unknown): string[] {
  const policies: string[] = [];
  if (value === undefined) return policies;
  if (!Array.isArray(value)) {
    issues.add(['policies'], 'value', 'must be a list of policy file paths');
    return policies;
  }
  value.forEach((entry, index) => {
    if (typeof entry !== 'string' || entry === '')
      issues.add(
        ['policies', index],
        'value',
        "must be a policy file path (relative to this file's folder, or absolute)",
      );
    else policies.push(path.resolve(dir, entry));
  });
  return policies;
}

function readServerRules(
  reader: ManagedReader,
  servers: unknown,
): { allow: ServerRule[] | undefined; deny: ServerRule[] } {
  let allow: ServerRule[] | undefined;
  const deny: ServerRule[] = [];
  if (servers === undefined) return { allow, deny };
  const section = asRecord(servers);
  if (section === undefined) {
    reader.issues.add(['servers'], 'value', 'must be a mapping with allow and/or deny lists');
    return { allow, deny };
  }
  for (const key of Object.keys(section))
    if (key !== 'allow' && key !== 'deny')
      reader.issues.add(['servers', key], 'key', `unknown key "${key}"; servers has allow and deny`);
  if (section.allow !== undefined) allow = readRules(reader, section.allow, 'allow');
  if (section.deny !== undefined) deny.push(...readRules(reader, section.deny, 'deny'));
  return { allow, deny };
}

function readRules(reader: ManagedReader, value: unknown, list: 'allow' | 'deny'): ServerRule[] {
  if (!Array.isArray(value)) {
    reader.issues.add(
      ['servers', list],
      'value',
      'must be a list of rules such as {npm: "@scope/package"}, {command: /usr/bin/tool}, {url: "https://host/path"} or {sha256: "..."}',
    );
    return [];
  }
  const rules: ServerRule[] = [];
  value.forEach((entry, index) => {
    const rule = readRule(reader, entry, ['servers', list, index]);
    if (rule !== undefined) rules.push({ key: `servers.${list}[${index}]`, ...rule });
  });
  return rules;
}

/** One server rule at `at`, without its key, or undefined when it cannot be used (reported). */
function readRule(reader: ManagedReader, entry: unknown, at: KeyPath): Omit<ServerRule, 'key'> | undefined {
  const { issues } = reader;
  const rule = asRecord(entry);
  if (rule === undefined) {
    issues.add(at, 'value', 'must be a mapping with one of command, npm, pypi, url, sha256');
    return undefined;
  }
  for (const key of Object.keys(rule))
    if (!(RULE_KEYS as readonly string[]).includes(key))
      issues.add(
        [...at, key],
        'key',
        `unknown key "${key}"; a server rule has one of command (with args), npm, pypi, url, sha256`,
      );
  const kinds = (['command', 'npm', 'pypi', 'url', 'sha256'] as const).filter((k) => rule[k] !== undefined);
  if (kinds.length !== 1) {
    issues.add(
      at,
      'value',
      kinds.length === 0
        ? 'needs one of command, npm, pypi, url, sha256'
        : `has ${kinds.join(' and ')}: give exactly one way of matching per rule`,
    );
    return undefined;
  }
  const kind = kinds[0]!;
  const text = rule[kind];
  if (typeof text !== 'string' || text.trim() === '') {
    issues.add([...at, kind], 'value', 'must be a non-empty string');
    return undefined;
  }
  checkRuleText(reader, [...at, kind], kind, text);
  let args: string[] | undefined;
  if (rule.args !== undefined) {
    if (kind !== 'command') issues.add([...at, 'args'], 'key', 'args goes with command only');
    else if (!Array.isArray(rule.args) || rule.args.some((a) => typeof a !== 'string'))
      issues.add([...at, 'args'], 'value', 'must be a list of strings');
    else args = rule.args as string[];
  }
  return {
    line: reader.lineOf(at),
    [kind]: kind === 'sha256' ? text.toLowerCase() : text,
    ...(args && { args }),
  };
}

/** Reports a rule's url that is not http(s), sha256 that is not a digest, or relative command path. */
function checkRuleText(
  { issues }: ManagedReader,
  at: KeyPath,
  kind: 'command' | 'npm' | 'pypi' | 'url' | 'sha256',
  text: string,
): void {
  if (kind === 'url') {
    let url: URL | undefined;
    try {
      url = new URL(text);
    } catch {
      /* reported below */
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      issues.add(at, 'value', `"${text}" is not an http(s) URL`);
  }
  if (kind === 'sha256' && !/^[0-9a-f]{64}$/i.test(text))
    issues.add(at, 'value', 'must be 64 hexadecimal digits (sha256sum of the executable)');
  if (kind === 'command' && !path.isAbsolute(text) && /[\\/]/.test(text))
    issues.add(at, 'value', 'must be an absolute path or a bare command name looked up on PATH');
}

function readAudit(reader: ManagedReader, value: unknown): ManagedAudit | undefined {
  const { issues } = reader;
  const section = asRecord(value);
  if (section === undefined) {
    issues.add(['audit'], 'value', `must be a mapping (${AUDIT_KEYS.join(', ')})`);
    return undefined;
  }
  const lines: Record<string, number> = {};
  for (const key of Object.keys(section)) {
    lines[key] = reader.lineOf(['audit', key]);
    if (!(AUDIT_KEYS as readonly string[]).includes(key))
      issues.add(['audit', key], 'key', `unknown key "${key}"; managed audit has ${AUDIT_KEYS.join(', ')}`);
  }
  const retention = readRetention(reader, section.retention);
  const { required = false, file: auditFile, onFailure, fsync } = section;
  if (typeof required !== 'boolean') issues.add(['audit', 'required'], 'value', 'must be true or false');
  if (auditFile !== undefined && (typeof auditFile !== 'string' || !path.isAbsolute(auditFile)))
    issues.add(
      ['audit', 'file'],
      'value',
      "must be an absolute path (the user's folders differ from machine to machine)",
    );
  if (onFailure !== undefined && onFailure !== 'block' && onFailure !== 'continue')
    issues.add(['audit', 'onFailure'], 'value', 'must be block or continue');
  if (fsync !== undefined && typeof fsync !== 'boolean')
    issues.add(['audit', 'fsync'], 'value', 'must be true or false');
  return {
    required: required === true,
    ...(typeof auditFile === 'string' && { file: auditFile }),
    ...((onFailure === 'block' || onFailure === 'continue') && { onFailure }),
    ...(typeof fsync === 'boolean' && { fsync }),
    ...(retention !== undefined && { retention }),
    sinks: readSinks(reader, section.sinks),
    lines,
  };
}

const AUDIT_KEYS = ['required', 'file', 'onFailure', 'fsync', 'retention', 'sinks'] as const;

/** `audit.retention`: the least rotation the user may set, as `maxSize` and `maxFiles`. */
function readRetention(
  { issues, lineOf }: ManagedReader,
  value: unknown,
): ManagedAudit['retention'] | undefined {
  if (value === undefined) return undefined;
  const section = asRecord(value);
  if (section === undefined) {
    issues.add(['audit', 'retention'], 'value', 'must be a mapping (maxSize, maxFiles)');
    return undefined;
  }
  for (const key of Object.keys(section))
    if (key !== 'maxSize' && key !== 'maxFiles')
      issues.add(['audit', 'retention', key], 'key', `unknown key "${key}"; retention has maxSize, maxFiles`);
  let maxBytes: number | undefined;
  if (section.maxSize !== undefined) {
    const parsed = parseByteSize(section.maxSize);
    if ('problem' in parsed) issues.add(['audit', 'retention', 'maxSize'], 'value', parsed.problem);
    else maxBytes = parsed.bytes;
  }
  const { maxFiles } = section;
  if (maxFiles !== undefined && !(Number.isInteger(maxFiles) && (maxFiles as number) >= 1))
    issues.add(['audit', 'retention', 'maxFiles'], 'value', 'must be a whole number of files, 1 or more');
  const lines: Record<string, number> = {};
  for (const key of ['maxSize', 'maxFiles']) lines[key] = lineOf(['audit', 'retention', key]);
  return {
    lines,
    ...(maxBytes !== undefined && { maxBytes }),
    ...(Number.isInteger(maxFiles) && (maxFiles as number) >= 1 && { maxFiles: maxFiles as number }),
  };
}

/**
 * `audit.sinks`: each entry is checked here for what makes it a managed sink (a name the user's
 * entries are matched by, a type); its other keys are checked with the user config's own schema
 * once it is added there, and problems found then are reported at this file's lines.
 */
function readSinks({ issues, lineOf }: ManagedReader, value: unknown): ManagedSink[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    issues.add(['audit', 'sinks'], 'value', 'must be a list of sinks, as in the config file (audit.sinks)');
    return [];
  }
  const sinks: ManagedSink[] = [];
  value.forEach((item, index) => {
    const at: KeyPath = ['audit', 'sinks', index];
    const entry = asRecord(item);
    if (entry === undefined) {
      issues.add(at, 'value', 'must be a mapping with name and type (syslog or otlp)');
      return;
    }
    const { name, type, ca } = entry;
    if (typeof name !== 'string' || name.trim() === '')
      issues.add(
        [...at, ...(name === undefined ? [] : ['name'])],
        'value',
        'a managed sink needs a name: the user config cannot change or remove a sink of that name',
      );
    else if (sinks.some((s) => s.name === name))
      issues.add(
        [...at, 'name'],
        'value',
        `a second sink named "${name}"; each sink needs a name of its own`,
      );
    if (type !== 'syslog' && type !== 'otlp')
      issues.add([...at, ...(type === undefined ? [] : ['type'])], 'value', 'type must be syslog or otlp');
    if (ca !== undefined && (typeof ca !== 'string' || !path.isAbsolute(ca)))
      issues.add(
        [...at, 'ca'],
        'value',
        "must be an absolute path (the user's folders differ from machine to machine)",
      );
    if (typeof name === 'string') sinks.push({ name, key: `audit.sinks[${index}]`, line: lineOf(at), entry });
  });
  return sinks;
}

function readLock({ issues, lineOf }: ManagedReader, value: unknown): LockedSetting[] {
  const lock: LockedSetting[] = [];
  if (value === undefined) return lock;
  const section = asRecord(value);
  if (section === undefined) {
    issues.add(
      ['lock'],
      'value',
      'must be a mapping in the shape of the config file, e.g. lock: {confirmation: {timeout: 30s}}',
    );
    return lock;
  }
  for (const [key, item] of Object.entries(section)) {
    if (!(LOCKABLE_SECTIONS as readonly string[]).includes(key)) {
      issues.add(
        ['lock', key],
        'key',
        `"${key}" cannot be locked; lock holds ${LOCKABLE_SECTIONS.join(', ')} (servers, policies and audit have their own managed keys)`,
      );
      continue;
    }
    collectLeaves(item, [key], lock, (keyPath) => lineOf(['lock', ...keyPath]));
  }
  return lock;
}

/** Every leaf (a scalar or a list) under `value`, with its key path: each is one locked setting. */
function collectLeaves(
  value: unknown,
  at: string[],
  into: LockedSetting[],
  lineOf: (keyPath: KeyPath) => number,
): void {
  const record = asRecord(value);
  if (record === undefined || Object.keys(record).length === 0) {
    into.push({ path: at, value, line: lineOf(at) });
    return;
  }
  for (const [key, child] of Object.entries(record)) collectLeaves(child, [...at, key], into, lineOf);
}

/**
 * What applying the managed layer to the user's config data did: each user setting refused
 * because it would weaken a managed one (the managed value is used instead), located in the
 * user's file where it can be.
 */
export interface ManagedApplication {
  /** The user's config data with the managed values in place. */
  readonly data: Record<string, unknown>;
  /** Key paths (dotted) whose value now comes from the managed file, with the managed line. */
  readonly managedPaths: ReadonlyMap<string, number>;
  /** The managed sinks, by where they are in the resulting `audit.sinks` (`audit.sinks[2]`). */
  readonly managedSinks: ReadonlyMap<string, ManagedSink>;
  /** One per user setting that was overridden: said loudly, never silently. */
  readonly refusals: readonly { readonly path: KeyPath; readonly message: string }[];
  /** A managed minimum that cannot be met at all (an audit required, and no file to write it to). */
  readonly errors: readonly ConfigIssue[];
}

/**
 * Puts the managed `audit` minimums and `lock` values into the user's (expanded) config data.
 * A user value that differs from a locked one, or is weaker than an audit minimum, is refused:
 * reported in `refusals` with the managed file and key, and replaced by the managed value.
 */
export function applyManagedToData(
  data: Readonly<Record<string, unknown>>,
  managed: ManagedSettings,
): ManagedApplication {
  const app: Application = {
    managed,
    data: structuredClone(data) as Record<string, unknown>,
    managedPaths: new Map(),
    managedSinks: new Map(),
    refusals: [],
    errors: [],
  };
  const audit = managed.audit;
  if (audit !== undefined) {
    const section = auditSection(app, audit);
    if (section !== undefined) applyAuditMinimums(app, audit, section);
  }
  for (const locked of managed.lock) {
    const dotted = formatKeyPath(locked.path);
    const user = valueAtPath(app.data, locked.path);
    if (user !== undefined && !sameValue(user, locked.value))
      app.refusals.push({
        path: locked.path,
        message: `refused: ${where(app, `lock.${dotted}`, locked.line)} locks this setting to ${JSON.stringify(locked.value)}, which is used instead of ${JSON.stringify(user)}`,
      });
    setAtPath(app.data, locked.path, structuredClone(locked.value));
    app.managedPaths.set(dotted, locked.line);
    lockServerEntries(app.data, locked, where(app, `lock.${dotted}`, locked.line), app.refusals);
  }
  const { data: out, managedPaths, managedSinks, refusals, errors } = app;
  return { data: out, managedPaths, managedSinks, refusals, errors };
}

/** The managed settings being put into a copy of the user's data, and what that has refused so far. */
interface Application {
  readonly managed: ManagedSettings;
  readonly data: Record<string, unknown>;
  readonly managedPaths: Map<string, number>;
  readonly managedSinks: Map<string, ManagedSink>;
  readonly refusals: { path: KeyPath; message: string }[];
  readonly errors: ConfigIssue[];
}

/** `file:line key` of a managed setting, for refusals. */
function where(app: Application, key: string, line: number): string {
  return `${app.managed.file}:${line} ${key}`;
}

/**
 * The user's `audit:` section, made (and said so) when the managed settings need a trail and
 * name its file; undefined, with an error when they need one and cannot name it.
 */
function auditSection(app: Application, audit: ManagedAudit): Record<string, unknown> | undefined {
  const section = asRecord(app.data.audit);
  const sinksNeedTrail = audit.sinks.length > 0;
  if (section !== undefined || !(audit.required || sinksNeedTrail || audit.file !== undefined))
    return section;
  const why = audit.required ? 'audit.required' : 'audit.sinks';
  const line = audit.lines[audit.required ? 'required' : 'sinks'] ?? 0;
  if (audit.file === undefined) {
    app.errors.push({
      file: app.managed.file,
      line,
      column: 0,
      path: why,
      message: audit.required
        ? 'the managed settings require an audit trail, and the user config has no audit: section; give audit.file here, or add an audit: section to the config'
        : 'the managed sinks need an audit trail (their records wait in its spool folder), and the user config has no audit: section; give audit.file here, or add an audit: section to the config',
    });
    return undefined;
  }
  if (audit.required || sinksNeedTrail)
    app.refusals.push({
      path: [],
      message: `the config has no audit: section, but ${where(app, why, line)} requires one: auditing to ${audit.file}`,
    });
  const made: Record<string, unknown> = {};
  app.data.audit = made;
  return made;
}

/** One managed audit minimum: the key, the value it requires, and when a user value falls short. */
interface AuditMinimum {
  readonly key: string;
  readonly value: unknown;
  readonly weaker: (user: unknown) => boolean;
  /** Why the user's value is refused, for the refusal. */
  readonly describe: string;
  readonly line: number;
  /** The managed key that requires it; default `audit.<key>`. */
  readonly managedKey?: string;
}

function requireAuditValue(app: Application, section: Record<string, unknown>, minimum: AuditMinimum): void {
  const { key, value, weaker, line } = minimum;
  const user = section[key];
  if (user !== undefined && weaker(user))
    app.refusals.push({
      path: ['audit', key],
      message: `refused: ${minimum.describe}; ${where(app, minimum.managedKey ?? `audit.${key}`, line)} requires ${JSON.stringify(value)}, which is used instead`,
    });
  if (user === undefined || weaker(user)) {
    section[key] = value;
    app.managedPaths.set(`audit.${key}`, line);
  }
}

/** The managed file, block mode, fsync and sinks, put into the user's audit section. */
function applyAuditMinimums(app: Application, audit: ManagedAudit, section: Record<string, unknown>): void {
  const managedFile = app.managed.file;
  if (audit.file !== undefined)
    requireAuditValue(app, section, {
      key: 'file',
      value: audit.file,
      weaker: (user) =>
        typeof user !== 'string' || path.resolve(path.dirname(managedFile), user) !== audit.file,
      describe: 'the audit trail goes to the managed file',
      line: audit.lines.file ?? 0,
    });
  // A required sink refuses calls it cannot take only in block mode: requiring one asks for it.
  const requiredSink = audit.sinks.find((sink) => sink.entry.required === true);
  if (audit.onFailure === 'block' || requiredSink !== undefined)
    requireAuditValue(app, section, {
      key: 'onFailure',
      value: 'block',
      weaker: (user) => user !== 'block',
      describe:
        audit.onFailure === 'block'
          ? 'onFailure: continue would serve calls that cannot be audited'
          : `onFailure: continue would serve calls the required managed sink "${requiredSink?.name ?? ''}" cannot take`,
      line: audit.onFailure === 'block' ? (audit.lines.onFailure ?? 0) : (requiredSink?.line ?? 0),
      managedKey: audit.onFailure === 'block' ? 'audit.onFailure' : `${requiredSink?.key ?? ''}.required`,
    });
  if (audit.fsync === true)
    requireAuditValue(app, section, {
      key: 'fsync',
      value: true,
      weaker: (user) => user !== true,
      describe: 'fsync: false would let records be lost on power loss',
      line: audit.lines.fsync ?? 0,
    });
  if (audit.sinks.length > 0) addManagedSinks(app, section, audit.sinks);
}

/**
 * Every managed sink goes into the user's list: in place of a user sink of the same name (which
 * is refused if it says anything else), or at the end. The user's other sinks stay.
 */
function addManagedSinks(
  app: Application,
  section: Record<string, unknown>,
  sinks: readonly ManagedSink[],
): void {
  const list: unknown[] = Array.isArray(section.sinks) ? section.sinks : [];
  section.sinks = list;
  for (const sink of sinks) {
    const index = list.findIndex((entry) => asRecord(entry)?.name === sink.name);
    const at = index === -1 ? list.length : index;
    if (index !== -1 && !sameValue(list[index], sink.entry))
      app.refusals.push({
        path: ['audit', 'sinks', index],
        message: `refused: the sink "${sink.name}" is set by ${where(app, sink.key, sink.line)} and cannot be changed or made optional here; the managed sink is used instead`,
      });
    list[at] = structuredClone(sink.entry);
    app.managedSinks.set(`audit.sinks[${at}]`, sink);
  }
}

/**
 * How a gateway setting that a server entry (or its tools) may also set is held under a lock.
 * A server value may only be stricter than the managed one: a shorter timeout, validation on;
 * anything else (a longer timeout, validation off, another repair) is refused and the managed
 * value used, loudly, as at the gateway level. Stricter values stay, since they take nothing
 * from what the organisation asked for.
 */
const SERVER_LEVEL_LOCKS: Readonly<Record<string, 'shorter' | 'true' | 'same'>> = {
  timeout: 'shorter',
  maxTimeout: 'shorter',
  validateArguments: 'true',
  'repair.textForStructured': 'same',
  'repair.invalidStructured': 'same',
  'repair.structuredFromText': 'same',
  'repair.missingStructured': 'same',
};

function lockServerEntries(
  out: Record<string, unknown>,
  locked: LockedSetting,
  where: string,
  refusals: { path: KeyPath; message: string }[],
): void {
  if (locked.path[0] !== 'gateway') return;
  const key = locked.path.slice(1);
  const rule = SERVER_LEVEL_LOCKS[key.join('.')];
  if (rule === undefined) return;
  const lockedMs = rule === 'shorter' ? durationMs(locked.value, false) : undefined;
  const allowed = (user: unknown, bareIsMs: boolean): boolean => {
    if (sameValue(user, locked.value)) return true;
    if (rule === 'true') return user === true;
    if (rule === 'same') return false;
    const userMs = durationMs(user, bareIsMs);
    // A value that is no duration is the schema's to report, at its line.
    return userMs === undefined || lockedMs === undefined || userMs <= lockedMs;
  };
  const hold = (entry: Record<string, unknown>, at: KeyPath, bareIsMs: boolean, what: string) => {
    const user = valueAtPath(entry, at.slice(2) as string[]);
    if (user === undefined || allowed(user, bareIsMs)) return;
    refusals.push({
      path: at,
      message: `refused: ${what} ${JSON.stringify(user)} would ${rule === 'shorter' ? 'outlast' : 'undo'} ${where}, which locks it to ${JSON.stringify(locked.value)}; ${JSON.stringify(locked.value)} is used instead${rule === 'shorter' ? ' (a shorter value may be set here)' : rule === 'true' ? ' (only true may be set here)' : ''}`,
    });
    setAtPath(entry, at.slice(2) as string[], structuredClone(locked.value));
  };
  for (const section of ['servers', 'mcpServers']) {
    const servers = asRecord(out[section]);
    if (servers === undefined) continue;
    for (const [name, value] of Object.entries(servers)) {
      const entry = asRecord(value);
      if (entry === undefined) continue;
      // Claude Code's files give a server's timeout in milliseconds, as bare numbers.
      const bareIsMs = section === 'mcpServers' && key[0] === 'timeout';
      hold(entry, [section, name, ...key], bareIsMs, `server "${name}" ${key.join('.')}`);
      // A per-tool timeout is a timeout too: it may not outlast a locked one either.
      const timeouts = asRecord(asRecord(entry.tools)?.timeouts);
      if (key[0] === 'timeout' && timeouts !== undefined)
        for (const glob of Object.keys(timeouts))
          hold(
            entry,
            [section, name, 'tools', 'timeouts', glob],
            false,
            `server "${name}" tools.timeouts "${glob}"`,
          );
    }
  }
}

/** Milliseconds of a duration as written in a config, or undefined when it is none. */
function durationMs(value: unknown, bareIsMs: boolean): number | undefined {
  if (typeof value === 'number') return bareIsMs || value === 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  try {
    return parseDuration(value);
  } catch {
    return undefined;
  }
}

/**
 * Words every audit trail is made of (record types, decisions, tool and server names): a
 * redaction pattern that matches one of them blanks the trail, not a secret in it.
 */
const TRAIL_WORDS = [
  'call',
  'call_start',
  'server_blocked',
  'tools/call',
  'allow',
  'deny',
  'echo',
  'read_file',
  'github',
];

/**
 * What the user's audit settings may not do to a trail the managed settings ask for. The trail
 * is the organisation's record, so under a managed `audit:` section:
 *
 * - a user redaction pattern that matches the words every trail is made of (`[\s\S]+`, `\w+`)
 *   would blank the records, in the file and at the managed sinks: it is refused and not used;
 * - rotation may not keep less than the managed `retention` (`maxSize`, `maxFiles`), or than
 *   the default retention (50 MiB, 5 files) where it sets none: smaller values would delete
 *   required records early, so they are refused and the floor used. Larger values keep more
 *   and stay.
 *
 * Each refusal names the user's key; the managed file and line say who asks.
 */
export function holdManagedTrail(
  audit: AuditConfig,
  managed: ManagedSettings,
  floor: { readonly maxBytes: number; readonly maxFiles: number },
): { audit: AuditConfig; refusals: { path: KeyPath; message: string }[] } {
  if (managed.audit === undefined) return { audit, refusals: [] };
  const firstLine = Math.min(...Object.values(managed.audit.lines));
  const where = `${managed.file}:${Number.isFinite(firstLine) ? firstLine : 0} audit`;
  const refusals: { path: KeyPath; message: string }[] = [];
  const patterns = audit.redact.patterns.filter((pattern, index) => {
    const word = TRAIL_WORDS.find((w) => matchesWord(pattern, w));
    if (word === undefined) return true;
    refusals.push({
      path: ['audit', 'redact', 'patterns', index],
      message: `refused: the redaction pattern "${pattern}" also matches "${word}", a word every audit record is made of, so it would blank the trail ${where} requires; it is not used (a pattern must match the secret only)`,
    });
    return false;
  });
  const kept = { ...audit, redact: { ...audit.redact, patterns } };
  // The managed retention raises the floor; the defaults are the floor without one.
  const { retention } = managed.audit;
  const atKey = (key: string) => `${managed.file}:${retention?.lines[key] ?? 0} audit.retention.${key}`;
  const minBytes = Math.max(floor.maxBytes, retention?.maxBytes ?? 0);
  const minFiles = Math.max(floor.maxFiles, retention?.maxFiles ?? 0);
  const bytesFloor = minBytes > floor.maxBytes ? `the least ${atKey('maxSize')} sets` : `the default`;
  const filesFloor = minFiles > floor.maxFiles ? `the least ${atKey('maxFiles')} sets` : `the default`;
  if (audit.maxBytes < minBytes) {
    // A user who wrote nothing has the default, below a managed floor: raised without a word.
    if (audit.maxBytes !== floor.maxBytes)
      refusals.push({
        path: ['audit', 'maxSize'],
        message: `refused: rotating at ${audit.maxBytes} bytes would delete records the trail ${where} requires; ${bytesFloor}, ${minBytes} bytes, is used (a larger size may be set)`,
      });
    kept.maxBytes = minBytes;
  }
  if (audit.maxFiles < minFiles) {
    if (audit.maxFiles !== floor.maxFiles)
      refusals.push({
        path: ['audit', 'maxFiles'],
        message: `refused: keeping ${audit.maxFiles} rotated file(s) would delete records the trail ${where} requires; ${filesFloor}, ${minFiles}, is used (more may be kept)`,
      });
    kept.maxFiles = minFiles;
  }
  return { audit: kept, refusals };
}

/** Whether a redaction pattern (`text` or `/text/flags`) matches in `word`; an invalid one is the redactor's to report. */
function matchesWord(pattern: string, word: string): boolean {
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(pattern);
  try {
    return new RegExp(literal?.[1] ?? pattern, (literal?.[2] ?? '').replace(/[^imsu]/g, '')).test(word);
  } catch {
    return false;
  }
}

/** Re-points the problems found in managed values at the managed file, where they were written. */
export function relocateManagedIssues(
  error: ConfigError,
  managed: ManagedSettings,
  applied: Pick<ManagedApplication, 'managedPaths' | 'managedSinks'>,
): ConfigError {
  const issues = error.issues.map((issue) => {
    const sinkAt = /^audit\.sinks\[\d+\]/.exec(issue.path)?.[0];
    const sink = sinkAt === undefined ? undefined : applied.managedSinks.get(sinkAt);
    if (sink !== undefined)
      return {
        ...issue,
        file: managed.file,
        line: sink.line,
        column: 0,
        path: sink.key + issue.path.slice(sinkAt!.length),
      };
    const line = applied.managedPaths.get(issue.path);
    if (line === undefined) return issue;
    const key = issue.path.startsWith('audit.') ? issue.path : `lock.${issue.path}`;
    return { ...issue, file: managed.file, line, column: 0, path: key };
  });
  return new ConfigError(issues);
}

function valueAtPath(data: Record<string, unknown>, keyPath: readonly string[]): unknown {
  let node: unknown = data;
  for (const key of keyPath) {
    const record = asRecord(node);
    if (record === undefined) return undefined;
    node = record[key];
  }
  return node;
}

function setAtPath(data: Record<string, unknown>, keyPath: readonly string[], value: unknown): void {
  let node = data;
  for (const key of keyPath.slice(0, -1)) {
    let next = asRecord(node[key]);
    if (next === undefined) {
      next = {};
      node[key] = next;
    }
    node = next;
  }
  node[keyPath[keyPath.length - 1]!] = value;
}

/** Equal as configuration: the same JSON (durations and sizes must be written the same way). */
function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A short description of a rule for messages: `servers.deny[0] (npm: evil-mcp) at FILE:LINE`. */
export function describeRule(rule: ServerRule, managed: Pick<ManagedSettings, 'file'>): string {
  const what =
    rule.command !== undefined
      ? `command: ${[rule.command, ...(rule.args ?? [])].join(' ')}`
      : rule.npm !== undefined
        ? `npm: ${rule.npm}`
        : rule.pypi !== undefined
          ? `pypi: ${rule.pypi}`
          : rule.url !== undefined
            ? `url: ${rule.url}`
            : `sha256: ${rule.sha256 ?? ''}`;
  return `${rule.key} (${what}) at ${managed.file}:${rule.line}`;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
