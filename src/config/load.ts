/**
 * Reads the config file and turns it into a validated, normalized, frozen `WardenConfig`.
 *
 * Stages: YAML parse (syntax errors stop here, since nothing after can be trusted) → env
 * interpolation → JSON Schema check → normalization with the checks the schema cannot express
 * (durations, regexes, name clashes, ...). Every stage after parsing keeps going past problems so
 * the user sees all of them at once, each located in the file.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  isAlias,
  isCollection,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  type Document,
  type YAMLError,
} from 'yaml';
import { ConfigError, type ConfigIssue } from '../errors.js';
import { DEFAULTS } from './defaults.js';
import { DURATION_FORMS, formatDuration, parseDuration } from './duration.js';
import { deepFreeze } from './freeze.js';
import { interpolate, type Env, type KeyPath } from './interpolate.js';
import { checkDocumentShape, describeValue } from './schema.js';
import type {
  GatewayConfig,
  HttpServerConfig,
  LogConfig,
  RepairConfig,
  ServerConfig,
  StdioServerConfig,
  ToolFilter,
  WardenConfig,
} from './types.js';

export type { Env } from './interpolate.js';

export interface LoadOptions {
  /** Where `${VAR}` references are looked up; usually `process.env`. */
  readonly env: Env;
}

export interface ParseOptions extends LoadOptions {
  /** Path of the file the text came from: used in messages and to resolve relative paths. */
  readonly file: string;
}

/** Reads and parses the config file. Throws `ConfigError` listing every problem found. */
export async function loadConfig(file: string, options: LoadOptions): Promise<WardenConfig> {
  const absolute = path.resolve(file);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError([
      {
        file: absolute,
        line: 0,
        column: 0,
        path: '',
        message: `cannot read config file: ${osReason(error)}`,
      },
    ]);
  }
  return parseConfigText(text, { file: absolute, env: options.env });
}

/** Parses config text (YAML or JSON). Pure apart from reading `options.env`; no file access. */
export function parseConfigText(text: string, options: ParseOptions): WardenConfig {
  const file = path.resolve(options.file);
  const lineCounter = new LineCounter();
  // logLevel 'error': below 'warn' the library prints nothing (stdout carries JSON-RPC) and we
  // report its findings ourselves; 'silent' would also drop the error for a second `---` document.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, logLevel: 'error' });
  const locator = new Locator(doc, lineCounter);
  const issues = new IssueList(file, locator);

  // Warnings are fatal too: e.g. an unknown tag such as `!env X` silently becomes the string "X".
  for (const problem of [...doc.errors, ...doc.warnings]) issues.addYamlProblem(problem, locator);
  issues.throwIfAny();

  if (doc.contents === null) {
    issues.add([], 'value', 'config file is empty; it needs at least a "servers" (or "mcpServers") section');
  } else if (!isMap(doc.contents)) {
    const got = isSeq(doc.contents)
      ? 'a list'
      : describeValue(isScalar(doc.contents) ? doc.contents.value : {});
    issues.add(
      [],
      'value',
      `expected a mapping at the top level (with a "servers" or "mcpServers" key), got ${got}`,
    );
  }
  issues.throwIfAny();

  let parsed: unknown;
  try {
    parsed = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Only the alias-expansion guard throws here (a "billion laughs" document).
    issues.add([], 'value', `invalid YAML: ${error instanceof Error ? error.message : String(error)}`);
    issues.throwIfAny();
  }

  const expanded = interpolate(parsed, options.env);
  for (const problem of expanded.problems) issues.addUnexpanded(problem.path, problem.message);
  for (const problem of checkDocumentShape(expanded.value)) {
    issues.add(problem.path, problem.at, problem.message);
  }

  const config = normalize(asRecord(expanded.value) ?? {}, {
    file,
    dir: path.dirname(file),
    issues,
    locator,
  });
  issues.throwIfAny();
  return deepFreeze(config);
}

/**
 * `servers.fs.args[0]`. Keys that would read ambiguously in dotted form (containing `.`, brackets,
 * quotes or spaces, or empty) are written as `["key"]`.
 */
