/**
 * `mcp-warden server add|remove|enable|disable|list`: manages the servers of a config file from
 * the command line. Each edit changes that one entry in place (configEdit.ts keeps the rest of
 * the file byte for byte), is checked as `mcp-warden check` would check the whole file (and
 * against the managed settings) before anything is written, and is written atomically with the
 * previous file kept as `FILE.bak`. A file the edit would make invalid is left untouched.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, type ConfigIssue } from '../config/issues.js';
import type { ManagedSettings } from '../config/managed.js';
import type { ServerConfig, WardenConfig } from '../config/types.js';
import { formatDuration } from '../config/duration.js';
import type { LiveServer, readLiveStates } from '../gateway/liveState.js';
import { describeAge } from '../lib/age.js';
import { plural } from '../lib/plural.js';
import { editServers, writeAtomically, type ServerEntry, type ServersEdit } from './configEdit.js';
import { loadConfigFile, loadManaged } from './loading.js';
import { CommandError, print, UsageError, warningLines } from './support.js';
import { SERVER_HELP } from './serverHelp.js';

/** What the server names may be: as the config's schema says. */
const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export async function runServer(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      tokens: true,
      options: {
        config: { type: 'string', short: 'c' },
        env: { type: 'string', multiple: true },
        // Both spellings: Node.js 20 takes `--env-file` for itself wherever it is on the command line.
        envfile: { type: 'string' },
        'env-file': { type: 'string' },
        url: { type: 'string' },
        header: { type: 'string', multiple: true },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    const hint = argv.includes('--') ? '' : ' (put the server\'s own command line after "--")';
    throw new UsageError(`${(error as Error).message}${hint}`);
  }
  const { values, tokens } = parsed;
  if (values.help === true) {
    await print(`${SERVER_HELP}\n`);
    return 0;
  }
  const terminator = tokens.findIndex((t) => t.kind === 'option-terminator');
  const before = tokens
    .filter((t, i) => t.kind === 'positional' && (terminator === -1 || i < terminator))
    .map((t) => (t as { value: string }).value);
  const after =
    terminator === -1 ? [] : tokens.slice(terminator + 1).map((t) => (t as { value: string }).value);
  const [sub, name, ...rest] = before;
  if (sub === undefined) throw new UsageError('say what to do: add, remove, enable, disable or list');
  if (!['list', 'add', 'remove', 'enable', 'disable'].includes(sub))
    throw new UsageError(`unknown server command "${sub}"; use add, remove, enable, disable or list`);
  const file = configFile(values.config);
  switch (sub) {
    case 'list':
      if (name !== undefined) throw new UsageError(`unexpected argument "${name}"`);
      return list(file, values.json === true);
    case 'add': {
      const server = requireName(name);
      const entry = newEntry({ ...values, command: [...rest, ...after] });
      return edit(file, server, 'add', (servers) => {
        const existing = servers.names().find((n) => n.name === server);
        if (existing !== undefined)
          throw new CommandError(
            `server "${server}" already exists under ${existing.section} in ${file}; nothing was changed (remove it first, or choose another name)`,
          );
        servers.add(server, entry);
      });
    }
    case 'remove':
    case 'enable':
    case 'disable': {
      const server = requireName(name);
      if (rest.length > 0 || after.length > 0)
        throw new UsageError(`unexpected argument "${[...rest, ...after][0]}"`);
      return edit(file, server, sub, (servers) => {
        const entry = servers.entry(server);
        if (servers.names().every((n) => n.name !== server))
          throw new CommandError(`no server "${server}" in ${file} (it has ${namesOf(servers)})`);
        if (sub === 'remove' && servers.names().length === 1)
          throw new CommandError(
            `server "${server}" is the only one in ${file}, and a config needs at least one; nothing was changed (disable it instead)`,
          );
        if (sub === 'remove') return servers.remove(server);
        const disabled = entry?.['disabled'] === true;
        if (disabled === (sub === 'disable')) return 'unchanged';
        servers.setDisabled(server, sub === 'disable');
      });
    }
    default:
      throw new UsageError(`unknown server command "${sub}"`);
  }
}

function configFile(given: string | undefined): string {
  const chosen = given ?? process.env.MCP_WARDEN_CONFIG;
  if (chosen === undefined || chosen === '') throw new UsageError('no config file given (use --config FILE)');
  const file = path.resolve(chosen);
  if (!existsSync(file))
    throw new CommandError(`${file}: no such file (mcp-warden init writes a starter config)`);
  return file;
}

function requireName(name: string | undefined): string {
  if (name === undefined) throw new UsageError('name the server (NAME)');
  if (!SERVER_NAME.test(name))
    throw new CommandError(
      `"${name}" is not a server name: names may use only letters, digits, "_" and "-", 1 to 64 characters`,
    );
  return name;
}