export function formatKeyPath(keyPath: KeyPath): string {
  let out = '';
  for (const segment of keyPath) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[^.[\]"\s]+$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Positions

interface Position {
  readonly line: number;
  readonly column: number;
}

/** Maps key paths of the parsed data back to places in the YAML text. */
class Locator {
  constructor(
    private readonly doc: Document,
    private readonly lines: LineCounter,
  ) {}

  /**
   * Where `keyPath` is written. `value` points at a scalar or flow value; for a block mapping or
   * list (which starts on a later line) and for an empty value, the key is the clearer place.
   * A path that does not (fully) exist in the text — e.g. a key added by an alias — falls back
   * to the deepest part that does.
   */
  position(keyPath: KeyPath, at: 'key' | 'value'): Position {
    let node: unknown = this.doc.contents;
    let key: unknown;
    let complete = true;
    for (const segment of keyPath) {
      const current = this.resolve(node);
      if (isMap(current)) {
        const pair = current.items.find((item) => keyText(item.key) === String(segment));
        if (pair === undefined) {
          complete = false;
          break;
        }
        key = pair.key;
        node = pair.value;
      } else if (isSeq(current) && typeof segment === 'number' && current.items[segment] !== undefined) {
        key = undefined;
        node = current.items[segment];
      } else {
        complete = false;
        break;
      }
    }
    const pointsWell =
      (isScalar(node) && node.range != null && node.range[0] < node.range[1]) ||
      (isCollection(node) && node.flow === true) ||
      isAlias(node);
    if (complete && (at === 'value' || key === undefined) && pointsWell) return this.at(node);
    if (key !== undefined) return this.at(key);
    return this.at(node);
  }

  /** Keys of the mapping at `keyPath` in file order: JS objects put integer-like keys first. */
  orderedKeys(keyPath: KeyPath, data: Readonly<Record<string, unknown>>): string[] {
    let node: unknown = this.doc.contents;
    for (const segment of keyPath) {
      const current = this.resolve(node);
      node = isMap(current)
        ? current.items.find((item) => keyText(item.key) === String(segment))?.value
        : undefined;
    }
    const map = this.resolve(node);
    const order = new Map<string, number>();
    if (isMap(map)) map.items.forEach((item, index) => order.set(keyText(item.key) ?? '', index));
    return Object.keys(data).sort((a, b) => (order.get(a) ?? Infinity) - (order.get(b) ?? Infinity));
  }

  /** The key path of the mapping key that starts at `offset`, if any (for duplicate keys). */
  keyPathAt(offset: number): KeyPath | undefined {
    const search = (node: unknown, prefix: KeyPath): KeyPath | undefined => {
      if (isMap(node)) {
        for (const item of node.items) {
          const text = keyText(item.key);
          if (text === undefined) continue;
          if (isScalar(item.key) && item.key.range?.[0] === offset) return [...prefix, text];
          const found = search(item.value, [...prefix, text]);
          if (found !== undefined) return found;
        }
      } else if (isSeq(node)) {
        for (const [index, item] of node.items.entries()) {
          const found = search(item, [...prefix, index]);
          if (found !== undefined) return found;
        }
      }
      return undefined;
    };
    return search(this.doc.contents, []);
  }

  lineCol(offset: number): Position {
    const { line, col } = this.lines.linePos(offset);
    return { line, column: col };
  }

  private at(node: unknown): Position {
    const range = (node as { range?: readonly number[] } | null | undefined)?.range;
    return this.lineCol(range?.[0] ?? 0);
  }

  private resolve(node: unknown): unknown {
    return isAlias(node) ? node.resolve(this.doc) : node;
  }
}

/** The key as `toJS` spells it, for scalar keys (the only ones a valid config has). */
function keyText(key: unknown): string | undefined {
  return isScalar(key) ? String(key.value) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Issues

class IssueList {
  private readonly issues: ConfigIssue[] = [];
  private readonly unexpanded = new Set<string>();

  constructor(
    private readonly file: string,
    private readonly locator: Locator,
  ) {}

  add(keyPath: KeyPath, at: 'key' | 'value', message: string): void {
    const dotted = formatKeyPath(keyPath);
    // A value whose ${VAR} could not be expanded has already been reported; judging the
    // half-expanded text (as a duration, URL, ...) would only add a confusing second message.
    if (this.unexpanded.has(dotted)) return;
    this.push(dotted, this.locator.position(keyPath, at), message);
  }

  addUnexpanded(keyPath: KeyPath, message: string): void {
    this.add(keyPath, 'value', message);
    this.unexpanded.add(formatKeyPath(keyPath));
  }

  addYamlProblem(problem: YAMLError, locator: Locator): void {
    const offset = problem.pos[0];
    if (problem.code === 'DUPLICATE_KEY') {
      const keyPath = locator.keyPathAt(offset);
      if (keyPath !== undefined) {
        this.push(
          formatKeyPath(keyPath),
          locator.lineCol(offset),
          `duplicate key "${String(keyPath.at(-1))}"`,
        );
        return;
      }
    }
    // The library's own wording for this one addresses programmers ("use parseAllDocuments()").
    const message =
      problem.code === 'MULTIPLE_DOCS'
        ? 'the file holds more than one YAML document (a second "---"); a config file must hold exactly one'
        : problem.message;
    this.push('', locator.lineCol(offset), `invalid YAML: ${message}`);
  }

  throwIfAny(): void {
    if (this.issues.length === 0) return;
    // File order reads best; Array.prototype.sort is stable, so same-place issues keep their order.
    const sorted = [...this.issues].sort((a, b) => a.line - b.line || a.column - b.column);
    throw new ConfigError(sorted);
  }

  private push(dotted: string, position: Position, message: string): void {
    const duplicate = this.issues.some((issue) => issue.path === dotted && issue.message === message);
    if (!duplicate) this.issues.push({ file: this.file, ...position, path: dotted, message });
  }
}

/** `ENOENT: no such file or directory` without the `, open '/path'` tail: the path is shown already. */
function osReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { syscall } = error as NodeJS.ErrnoException;
  return syscall === undefined
    ? error.message
    : error.message.replace(new RegExp(`, ${syscall}( '.*')?$`), '');
}

// ---------------------------------------------------------------------------------------------
// Normalization

interface Context {
  readonly file: string;
  readonly dir: string;
  readonly issues: IssueList;
  readonly locator: Locator;
}

type Data = Readonly<Record<string, unknown>>;

/**
 * Builds the output from data that may still have schema problems: wrongly typed values were
 * already reported, so here they just fall back to defaults (the result is then discarded).
 */
function normalize(data: Data, ctx: Context): WardenConfig {
  const inherited = normalizeGateway(data, ctx);
  return { file: ctx.file, gateway: inherited.gateway, servers: normalizeServers(data, ctx, inherited) };
}

/** The gateway section, and what servers need to know about it beyond its values. */
interface Inherited {
  readonly gateway: GatewayConfig;
  /**
   * False when `gateway.maxTimeout` is written but invalid (already reported): timeouts are then
   * not compared with the default that stands in for it, which would only add a misleading message.
   */
  readonly maxTimeoutValid: boolean;
  /**
   * `gateway.timeout` as written, else its default, before it is cut to `gateway.maxTimeout`:
   * a server with a limit of its own cuts this to that limit instead.
   */
  readonly idleMs: number;
}

function normalizeGateway(data: Data, ctx: Context): Inherited {
  const defaults = DEFAULTS.gateway;
  const gateway = asRecord(data['gateway']) ?? {};
  const naming = asRecord(gateway['naming']) ?? {};
  const restart = asRecord(gateway['restart']) ?? {};
  const log = asRecord(gateway['log']) ?? {};
  const at = (...keys: string[]): KeyPath => ['gateway', ...keys];

  const pattern = nonEmptyString(naming['pattern']) ?? defaults.naming.pattern;
  try {
    new RegExp(pattern);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^Invalid regular expression: /, '') : '';
    ctx.issues.add(at('naming', 'pattern'), 'value', `not a valid JavaScript regular expression: ${reason}`);
  }

  const level = log['level'];
  const logFile = nonEmptyString(log['file']);
  const logConfig: LogConfig = {
    level:
      level === 'error' || level === 'warn' || level === 'info' || level === 'debug'
        ? level
        : defaults.log.level,
    ...(logFile === undefined ? {} : { file: path.resolve(ctx.dir, logFile) }),
  };

  // An idle timeout longer than the hard limit could never fire: one written so is an error, and
  // the default (when `timeout` is not written) is cut to the limit, so idle <= max always holds.
  const maxTimeout = duration(ctx, at('maxTimeout'), gateway['maxTimeout']);
  const maxTimeoutValid = gateway['maxTimeout'] === undefined || maxTimeout !== undefined;
  const maxCallTimeoutMs = maxTimeout ?? defaults.maxCallTimeoutMs;
  const timeout = duration(ctx, at('timeout'), gateway['timeout']);
  if (maxTimeoutValid) checkWithinLimit(ctx, at('timeout'), gateway['timeout'], timeout, maxCallTimeoutMs);
  const idleMs = timeout ?? defaults.callTimeoutMs;

  const config: GatewayConfig = {
    naming: {
      separator: nonEmptyString(naming['separator']) ?? defaults.naming.separator,
      pattern,
      maxLength: integer(naming['maxLength']) ?? defaults.naming.maxLength,
    },
    startupTimeoutMs:
      duration(ctx, at('startupTimeout'), gateway['startupTimeout']) ?? defaults.startupTimeoutMs,
    connectTimeoutMs:
      duration(ctx, at('connectTimeout'), gateway['connectTimeout']) ?? defaults.connectTimeoutMs,
    callTimeoutMs: Math.min(idleMs, maxCallTimeoutMs),
    maxCallTimeoutMs,
    repair: { ...defaults.repair, ...repairOverrides(gateway['repair']) },
    restart: {
      initialDelayMs:
        duration(ctx, at('restart', 'initialDelay'), restart['initialDelay']) ??
        defaults.restart.initialDelayMs,
      maxDelayMs:
        duration(ctx, at('restart', 'maxDelay'), restart['maxDelay']) ?? defaults.restart.maxDelayMs,
      maxRestarts: integer(restart['maxRestarts']) ?? defaults.restart.maxRestarts,
      windowMs: duration(ctx, at('restart', 'window'), restart['window']) ?? defaults.restart.windowMs,
    },
    log: logConfig,
    maxMessageBytes:
      byteSize(ctx, at('maxMessageSize'), gateway['maxMessageSize']) ?? defaults.maxMessageBytes,
  };
  return { gateway: config, maxTimeoutValid, idleMs };
}

const SECTIONS = ['servers', 'mcpServers'] as const;

function normalizeServers(data: Data, ctx: Context, inherited: Inherited): ServerConfig[] {
  const servers: ServerConfig[] = [];
  const declaredAt = new Map<string, number>();
  let malformedSection = false;
  for (const section of SECTIONS) {
    if (data[section] === undefined) continue;
    const entries = asRecord(data[section]);
    if (entries === undefined) {
      malformedSection = true; // the schema has reported it
      continue;
    }
    for (const name of ctx.locator.orderedKeys([section], entries)) {
      const line = ctx.locator.position([section, name], 'key').line;
      const earlier = declaredAt.get(name);
      if (earlier !== undefined) {
        ctx.issues.add(
          [section, name],
          'key',
          `server "${name}" is already defined under "servers" (line ${earlier}); server names must be unique`,
        );
        continue;
      }
      declaredAt.set(name, line);
      const server = normalizeServer(ctx, inherited, section, name, entries[name], line);
      if (server !== undefined) servers.push(server);
    }
  }
  if (declaredAt.size === 0 && !malformedSection) {
    ctx.issues.add([], 'value', 'no servers configured: add at least one under "servers" (or "mcpServers")');
  }
  return servers;
}

function normalizeServer(
  ctx: Context,
  inherited: Inherited,
  section: (typeof SECTIONS)[number],
  name: string,
  value: unknown,
  line: number,
): ServerConfig | undefined {
  const entry = asRecord(value);
  if (entry === undefined) return undefined;
  const at = (...keys: string[]): KeyPath => [section, name, ...keys];
  const hasCommand = entry['command'] !== undefined;
  const hasUrl = entry['url'] !== undefined;
  // Neither or both: the schema's oneOf has said so, naming the server.
  if (hasCommand === hasUrl) return undefined;
  const transport = hasCommand ? 'stdio' : 'http';

  const declared = entry['type'];
  const declaredTransport =
    declared === 'stdio'
      ? 'stdio'
      : declared === 'http' || declared === 'streamable-http'
        ? 'http'
        : undefined;
  if (declaredTransport !== undefined && declaredTransport !== transport) {
    ctx.issues.add(
      at('type'),
      'value',
      transport === 'stdio'
        ? `type "${String(declared)}" does not match "command": a server with "command" is a stdio server`
        : `type "stdio" does not match "url": a server with "url" is an HTTP server`,
    );
  }
  // Silently ignoring e.g. `args` on an HTTP server would hide a mistake in the entry.
  const foreign = transport === 'stdio' ? ['headers'] : ['args', 'env', 'cwd'];
  for (const key of foreign.filter((k) => entry[k] !== undefined)) {
    ctx.issues.add(
      at(key),
      'key',
      transport === 'stdio'
        ? `"${key}" applies only to HTTP servers (with "url"), and this one has "command"`
        : `"${key}" applies only to stdio servers (with "command"), and this one has "url"`,
    );
  }

  const defaults = DEFAULTS.server;
  const { gateway } = inherited;
  // The limit this server's calls run under: its own `maxTimeout`, else the gateway's. Undefined
  // when the one that applies is invalid (already reported), so nothing is compared with it.
  const maxTimeoutMs = duration(ctx, at('maxTimeout'), entry['maxTimeout']);
  const limitMs =
    entry['maxTimeout'] !== undefined
      ? maxTimeoutMs
      : inherited.maxTimeoutValid
        ? gateway.maxCallTimeoutMs
        : undefined;
  const tools = asRecord(entry['tools']) ?? {};
  const timeouts = asRecord(tools['timeouts']) ?? {};
  const toolFilter: ToolFilter = {
    include: strings(tools['include']),
    exclude: strings(tools['exclude']),
    timeouts: ctx.locator.orderedKeys(at('tools', 'timeouts'), timeouts).map((glob) => {
      const keyPath = at('tools', 'timeouts', glob);
      const timeoutMs = duration(ctx, keyPath, timeouts[glob]);
      checkWithinLimit(ctx, keyPath, timeouts[glob], timeoutMs, limitMs);
      return { glob, timeoutMs: timeoutMs ?? 0 };
    }),
  };
  const written = duration(ctx, at('timeout'), entry['timeout']);
  checkWithinLimit(ctx, at('timeout'), entry['timeout'], written, limitMs);
  // Not written here: the gateway's idle timeout applies, cut to this server's limit. Only when
  // that differs from the gateway's own value (this server has a limit of its own) is it stated.
  const idleMs = limitMs === undefined ? inherited.idleMs : Math.min(inherited.idleMs, limitMs);
  const timeoutMs = written ?? (idleMs === gateway.callTimeoutMs ? undefined : idleMs);
  const namespace = entry['namespace'];
  const common = {
    name,
    namespace: namespace === false ? null : typeof namespace === 'string' ? namespace : name,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(maxTimeoutMs === undefined ? {} : { maxTimeoutMs }),
    repair: { ...gateway.repair, ...repairOverrides(entry['repair']) },
    maxConcurrency: integer(entry['maxConcurrency']) ?? defaults.maxConcurrency,
    maxQueue: integer(entry['maxQueue']) ?? defaults.maxQueue,
    tools: toolFilter,
    disabled: typeof entry['disabled'] === 'boolean' ? entry['disabled'] : defaults.disabled,
    trusted: typeof entry['trusted'] === 'boolean' ? entry['trusted'] : defaults.trusted,
    source: { file: ctx.file, line },
  };

  if (transport === 'stdio') {
    const cwd = nonEmptyString(entry['cwd']);
    const stdio: StdioServerConfig = {
      ...common,
      transport,
      command: typeof entry['command'] === 'string' ? entry['command'] : '',
      args: strings(entry['args']),
      env: stringMap(entry['env']),
      cwd: cwd === undefined ? ctx.dir : path.resolve(ctx.dir, cwd),
    };
    return stdio;
  }

  const url = entry['url'];
  // The schema checked the scheme; this catches the rest (no host, bad port, stray spaces...).
  // The URL is not echoed: it may carry a token from the environment.
  if (typeof url === 'string' && /^https?:\/\//i.test(url) && !URL.canParse(url)) {
    ctx.issues.add(at('url'), 'value', 'not a valid URL');
  }
  const http: HttpServerConfig = {
    ...common,
    transport,
    url: typeof url === 'string' ? url : '',
    headers: stringMap(entry['headers']),
  };
  return http;
}

/** A duration in ms, or undefined when absent; a bad one is reported and also gives undefined. */
function duration(ctx: Context, keyPath: KeyPath, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') {
    ctx.issues.add(keyPath, 'value', `expected a duration (${DURATION_FORMS}), got ${describeValue(value)}`);
    return undefined;
  }
  try {
    return parseDuration(value);
  } catch (error) {
    ctx.issues.add(keyPath, 'value', error instanceof Error ? error.message : String(error));
    return undefined;
  }
}

/**
 * Reports an idle timeout (written at `keyPath` as `value`, `ms` once parsed) that is longer than
 * the hard limit over it: the limit would always end the call first.
 */
function checkWithinLimit(
  ctx: Context,
  keyPath: KeyPath,
  value: unknown,
  ms: number | undefined,
  limitMs: number | undefined,
): void {
  if (ms === undefined || limitMs === undefined || ms <= limitMs) return;
  // As written when it is a string (the position points at it); a bare number of ms reads better in units.
  const shown = typeof value === 'string' ? value : formatDuration(ms);
  ctx.issues.add(keyPath, 'value', `${shown} is longer than maxTimeout (${formatDuration(limitMs)})`);
}

/**
 * The keys of a `repair:` section (gateway's or a server's) that are set, to be spread over the
 * settings they override. Wrongly typed values were reported by the schema and are left out.
 */
function repairOverrides(value: unknown): Partial<RepairConfig> {
  const { textForStructured, invalidStructured, structuredFromText, missingStructured } =
    asRecord(value) ?? {};
  return {
    ...(typeof textForStructured === 'boolean' ? { textForStructured } : {}),
    ...(invalidStructured === 'error' || invalidStructured === 'strip' || invalidStructured === 'off'
      ? { invalidStructured }
      : {}),
    ...(typeof structuredFromText === 'boolean' ? { structuredFromText } : {}),
    ...(missingStructured === 'error' || missingStructured === 'off' ? { missingStructured } : {}),
  };
}