function namesOf(servers: ServersEdit): string {
  const names = servers.names().map((n) => n.name);
  return names.length === 0 ? 'none' : names.join(', ');
}

/** `K=V` pairs as a map, or a usage error naming the option. */
function pairs(option: string, given: readonly string[] | undefined): Record<string, string> | undefined {
  if (given === undefined || given.length === 0) return undefined;
  const map: Record<string, string> = {};
  for (const pair of given) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--${option} ${pair}: expected NAME=VALUE`);
    map[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return map;
}

/** The entry `server add` writes, from its options. */
function newEntry(options: {
  readonly url?: string | undefined;
  readonly header?: string[] | undefined;
  readonly env?: string[] | undefined;
  readonly envfile?: string | undefined;
  readonly 'env-file'?: string | undefined;
  readonly command: readonly string[];
}): ServerEntry {
  const { url, command } = options;
  const envFile = options.envfile ?? options['env-file'];
  if (url !== undefined) {
    if (command.length > 0)
      throw new UsageError(
        'give either --url URL (an HTTP server) or -- COMMAND ARGS (a stdio server), not both',
      );
    if (options.env !== undefined || envFile !== undefined)
      throw new UsageError('--env and --envfile apply to stdio servers (-- COMMAND ARGS), not to --url');
    const headers = pairs('header', options.header);
    return { url, ...(headers && { headers }) };
  }
  if (options.header !== undefined) throw new UsageError('--header applies to HTTP servers (--url URL)');
  const [program, ...args] = command;
  if (program === undefined)
    throw new UsageError('give the server\'s command line after "--" (or --url URL for an HTTP server)');
  const env = pairs('env', options.env);
  return {
    command: program,
    ...(args.length > 0 && { args }),
    ...(env && { env }),
    ...(envFile !== undefined && { envFile }),
  };
}

const DONE: Readonly<Record<'add' | 'remove' | 'enable' | 'disable', string>> = {
  add: 'Added',
  remove: 'Removed',
  enable: 'Enabled',
  disable: 'Disabled',
};

/**
 * Applies `change` to the file's servers, checks the result, and writes it. `change` may throw
 * a `CommandError` (nothing is written) or say the file already is as asked (`unchanged`).
 */
async function edit(
  file: string,
  server: string,
  action: keyof typeof DONE,
  change: (servers: ServersEdit) => void | 'unchanged',
): Promise<number> {
  const text = readFileSync(file, 'utf8');
  let servers: ServersEdit;
  try {
    servers = editServers(text, file);
  } catch (error) {
    throw new CommandError(`${file}: cannot be read as a config file: ${(error as Error).message}`);
  }
  if (change(servers) === 'unchanged') {
    await print(`Server "${server}" is already ${action}d in ${file}; nothing was changed.\n`);
    return 0;
  }
  const next = servers.text();
  const { managed } = await loadManaged(undefined);
  const introduced = await problemsIntroduced(text, next, file, managed);
  if (introduced.length > 0)
    throw new CommandError(
      `${file} was not changed: with this edit it would not be valid:\n${introduced
        .map((issue) => `  ${issue.path === '' ? '' : `${issue.path}: `}${issue.message}`)
        .join('\n')}`,
    );
  if (action === 'add' || action === 'enable') {
    const blocked = await blockedByManaged(next, file, server, managed);
    if (blocked !== undefined)
      throw new CommandError(
        `${file} was not changed: the managed settings block server "${server}": ${blocked}`,
      );
  }
  const { backup } = writeAtomically(file, next);
  await print(
    `${DONE[action]} server "${server}" in ${file} (the previous file is kept as ${path.basename(backup ?? '')}).\n` +
      'A gateway serving this config applies the change when it reloads it; mcp-warden tools shows the result.\n',
  );
  return 0;
}

/** Loads config text as serving would; its problems, or none. */
async function problemsOf(
  text: string,
  file: string,
  managed: ManagedSettings | undefined,
): Promise<{ issues: readonly ConfigIssue[]; config?: WardenConfig }> {
  const { parseConfigText } = await import('../config/load.js');
  try {
    const { config } = parseConfigText(text, { file, env: process.env, ...(managed && { managed }) });
    return { issues: [], config };
  } catch (error) {
    if (error instanceof ConfigError) return { issues: error.issues };
    throw error;
  }
}

/**
 * The problems the edited text has that the file did not have before (by key and message: lines
 * move): an edit is refused for what it breaks, not for what was broken already.
 */
async function problemsIntroduced(
  before: string,
  after: string,
  file: string,
  managed: ManagedSettings | undefined,
): Promise<readonly ConfigIssue[]> {
  const [old, next] = await Promise.all([
    problemsOf(before, file, managed),
    problemsOf(after, file, managed),
  ]);
  const known = new Set(old.issues.map((issue) => `${issue.path}\n${issue.message}`));
  return next.issues.filter((issue) => !known.has(`${issue.path}\n${issue.message}`));
}

/** Why the managed settings would not let `server` start under the edited text, if they would not. */
async function blockedByManaged(
  text: string,
  file: string,
  server: string,
  managed: ManagedSettings | undefined,
): Promise<string | undefined> {
  if (managed === undefined) return undefined;
  const { config } = await problemsOf(text, file, managed);
  const entry = config?.servers.find((s) => s.name === server);
  if (entry === undefined) return undefined;
  const { blockReason } = await import('../core/upstreams/managedServers.js');
  return blockReason(entry, managed, process.env);
}

// ---------------------------------------------------------------------------------------------
// server list

/** One server as `server list` shows it. */
export interface ServerRow {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
  readonly command?: string;
  readonly args?: readonly string[];
  readonly url?: string;
  readonly enabled: boolean;
  /** Why it would not start: the managed settings block it, or its entry has problems. */
  readonly problem?: string;
  /** Start-up settings written in its entry, as written (`start`, `idleTimeout`, `startupTimeout`). */
  readonly settings: Readonly<Record<string, unknown>>;
  /** What the audit log and the pins file last recorded: not live. */
  readonly lastKnown: LastKnown;
  /** Its state in each gateway serving this config now, by the gateway's pid. */
  readonly live: readonly (LiveServer & { readonly gateway: number })[];
}

export interface LastKnown {
  /** Tools it listed when it last started (audit log), when recorded. */
  readonly tools?: number;
  readonly startedAt?: string;
  /** Its last failure, when that came after its last start (audit log). */
  readonly error?: string;
  readonly errorAt?: string;
  /** Tools held in the pins file for it. */
  readonly pinned?: number;
}

/** The entry keys of start-up behaviour `list` shows when they are written. */
const STARTUP_KEYS = ['start', 'idleTimeout', 'startupTimeout'];

async function list(file: string, json: boolean): Promise<number> {
  const { config, warnings } = await loadConfigFile(file, { badServers: 'mark-failed' });
  process.stderr.write(warningLines(warnings));
  const raw = editServers(readFileSync(file, 'utf8'), file);
  const audit =
    config.audit?.file === undefined ? new Map<string, LastKnown>() : lastEvents(config.audit.file);
  const pinned = await pinCounts(config);
  const { readLiveStates } = await import('../gateway/liveState.js');
  const gateways = readLiveStates(config.file);
  const rows = config.servers.map((server): ServerRow => {
    const entry = raw.entry(server.name) ?? {};
    const settings = Object.fromEntries(
      STARTUP_KEYS.filter((k) => entry[k] !== undefined).map((k) => [k, entry[k]]),
    );
    const count = pinned.get(server.name);
    return {
      name: server.name,
      transport: server.transport,
      ...target(server),
      enabled: !server.disabled,
      ...(problemOf(server) !== undefined && { problem: problemOf(server)! }),
      settings,
      lastKnown: { ...audit.get(server.name), ...(count !== undefined && { pinned: count }) },
      live: gateways.running.flatMap((g) =>
        g.servers.filter((s) => s.name === server.name).map((s) => ({ ...s, gateway: g.pid })),
      ),
    };
  });
  const gatewayFacts = {
    gateways: gateways.running.map(({ pid, startedAt, updatedAt }) => ({ pid, startedAt, updatedAt })),
    stale: gateways.stale.map(({ pid, updatedAt }) => ({ pid, updatedAt })),
  };
  await print(
    json
      ? `${JSON.stringify({ file, servers: rows, ...gatewayFacts }, null, 2)}\n`
      : formatRows(rows, config, gateways),
  );
  return 0;
}

/** A server's state in one gateway, as a line: `gateway 812: running since 09:01:02 (5 min), pid 830, 12 tools`. */
function liveLine(server: ServerRow['live'][number], now: number): string {
  const since = new Date(server.since);
  const parts = [
    `gateway ${server.gateway}: ${server.state} since ${since.toLocaleTimeString('en-GB')} (${describeAge(now - since.getTime())})`,
    ...(server.pid === undefined ? [] : [`pid ${server.pid}`]),
    ...(server.processes === undefined ? [] : [plural(server.processes, 'process', 'processes')]),
    plural(server.tools, 'tool'),
    ...(server.lazy ? ['lazy'] : []),
    ...(server.idleTimeoutMs === undefined
      ? []
      : [`idle stop after ${formatDuration(server.idleTimeoutMs)}`]),
  ];
  const error = server.lastError === undefined ? '' : `; last error: ${server.lastError}`;
  return `    ${parts.join(', ')}${error}`;
}

/** What the live lines come from, or why there are none. */
function liveFooter(gateways: ReturnType<typeof readLiveStates>): string {
  if (gateways.running.length > 0) {
    const pids = gateways.running.map((g) => g.pid).join(', ');
    return ` Live state from the ${gateways.running.length === 1 ? 'gateway' : 'gateways'} serving it now (pid ${pids}).`;
  }
  const stale = gateways.stale.map((g) => g.pid);
  return stale.length === 0
    ? ' No gateway running for this config; showing the config only.'
    : ` No gateway running for this config; showing the config only (the live state left by pid ${stale.join(', ')} is stale: that gateway is gone).`;
}

function target(server: ServerConfig): Pick<ServerRow, 'command' | 'args' | 'url'> {
  return server.transport === 'stdio' ? { command: server.command, args: server.args } : { url: server.url };
}

function problemOf(server: ServerConfig): string | undefined {
  if (server.blockedByManaged !== undefined) return `blocked by managed settings: ${server.blockedByManaged}`;
  if (server.failedAtLoad !== undefined) return `its entry has problems: ${server.failedAtLoad}`;
  return undefined;
}

function formatRows(
  rows: readonly ServerRow[],
  config: WardenConfig,
  gateways: ReturnType<typeof readLiveStates>,
): string {
  const now = Date.now();
  const lines: string[] = [];
  for (const row of rows) {
    const what =
      row.transport === 'stdio' ? [row.command ?? '', ...(row.args ?? [])].join(' ') : (row.url ?? '');
    const state = row.problem !== undefined ? 'not startable' : row.enabled ? 'enabled' : 'disabled';
    lines.push(`${row.name}: ${row.transport}, ${state}: ${what}`);
    if (row.problem !== undefined) lines.push(`    ${row.problem}`);
    const settings = Object.entries(row.settings).map(([k, v]) => `${k}: ${String(v)}`);
    if (settings.length > 0) lines.push(`    ${settings.join(', ')}`);
    for (const live of row.live) lines.push(liveLine(live, now));
    const known = row.lastKnown;
    if (known.tools !== undefined)
      lines.push(`    last known: ${plural(known.tools, 'tool')} when it started at ${known.startedAt}`);
    if (known.pinned !== undefined) lines.push(`    last known: ${plural(known.pinned, 'tool')} pinned`);
    if (known.error !== undefined) lines.push(`    last known error (${known.errorAt}): ${known.error}`);
  }
  const sources = [config.audit?.file && 'the audit log', config.pins && 'the pins file'].filter(Boolean);
  lines.push(
    '',
    `${plural(rows.length, 'server')} in ${config.file}.` +
      (sources.length === 0
        ? ' No audit log or pins file is configured, so nothing is known of their tools or errors; mcp-warden tools starts them and shows both.'
        : ` "Last known" is what ${sources.join(' and ')} recorded, not their state now.`) +
      liveFooter(gateways),
  );
  return `${lines.join('\n')}\n`;
}

/** How much of the end of the audit log is read for each server's last start and failure. */
const AUDIT_TAIL_BYTES = 4 * 1024 * 1024;

/** Each server's last start and, when later, its last failure, from the end of the audit log. */
function lastEvents(file: string): Map<string, LastKnown> {
  const known = new Map<string, LastKnown>();
  let text: string;
  try {
    const size = statSync(file).size;
    const length = Math.min(size, AUDIT_TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, buffer, 0, length, size - length);
    } finally {
      closeSync(fd);
    }
    text = buffer.toString('utf8');
  } catch {
    return known; // no log yet: nothing is known
  }
  for (const line of text.split('\n')) {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // the first line may be cut, the last one half written
    }
    const server = record['server'];
    const at = typeof record['ts'] === 'string' ? record['ts'] : undefined;
    if (typeof server !== 'string' || at === undefined) continue;
    const type = record['type'];
    if (type === 'upstream_start')
      known.set(server, {
        ...(typeof record['tools'] === 'number' && { tools: record['tools'] }),
        startedAt: at,
      });
    else if (
      (type === 'upstream_failed' || (type === 'upstream_exit' && record['expected'] === false)) &&
      typeof record['error'] === 'string'
    )
      known.set(server, { ...known.get(server), error: record['error'], errorAt: at });
  }
  return known;
}

/** Tools pinned per server, when the config has a readable pins file. */
async function pinCounts(config: WardenConfig): Promise<Map<string, number>> {
  if (config.pins === undefined) return new Map();
  const { readPinFile } = await import('../features/pins/pinFile.js');
  try {
    const { pins } = readPinFile(config.pins.file);
    return new Map([...pins].map(([server, tools]) => [server, tools.size]));
  } catch {
    return new Map(); // an unreadable pins file is check's to report
  }
}