const SIZE_UNITS = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 } as const;
const SIZE_FORMS = 'an integer number of bytes or a string like "512KiB", "32MiB" or "1GiB"';
const MIN_MESSAGE_BYTES = 1024;
const MAX_MESSAGE_BYTES = 1024 ** 3;

/**
 * A message size limit in bytes (`gateway.maxMessageSize`). Units are 1024-based and spelled
 * KiB/MiB/GiB so there is no doubt which; `32MB` is rejected with the accepted forms.
 */
function byteSize(ctx: Context, keyPath: KeyPath, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') {
    ctx.issues.add(keyPath, 'value', `expected a size (${SIZE_FORMS}), got ${describeValue(value)}`);
    return undefined;
  }
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  let bytes: number | undefined;
  if (typeof value === 'number') {
    bytes = Number.isInteger(value) ? value : undefined;
  } else {
    const match = /^(\d+)(?:\.(\d+))?(B|KiB|MiB|GiB)$/.exec(value);
    if (match !== null) {
      const [, whole = '', fraction = '', unit] = match;
      const scaled = Number(whole + fraction) * SIZE_UNITS[unit as keyof typeof SIZE_UNITS];
      bytes = Math.floor(scaled / 10 ** fraction.length);
    }
  }
  if (bytes === undefined) {
    ctx.issues.add(keyPath, 'value', `invalid size ${shown}: expected ${SIZE_FORMS}`);
    return undefined;
  }
  if (bytes < MIN_MESSAGE_BYTES || bytes > MAX_MESSAGE_BYTES) {
    const range = `from 1KiB (${MIN_MESSAGE_BYTES} bytes) to 1GiB (${MAX_MESSAGE_BYTES} bytes)`;
    ctx.issues.add(keyPath, 'value', `invalid size ${shown}: must be ${range}`);
    return undefined;
  }
  return bytes;
}

/** env / headers; non-string values were reported by the schema and are dropped. */
function stringMap(value: unknown): Readonly<Record<string, string>> {
  const map = asRecord(value) ?? {};
  // fromEntries defines own properties, so a `__proto__` header stays an ordinary entry.
  return Object.fromEntries(
    Object.entries(map).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

function asRecord(value: unknown): Data | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Data) : undefined;
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}
